"""Loaders built by a helper in another module of the project (``from data import
make_train_loader``), read through the project index.

The helper's ``return`` forms (``project.function_body``) are followed to a
``DataLoader(...)`` call: returned directly, through a local name bound once, or as an
element of a returned tuple the caller unpacks. Its arguments are read from literals and
from a ``**kwargs`` dict built in the helper. A dict that the helper changes in place is
read from the helper's own lines: only ``kwargs.update({...})``, ``kwargs.update(k=v)`` and
``kwargs["k"] = v`` with literal keys are understood (anything else that touches it makes
every argument it may carry unknown), and a literal ``True`` written under an ``if`` counts
only when that ``if`` tests for the accelerator (``if device.type == "cuda":``): RULES.md's
"pins on the accelerator path". Unknown is "not pinned", so TPF104 stays silent on it.
"""

from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Tuple

from ...analysis.calls import MISSING, Argument
from ...analysis.values import UNKNOWN
from ...project import Definition, FunctionBody, ProjectIndex
from ...project.bodies import locate
from ...project.forms import Call, Dict as DictForm, Form, Lit, Ref, Seq
from .loader_args import COLLATE_FN_POSITION, DATALOADER, NUM_WORKERS_POSITION, PIN_MEMORY_POSITION, LoaderArgs

_READ = {
    "dataset": 0,
    "num_workers": NUM_WORKERS_POSITION,
    "pin_memory": PIN_MEMORY_POSITION,
    "persistent_workers": None,
    "collate_fn": COLLATE_FN_POSITION,
}
_ACCELERATOR_WORDS = ("cuda", "gpu", "accelerator", "mps", "xpu")
_MAX_DEPTH = 3


def helper_loaders(index: ProjectIndex, path: str, callee: str, element: Optional[int] = None) -> Optional[List[LoaderArgs]]:
    """The arguments of every DataLoader the project function ``callee`` (a dotted name as
    module ``path`` sees it) may return (element ``element`` of a returned tuple); None when
    some return is not known to be a DataLoader."""
    found = index.resolve(path, callee)
    if found is None or found.kind != "function" or found.function is None:
        return None
    if found.function.decorators or found.function.is_async:
        return None
    body = index.function_body(found)
    if body is None or body.is_generator or not body.returns:
        return None
    loaders: List[LoaderArgs] = []
    for form in body.returns:
        args = _loader(index, found, body, form, element, 0)
        if args is None:
            return None
        loaders.append(args)
    return loaders


def _loader(index: ProjectIndex, helper: Definition, body: FunctionBody, form: Form, element: Optional[int], depth: int) -> Optional[LoaderArgs]:
    if depth > _MAX_DEPTH:
        return None
    if type(form) is Ref and "." not in form.name:  # type: ignore[union-attr]
        binding = body.binding(form.name)  # type: ignore[union-attr]
        if binding is None or binding.mutated:
            return None
        return _loader(index, helper, body, binding.form, element, depth + 1)
    if element is not None:
        if type(form) is not Seq or form.kind != "tuple" or form.truncated or element >= len(form.items):  # type: ignore[union-attr]
            return None
        return _loader(index, helper, body, form.items[element], None, depth + 1)  # type: ignore[union-attr]
    if type(form) is not Call or form.callee != DATALOADER:  # type: ignore[union-attr]
        return None
    return _loader_args(index, helper, body, form)  # type: ignore[arg-type]


def _loader_args(index: ProjectIndex, helper: Definition, body: FunctionBody, call: Call) -> LoaderArgs:
    spread: Optional[Dict[str, Any]] = {}
    for item in call.dstar:
        known = _kwargs_dict(index, helper, body, item)
        if known is None:
            spread = None
            break
        spread.update(known)  # type: ignore[union-attr]
    values = {}
    for name, position in _READ.items():
        explicit = call.keyword(name)
        if explicit is None and position is not None and position < len(call.args):
            explicit = call.args[position]
        elif explicit is None and position is not None and call.star:
            values[name] = Argument(UNKNOWN)
            continue
        if explicit is not None:
            values[name] = Argument(_literal(explicit))
        elif spread is None:
            values[name] = Argument(UNKNOWN)
        else:
            values[name] = Argument(spread.get(name, MISSING))
    return LoaderArgs(**values)


def _literal(form: Form) -> Any:
    return form.value if type(form) is Lit else UNKNOWN  # type: ignore[union-attr]


def _kwargs_dict(index: ProjectIndex, helper: Definition, body: FunctionBody, form: Form) -> Optional[Dict[str, Any]]:
    """The keys and literal values a ``**`` argument passes (values not literal: UNKNOWN)."""
    if type(form) is DictForm:
        return _dict_items(form)  # type: ignore[arg-type]
    if type(form) is not Ref or "." in form.name:  # type: ignore[union-attr]
        return None
    binding = body.binding(form.name)  # type: ignore[union-attr]
    if binding is None or type(binding.form) is not DictForm:
        return None
    items = _dict_items(binding.form)  # type: ignore[arg-type]
    if items is None:
        return None
    # Read the helper's lines even when the summary saw no change in place: handing the
    # dict to a call (``tune(kwargs)``) may change it too.
    return _with_writes(index, helper, form.name, items)  # type: ignore[union-attr]


