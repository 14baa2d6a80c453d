"""Second-stage pre-screens on Python's ``ast``, for rules whose trigger words are common.

``ast.parse`` is about 13 times cheaper than the LibCST parse, so a file that passed a
rule's text pre-screen is checked here for the rough shape of a finding before LibCST sees
it. Every screen over-approximates what its rule reports: the LibCST visitors stay the
detectors, these only spare them files that cannot hold a finding.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from .device_targets import is_device_name, is_device_string
from .training import (
    BACKWARD_ATTRS,
    FRAMEWORK_HOOKS,
    GRAD_ATTRS,
    MODEL_NAME,
    is_eval_function_name,
    is_optimizer_name,
    needs_grad_name,
)

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Assignment = Union[ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr]
_LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
_ASSIGN_TYPES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


@dataclass(frozen=True)
class TreeIndex:
    """What the screens read of a file, gathered in one walk (several screens look at the
    same tree, and walking it is what costs)."""

    calls: Tuple[ast.Call, ...]
    calls_in_loops: Tuple[ast.Call, ...]  # calls anywhere inside a for/while
    assignments: Tuple[Assignment, ...]
    imports: Tuple[Union[ast.Import, ast.ImportFrom], ...]
    functions: Tuple[Function, ...]
    identifiers: FrozenSet[str]  # names, attributes and imported names (not strings)


# Fields that never hold a name or a call (``ctx`` is Load/Store, ``op`` an operator).
_TOKEN_FIELDS = frozenset({"ctx", "op", "type_comment", "kind"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
_AST = ast.AST


def _child_fields(kind: type) -> Tuple[str, ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        names: Tuple[str, ...] = getattr(kind, "_fields", ())
        fields = _CHILD_FIELDS[kind] = tuple(f for f in names if f not in _TOKEN_FIELDS)
    return fields


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """What ``ast.iter_child_nodes`` gives, less operators and contexts, and without its
    generators (the screens walk every file that passes a text screen)."""
    children: List[ast.AST] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            children.extend(item for item in value if isinstance(item, _AST))
        elif isinstance(value, _AST):
            children.append(value)
    return children


def _walk(root: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` over ``child_nodes``."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_nodes(node))


@functools.lru_cache(maxsize=1)
def tree_index(tree: ast.Module) -> TreeIndex:
    calls: List[ast.Call] = []
    in_loops: List[ast.Call] = []
    assignments: List[Assignment] = []
    imports: List[Union[ast.Import, ast.ImportFrom]] = []
    functions: List[Function] = []
    names: Set[str] = set()
    stack: List[Tuple[ast.AST, bool]] = [(tree, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, in_loop = pop()
        kind = type(node)
        if kind is ast.Name:
            names.add(node.id)  # type: ignore[attr-defined]
            continue
        if kind is ast.Constant:
            continue
        if kind is ast.Attribute:
            names.add(node.attr)  # type: ignore[attr-defined]
        elif kind is ast.Call:
            calls.append(node)  # type: ignore[arg-type]
            if in_loop:
                in_loops.append(node)  # type: ignore[arg-type]
        elif kind in _ASSIGN_TYPES:
            assignments.append(node)  # type: ignore[arg-type]
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            functions.append(node)  # type: ignore[arg-type]
        elif kind in _LOOP_TYPES:
            in_loop = True
        elif kind is ast.Import or kind is ast.ImportFrom:
            imports.append(node)  # type: ignore[arg-type]
            for alias in node.names:  # type: ignore[attr-defined]
                names.update(alias.name.split("."))
        for name in _child_fields(kind):  # child_nodes, inlined: this loop is 40% faster
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, _AST):
                        push((item, in_loop))
            elif isinstance(value, _AST):
                push((value, in_loop))
    return TreeIndex(
        tuple(calls), tuple(in_loops), tuple(assignments), tuple(imports), tuple(functions), frozenset(names)
    )


_NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode", re.IGNORECASE)


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain, else an empty string."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def _own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``root`` that belong to its own frame: not those of nested functions
    or lambdas (class bodies belong to the enclosing frame, as in the LibCST analysis)."""
    stack = list(child_nodes(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(child_nodes(node))


def _is_no_grad(expr: ast.AST) -> bool:
    """Mirrors ``training.is_no_grad_expr`` by spelling: ``no_grad``/``inference_mode``
    names (not ``inference_mode(False)``), ``set_grad_enabled`` with a value not ``True``."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = _dotted(target)
    first = expr.args[0] if isinstance(expr, ast.Call) and expr.args else None
    if name.rsplit(".", 1)[-1] == "set_grad_enabled":
        return first is not None and not (isinstance(first, ast.Constant) and first.value is True)
    if name.rsplit(".", 1)[-1] == "inference_mode" and isinstance(first, ast.Constant) and first.value is False:
        return False
    return bool(_NO_GRAD_WORDS.search(name))


def _eval_owner(node: ast.AST) -> str:
    """``m`` for ``m.eval()`` or ``m.train(False)``; else an empty string."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return ""
    values = [*node.args, *(k.value for k in node.keywords)]
    if node.func.attr == "eval" and not values:
        return _dotted(node.func.value)
    if node.func.attr == "train" and values and isinstance(values[0], ast.Constant) and values[0].value is False:
        return _dotted(node.func.value)
    return ""


def _runs_backward(function: Function) -> bool:
    """Mirrors ``training._runs_backward``: the body calls ``.backward()`` or touches a
    gradient attribute anywhere (nested functions included)."""
    for statement in function.body:
        for node in _walk(statement):
            if isinstance(node, ast.Attribute) and node.attr in GRAD_ATTRS:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_ATTRS:
                return True
    return False


def _forward_target(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return _dotted(func.value)
    return _dotted(func)


def _loop_qualifies(loop: ast.AST, owners: Set[str], eval_named: bool) -> bool:
    """The loop calls a model in eval mode (or, in a function named like evaluation, a callee
    named like a model) outside a no-grad block, and no name in it says it needs gradients."""
    forward = False
    stack = [(child, False) for child in child_nodes(loop)]
    while stack:
        node, no_grad = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Attribute) and needs_grad_name(node.attr):
            return False
        if isinstance(node, ast.Name) and needs_grad_name(node.id):
            return False
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_no_grad(i.context_expr) for i in node.items):
            no_grad = True
        elif isinstance(node, ast.Call) and not no_grad and not forward:
            target = _forward_target(node)
            forward = bool(target) and (
                target in owners or eval_named and MODEL_NAME.match(target.rsplit(".", 1)[-1]) is not None
            )
        stack.extend((child, no_grad) for child in child_nodes(node))
    return forward


def _frame_could_evaluate(frame: ast.AST, eval_named: bool) -> bool:
    """Some loop of this frame (the module or one function) outside a no-grad ``with``
    qualifies."""
    owners = {owner for owner in map(_eval_owner, _own_nodes(frame)) if owner}
    if not owners and not eval_named:
        return False
    stack = list(child_nodes(frame))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_no_grad(i.context_expr) for i in node.items):
            continue
        if isinstance(node, _LOOP_TYPES) and _loop_qualifies(node, owners, eval_named):
            return True
        stack.extend(child_nodes(node))
    return False


