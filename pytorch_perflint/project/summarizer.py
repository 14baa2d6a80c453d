"""Build a module's summary from Python's ``ast``, sharing a tree the engine already has.

``summarize(tree, source)`` reads the module's own statements and the headers of its
functions and classes; inside function bodies it looks only at the lines that spell what it
needs (``import``, ``global``, ``backward``, ``.step``, accelerator words, in-place changes of
module-level dicts: ``scan``). What functions return and what ``__init__`` assigns is read
on demand (``bodies``). Rule families add facts of their own with ``register_summarizer``:
a function of the module's tree and text that returns a small JSON-able value, stored in
the summary under its key; interpreting it is the family's business.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..pyparse import compile_python
from .accelerator import selects_accelerator
from .codec import to_json
from .forms import FormBuilder, dotted, qualify
from .scan import line_text, lines_with, nodes_on_lines, spans_line
from .statements import ScopeNames, alias_target, import_records, read_scope
from .import_paths import added_paths
from .summary import ClassSummary, FunctionSummary, ImportRecord, ModuleSummary, Param, StepCall, failed

Summarizer = Callable[[ast.Module, str], Any]
_SUMMARIZERS: Dict[str, Summarizer] = {}

_BACKWARD_ATTRS = frozenset({"backward", "manual_backward"})
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Values that may be changed in place after they are bound (``kwargs["pin_memory"] = True``).
_CONTAINERS = (ast.Dict, ast.List, ast.Set)


# Summaries built in this process since it last handed its count on (``take_built``), with
# the pid that counted them: a forked worker starts from 0, not from its parent's count.
_BUILT = [os.getpid(), 0]


def take_built() -> int:
    """How many summaries this process built since the last call (a run's accounting,
    ``RunSummary.summarised``: each process hands its count on once)."""
    count = _BUILT[1] if _BUILT[0] == os.getpid() else 0
    _BUILT[:] = [os.getpid(), 0]
    return count


def register_summarizer(key: str, summarizer: Summarizer) -> None:
    """Have every summary built from now on hold ``summarizer(tree, source)`` under ``key``.

    The value must be JSON-able (dicts with string keys, lists, literals, or this layer's
    dataclasses; lists come back from a cache as tuples). Registering again under the same
    key replaces the function (a family re-imported in a test).
    """
    _SUMMARIZERS[key] = summarizer


def registered_summarizers() -> Tuple[Tuple[str, Summarizer], ...]:
    return tuple(sorted(_SUMMARIZERS.items()))


def parse(source: str, filename: str = "<unknown>") -> Tuple[Optional[ast.Module], Optional[str]]:
    """The module's tree, or the reason it has none. Never raises for bad input."""
    try:  # at Python's default recursion limit (``pyparse``): the engine's judge too
        return compile_python(source, filename), None
    except SyntaxError as error:
        return None, f"syntax error at line {error.lineno}: {error.msg}"
    except (ValueError, RecursionError, MemoryError) as error:
        return None, f"cannot parse: {type(error).__name__}: {error}"


def parse_tree(source: str) -> Optional[ast.Module]:
    """``parse``'s tree alone (None for a text Python rejects): for a module's text or a
    segment of it read again on demand."""
    return parse(source)[0]