def _dict_items(form: DictForm) -> Optional[Dict[str, Any]]:
    if form.truncated:
        return None
    out: Dict[str, Any] = {}
    for key, value in form.items:
        if type(key) is not Lit or not isinstance(key.value, str):  # type: ignore[union-attr]
            return None  # a ``**other`` entry or a computed key
        out[key.value] = _literal(value)  # type: ignore[union-attr]
    return out


def _with_writes(index: ProjectIndex, helper: Definition, name: str, items: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """``items`` after the helper's in-place writes to dict ``name``. A key written only on
    the accelerator path, or written again with another value, gets the value it has on that
    path when every write agrees; otherwise it is UNKNOWN."""
    function = helper.function
    text = index.text(helper.path) if helper.path is not None else None
    node = None if text is None or function is None else locate(text, function.line, function.end_line, function.name, False)
    if node is None:
        return None
    writes = _writes(node, name)
    if writes is None:
        return None
    out = dict(items)
    for key, value, on_accelerator_path in writes:
        if not on_accelerator_path:
            out[key] = UNKNOWN
        elif key not in out or out[key] == value:
            out[key] = value
        else:
            out[key] = UNKNOWN
    return out


def _writes(function: ast.AST, name: str) -> Optional[List[Tuple[str, Any, bool]]]:
    """(key, literal value, on the accelerator path) for each in-place write to ``name``;
    None when ``name`` is used any other way than being written so, or read by ``**``."""
    writes: List[Tuple[str, Any, bool]] = []
    uses = 0
    understood = 0

    def visit(node: ast.AST, guarded: bool, accelerator: bool) -> None:
        nonlocal uses, understood
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not function:
            return
        if type(node) is ast.If:
            on_path = any(word in ast.unparse(node.test).lower() for word in _ACCELERATOR_WORDS)
            visit(node.test, guarded, accelerator)
            for child in node.body:
                visit(child, True, accelerator or on_path)
            for child in node.orelse:
                visit(child, True, accelerator)
            return
        if type(node) in (ast.For, ast.While, ast.With, ast.Try):
            for child in ast.iter_child_nodes(node):
                visit(child, True, accelerator)
            return
        if type(node) is ast.Name and node.id == name:  # type: ignore[attr-defined]
            uses += 1
        found = _write(node, name)
        if found is not None:
            understood += 1
            on_path = accelerator or not guarded
            writes.extend((key, value, on_path) for key, value in found)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, accelerator)

    visit(function, False, False)
    # Every use is the binding, a write understood above, or a ``**name`` argument.
    spreads = sum(1 for n in ast.walk(function) if type(n) is ast.keyword and n.arg is None and type(n.value) is ast.Name and n.value.id == name)
    binds = sum(1 for n in ast.walk(function) if type(n) is ast.Name and n.id == name and type(n.ctx) is ast.Store)
    return writes if uses == understood + spreads + binds else None


def _write(node: ast.AST, name: str) -> Optional[List[Tuple[str, Any]]]:
    """``name.update({...})`` / ``name.update(k=v)`` / ``name["k"] = v`` with literal keys."""
    if type(node) is ast.Expr and type(node.value) is ast.Call:  # type: ignore[attr-defined]
        call = node.value  # type: ignore[attr-defined]
        func = call.func
        if not (type(func) is ast.Attribute and func.attr == "update" and type(func.value) is ast.Name and func.value.id == name):
            return None
        pairs: List[Tuple[str, Any]] = []
        for arg in call.args:
            if type(arg) is not ast.Dict:
                return None
            for key, value in zip(arg.keys, arg.values):
                if type(key) is not ast.Constant or not isinstance(key.value, str):
                    return None
                pairs.append((key.value, _constant(value)))
        for keyword in call.keywords:
            if keyword.arg is None:
                return None
            pairs.append((keyword.arg, _constant(keyword.value)))
        return pairs
    if type(node) is ast.Assign and len(node.targets) == 1:  # type: ignore[attr-defined]
        target = node.targets[0]  # type: ignore[attr-defined]
        if type(target) is ast.Subscript and type(target.value) is ast.Name and target.value.id == name:
            key = target.slice
            if type(key) is ast.Constant and isinstance(key.value, str):
                return [(key.value, _constant(node.value))]  # type: ignore[attr-defined]
    return None


def _constant(node: ast.AST) -> Any:
    return node.value if type(node) is ast.Constant else UNKNOWN  # type: ignore[attr-defined]