def could_evaluate_without_no_grad(tree: ast.Module) -> bool:
    """What TPF203's LibCST analysis reports, over-approximated: outside framework hooks, a
    frame (the module or a function not decorated no-grad) whose loop
    calls a model it put in eval mode (or, when the function is named like evaluation and
    never runs backward, a callee named like a model) outside a no-grad ``with``, and nothing
    in that loop needs gradients."""
    index = tree_index(tree)
    eval_lines = sorted(call.lineno for call in index.calls if _eval_owner(call))
    if not eval_lines and not any(is_eval_function_name(f.name) for f in index.functions):
        return False  # nothing is put in eval mode and nothing is named like evaluation

    def sets_eval_mode(node: ast.AST) -> bool:
        """Some ``m.eval()`` lies within the node's lines (cheaper than walking it)."""
        at = bisect.bisect_left(eval_lines, node.lineno)  # type: ignore[attr-defined]
        return at < len(eval_lines) and eval_lines[at] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]

    if eval_lines and _frame_could_evaluate(tree, eval_named=False):
        return True
    for function in index.functions:
        if function.name in FRAMEWORK_HOOKS or any(_is_no_grad(d) for d in function.decorator_list):
            continue
        eval_named = is_eval_function_name(function.name) and not _runs_backward(function)
        if (eval_named or sets_eval_mode(function)) and _frame_could_evaluate(function, eval_named):
            return True
    return False