def summarize(
    tree: Optional[ast.Module],
    source: str,
    summarizers: Optional[Sequence[Tuple[str, Summarizer]]] = None,
) -> ModuleSummary:
    """The summary of a module; ``tree`` is ``ast.parse(source)`` when the caller has it
    (the engine parses every file once for its screens), else it is parsed here."""
    if _BUILT[0] != os.getpid():
        _BUILT[:] = [os.getpid(), 0]
    _BUILT[1] += 1
    if tree is None:
        tree, error = parse(source)
        if tree is None:
            return failed(error or "cannot parse")
    text = line_text(source)
    module = read_scope(tree.body, module_scope=True)
    aliases = module.aliases()
    builder = FormBuilder(aliases)

    functions: List[FunctionSummary] = []
    classes: List[ClassSummary] = []
    spans: List[Tuple[int, int, str]] = []
    for stmt in module.scopes:
        if type(stmt) is ast.ClassDef:
            classes.append(_class(stmt, aliases, builder, spans))  # type: ignore[arg-type]
        else:
            functions.append(_function(stmt, builder))
            spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno, stmt.name))  # type: ignore[attr-defined]
    inner_imports = _inside_scopes(tree, text, module, spans)
    functions, classes = _with_training_calls(tree, text, aliases, functions, classes, spans)
    imports = (*module.imports, *inner_imports)
    return ModuleSummary(
        ok=True,
        imports=imports,
        functions=tuple(functions),
        classes=tuple(classes),
        bindings=module.bindings(builder),
        rebound=module.rebound(),
        exports=_exports(module),
        aliases=tuple(sorted(aliases.items())),
        accelerator=selects_accelerator(tree, text, _all_aliases(imports, aliases)),
        extras=_extras(tree, source, registered_summarizers() if summarizers is None else summarizers),
        added_paths=added_paths(tree, source),
    )


def _all_aliases(imports: Sequence[ImportRecord], aliases: Mapping[str, str]) -> Dict[str, str]:
    """Module aliases plus imports made inside functions (``import torch`` in ``main``),
    for facts that do not depend on scope (whether the module selects an accelerator)."""
    out = dict(aliases)
    for record in imports:
        if not record.module_scope and not record.star and record.bound not in out:
            target = alias_target(record)
            if target is not None:
                out[record.bound] = target
    return out


def _exports(module: ScopeNames) -> Optional[Tuple[str, ...]]:
    entry = module.once("__all__")
    if entry is None or entry[0] != "assign":
        return None
    value = entry[2]
    if isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    return None


def _params(args: ast.arguments, builder: FormBuilder) -> Tuple[Param, ...]:
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    only = len(args.posonlyargs)
    params = []
    for index, arg in enumerate(positional):
        default = args.defaults[index - first_default] if index >= first_default else None
        params.append(Param(arg.arg, "positional", None if default is None else builder.form(default), index < only))
    if args.vararg is not None:
        params.append(Param(args.vararg.arg, "vararg"))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(Param(arg.arg, "keyword", None if default is None else builder.form(default)))
    if args.kwarg is not None:
        params.append(Param(args.kwarg.arg, "kwarg"))
    return tuple(params)


def _function(node: ast.AST, builder: FormBuilder) -> FunctionSummary:
    """A function's header (its defaults and decorators are evaluated where it is defined)."""
    return FunctionSummary(
        name=node.name,  # type: ignore[attr-defined]
        line=node.lineno,  # type: ignore[attr-defined]
        end_line=node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        params=_params(node.args, builder),  # type: ignore[attr-defined]
        decorators=tuple(builder.form(d) for d in node.decorator_list) if node.decorator_list else (),  # type: ignore[attr-defined]
        is_async=type(node) is ast.AsyncFunctionDef,
    )


def _class(node: ast.ClassDef, aliases: Mapping[str, str], builder: FormBuilder, spans: List[Tuple[int, int, str]]) -> ClassSummary:
    body = read_scope(node.body, module_scope=False)
    methods = []
    for stmt in body.scopes:
        if type(stmt) in _DEFS:
            methods.append(_function(stmt, builder))
            spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno, f"{node.name}.{stmt.name}"))  # type: ignore[attr-defined]
    return ClassSummary(
        name=node.name,
        line=node.lineno,
        end_line=node.end_lineno or node.lineno,
        bases=tuple(builder.form(b) for b in node.bases),
        decorators=tuple(builder.form(d) for d in node.decorator_list),
        methods=tuple(methods),
        bindings=body.bindings(FormBuilder(body.aliases(aliases))),
    )