_ARRAY_MODULES = ("numpy", "cv2", "pandas", "PIL", "imageio", "h5py", "scipy")
# Methods and attributes that give an array when their receiver is one (or a pandas object).
_ARRAY_PRESERVING = frozenset(
    {"astype", "reshape", "copy", "flatten", "ravel", "transpose", "squeeze", "swapaxes", "view", "repeat"}
    | {"T", "values", "to_numpy"}
)
# The tensor constructors TPF401 knows (``torch.tensor`` and the legacy typed ones).
_CONSTRUCTORS = frozenset(
    {"tensor", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor"}
    | {"IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"}
)


def _array_roots(index: TreeIndex) -> Set[str]:
    """Local names bound to array-producing modules (``np``, ``numpy``, ``cv2``, ``pd``...)
    or to names imported from them."""
    roots: Set[str] = set()
    for node in index.imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _ARRAY_MODULES:
                    roots.add((alias.asname or alias.name).split(".")[0])
        elif node.module and node.module.split(".")[0] in _ARRAY_MODULES:
            roots.update(alias.asname or alias.name for alias in node.names)
    return roots


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _could_be_array(node: ast.AST, roots: Set[str], names: Set[str]) -> bool:
    """Over-approximates ``numpy_values``' known arrays: ``.numpy()``, an expression rooted
    in an array module or in a name assigned one, array-preserving methods of those."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "numpy":
            return True
        if node.func.attr in _ARRAY_PRESERVING and _could_be_array(node.func.value, roots, names):
            return True  # `(a / 255).copy()`; `np.copy(a)` is rooted in `np`, below
    if isinstance(node, ast.Attribute) and node.attr in _ARRAY_PRESERVING:
        if _could_be_array(node.value, roots, names):
            return True
    if isinstance(node, ast.BinOp):  # `np.array(b) / 255.0`
        return _could_be_array(node.left, roots, names) or _could_be_array(node.right, roots, names)
    root = _root_name(node)
    return bool(root) and (root in roots or root in names)


def _constructor_names(index: TreeIndex) -> Set[str]:
    """The constructor names, and what ``from torch import tensor as t`` binds them to."""
    names = set(_CONSTRUCTORS)
    for node in index.imports:
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname and a.name in _CONSTRUCTORS)
    return names


def _is_constructor(func: ast.AST, names: Set[str]) -> bool:
    """``tensor`` / ``LongTensor`` imported by name, or an attribute of a plain name
    (``torch.tensor``, ``th.FloatTensor``); not ``aten.split.Tensor`` or ``torch.cuda.*``."""
    if isinstance(func, ast.Name):
        return func.id in names
    return isinstance(func, ast.Attribute) and func.attr in _CONSTRUCTORS and isinstance(func.value, ast.Name)


@functools.lru_cache(maxsize=1)  # the screen and the narrowing both ask
def numpy_copy_candidates(tree: ast.Module) -> Tuple[ast.Call, ...]:
    """The tensor constructor calls whose first argument could be a NumPy array: an
    expression from numpy (or cv2, pandas...), ``.numpy()``, or a name assigned one anywhere
    in the file."""
    index = tree_index(tree)
    constructors = _constructor_names(index)
    candidates = [c for c in index.calls if c.args and _is_constructor(c.func, constructors)]
    if not candidates:
        return ()
    roots = _array_roots(index)
    names: Set[str] = set()
    changed = True
    while changed:  # a name assigned from another array name is an array name too
        changed = False
        for node in index.assignments:
            value = node.value
            if value is None or not _could_be_array(value, roots, names):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _walk(target):
                    if isinstance(name, ast.Name) and name.id not in names:
                        names.add(name.id)
                        changed = True
    return tuple(call for call in candidates if _could_be_array(call.args[0], roots, names))


_FACTORY_NAMES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "linspace", "eye", "tensor"} | {"rand", "randn", "randint"}
)
_FACTORY_BLOCKERS = frozenset({"device", "out", "pin_memory", "generator", "layout"})
_MOVE_KEYWORDS = {
    "cuda": frozenset({"device", "non_blocking", "memory_format"}),
    "to": frozenset({"device", "dtype", "memory_format", "non_blocking", "copy"}),
}


def _assigned_names(index: TreeIndex) -> Set[str]:
    """Names assigned somewhere in the file: the analysis may look their value up."""
    names: Set[str] = set()
    for node in index.assignments:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names.add(node.target.id)
    return names


def _could_be_device(node: ast.AST, bound: Set[str]) -> bool:
    """Over-approximates ``device_targets.device_target(...)`` being a non-host device."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return is_device_string(value, host=False)
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if isinstance(node, ast.Call):
        return _dotted(node.func).rsplit(".", 1)[-1] in ("device", "current_device")
    if isinstance(node, ast.Name):
        return node.id in bound or is_device_name(node.id)
    if isinstance(node, ast.Attribute):
        return is_device_name(node.attr)
    return False


@functools.lru_cache(maxsize=1)  # the screen and the narrowing both ask
def create_then_move_candidates(tree: ast.Module) -> Tuple[ast.Call, ...]:
    """The moves of a tensor factory call without ``device=`` (or another blocker): its
    ``.cuda(...)``, or its ``.to(...)`` whose target could be a device (TPF402)."""
    found: List[ast.Call] = []
    bound: Optional[Set[str]] = None
    index = tree_index(tree)
    for node in index.calls:
        if not isinstance(node.func, ast.Attribute):
            continue
        move = node.func.attr
        factory = node.func.value
        if move not in _MOVE_KEYWORDS or not isinstance(factory, ast.Call):
            continue
        if _dotted(factory.func).rsplit(".", 1)[-1] not in _FACTORY_NAMES:
            continue
        if any(k.arg is None or k.arg in _FACTORY_BLOCKERS for k in factory.keywords):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None or k.arg not in _MOVE_KEYWORDS[move] for k in node.keywords
        ):
            continue
        if move == "cuda":
            found.append(node)
            continue
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if device is not None:
            if not node.args and not (isinstance(device, ast.Constant) and device.value is None):
                found.append(node)
            continue
        if node.args:
            if bound is None:
                bound = _assigned_names(index)
            if _could_be_device(node.args[0], bound):
                found.append(node)
    return tuple(found)


# ---------------------------------------------------------------------------------------
# Identifiers in code, and the rough shape of a training loop
# ---------------------------------------------------------------------------------------
def code_identifiers(tree: ast.Module) -> FrozenSet[str]:
    """Every name, attribute and imported name the code uses (not strings or comments):
    a qualified API name can only resolve where its last part occurs here."""
    return tree_index(tree).identifiers


def _last_name(node: ast.AST) -> str:
    """``c`` for ``a.b.c``, ``a[0].c`` or ``c``; else an empty string (``training.last_name``)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


@functools.lru_cache(maxsize=1)
def _optimizer_targets(tree: ast.Module) -> FrozenSet[str]:
    """Over-approximates ``training``'s optimizer names (targets bound to a ``torch.optim``
    constructor): every dotted target assigned a call of a capitalised name."""
    targets: Set[str] = set()
    for node in tree_index(tree).assignments:
        value = node.value
        if isinstance(value, ast.Call) and _last_name(value.func)[:1].isupper():
            found = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets.update(filter(None, map(_dotted, found)))
    return frozenset(targets)


def _is_training_call(node: ast.AST, tree: ast.Module) -> bool:
    """``x.backward(...)``, ``backward(...)``, ``x.manual_backward(...)``, or a ``.step()``
    that ``training.is_optimizer_step`` could take for an optimizer step (its receiver named
    like an optimizer, a scaler given an optimizer, or a name bound to a constructor)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "backward"
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in BACKWARD_ATTRS:
        return True
    if func.attr != "step":
        return False
    name = _last_name(func.value)
    if not name:
        return False
    if _dotted(func.value) in _optimizer_targets(tree):
        return True
    if "scaler" in name.lower():
        return bool(node.args or node.keywords)
    return is_optimizer_name(name)


def could_have_training_loop(tree: ast.Module) -> bool:
    """The rough shape of ``training.training_facts``' training loops: the file calls
    backward or an optimizer's ``.step()`` somewhere, and some loop calls one itself or calls a function
    (or method) defined in this file, which may be a training-step helper."""
    if not calls_training_step(tree):
        return False
    index = tree_index(tree)
    defined = {function.name for function in index.functions}
    for call in index.calls_in_loops:
        if _is_training_call(call, tree):
            return True
        func = call.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if called in defined:
            return True
    return False


def calls_training_step(tree: ast.Module) -> bool:
    """Some call to backward, or a ``.step()`` that could be an optimizer's, in the code."""
    return any(_is_training_call(call, tree) for call in tree_index(tree).calls)