def _inside_scopes(tree: ast.Module, text: str, module: ScopeNames, spans: Sequence[Tuple[int, int, str]]) -> List[ImportRecord]:
    """What function and class bodies do to the module: their imports (returned), ``global``
    names (rebound at module level) and in-place changes of module-level containers
    (marked mutated in ``module``). Only the lines that spell them are read."""
    if not spans:
        return []
    containers = {
        name
        for name, entries in module.bound.items()
        if len(entries) == 1 and entries[0][0] == "assign" and _is_container(entries[0][2])
    }
    lines = lines_with(text, ("import", "from", "global"), whole_word=True, first_word=True)
    if containers:
        lines = sorted(set(lines) | set(lines_with(text, containers, whole_word=True)))
    imports: List[ImportRecord] = []
    if not lines:
        return imports
    for scope in module.scopes:
        if not spans_line(scope, lines):
            continue
        for node, ancestors in nodes_on_lines(scope, lines):
            kind = type(node)
            if kind is ast.Import or kind is ast.ImportFrom:
                imports.extend(import_records(node, module_scope=False))  # type: ignore[arg-type]
            elif kind is ast.Global:
                for name in node.names:  # type: ignore[attr-defined]
                    module.add(name, "global", node.lineno)  # type: ignore[attr-defined]
            elif not containers:
                continue
            elif (kind is ast.Subscript or kind is ast.Attribute) and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                base = node.value  # type: ignore[attr-defined]
                if type(base) is ast.Name and base.id in containers:
                    module.mutated.add(base.id)
            elif kind is ast.Call and type(node.func) is ast.Attribute and type(ancestors[-1]) is ast.Expr:  # type: ignore[attr-defined]
                base = node.func.value  # type: ignore[attr-defined]
                if type(base) is ast.Name and base.id in containers:
                    module.mutated.add(base.id)
    return imports


def _is_container(value: Optional[ast.AST]) -> bool:
    """A dict, list or set display, or ``dict(...)``."""
    if isinstance(value, _CONTAINERS):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"


def _receiver(node: ast.AST) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node) or ""


def _with_training_calls(tree, text, aliases, functions, classes, spans):
    """Add ``backward`` and ``steps`` to the functions and methods whose lines hold them
    (spans nest: a nested function's calls count for every function around it)."""
    if "backward" not in text and ".step" not in text:
        return functions, classes
    backward: Set[str] = set()
    steps: Dict[str, List[StepCall]] = {}
    for node, _ in nodes_on_lines(tree, lines_with(text, ("backward", ".step"))):
        if type(node) is not ast.Call:
            continue
        func = node.func  # type: ignore[attr-defined]
        is_backward = isinstance(func, ast.Attribute) and func.attr in _BACKWARD_ATTRS
        if not is_backward and isinstance(func, (ast.Name, ast.Attribute)):
            name = dotted(func)
            is_backward = name is not None and qualify(name, aliases) == "torch.autograd.backward"
        is_step = isinstance(func, ast.Attribute) and func.attr == "step"
        if not (is_backward or is_step):
            continue
        for first, last, key in spans:
            if first <= node.lineno <= last:  # type: ignore[attr-defined]
                if is_backward:
                    backward.add(key)
                else:
                    call = StepCall(_receiver(func.value), len(node.args), node.lineno)  # type: ignore[attr-defined]
                    steps.setdefault(key, []).append(call)

    def updated(summary: FunctionSummary, key: str) -> FunctionSummary:
        if key not in backward and key not in steps:
            return summary
        return dataclasses.replace(summary, backward=key in backward, steps=tuple(steps.get(key, ())))

    functions = [updated(f, f.name) for f in functions]
    classes = [dataclasses.replace(c, methods=tuple(updated(m, f"{c.name}.{m.name}") for m in c.methods)) for c in classes]
    return functions, classes


def _extras(tree: ast.Module, source: str, summarizers: Sequence[Tuple[str, Summarizer]]) -> Tuple[Tuple[str, Any], ...]:
    out = []
    for key, summarizer in summarizers:
        value = summarizer(tree, source)
        to_json(value)  # fails now, loudly, rather than when the cache is written
        out.append((key, value))
    return tuple(out)
