"""Project iterables that walk the iterable they were given, afresh on each pass (TPF103).

``for batch in Staging(loader, device)``, where the project class keeps its constructor's
argument (``self.source = source`` in ``__init__``, the attribute's only assignment in the
class) and its ``__iter__`` walks it (``for b in self.source: yield ...``, ``yield from
self.source``, ``return iter(self.source)``): every pass over the wrapper is a pass over
the loader, so a wrapper walked every epoch restarts the loader's workers every epoch. A
class that walks its source once (``self.it = iter(source)`` in ``__init__``, ``__iter__``
returning ``self``) is not one. An ``__iter__`` that starts its pass with ``it =
iter(self.source)`` and steps it with ``next`` walks it too. A class whose ``__iter__``
starts a new pass inside a ``while True:`` (``except StopIteration: self.it =
iter(self.source)``) walks its source endlessly: each round of that loop is an epoch of
the loop that walks the wrapper (``Walked.endless``). The class's module is read with
``ast`` through the index (the finding depends on it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...context import FileContext
from ...project.bodies import locate
from ...project.call_values import own_path
from .project_iterations import _PASS_THROUGH


@dataclass(frozen=True)
class Walked:
    """The argument a project iterable walks, and whether one pass over the object walks
    it again and again (an endless ``__iter__``)."""

    arg: cst.Arg
    endless: bool


def walked_argument(context: FileContext, call: cst.Call) -> Optional[Walked]:
    """The argument of ``call`` (a project class built) that each pass over the object
    walks again, None when there is none or it cannot be told."""
    index = context.project
    if index is None or not isinstance(call.func, (cst.Name, cst.Attribute)) or any(a.star for a in call.args):
        return None
    dotted = dotted_name(call.func)
    klass = index.resolve(own_path(context), dotted) if dotted else None
    if klass is None or klass.kind != "class" or klass.klass is None or klass.path is None:
        return None
    found = _walked_parameter(index, klass)
    if found is None:
        return None
    name, position, endless = found
    positional = [a for a in call.args if a.keyword is None]
    keyword = next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)
    arg = keyword if keyword is not None else positional[position] if position < len(positional) else None
    return Walked(arg, endless) if arg is not None else None


def _walked_parameter(index, klass) -> Optional[Tuple[str, int, bool]]:
    """(name, position after ``self``, endless) of the ``__init__`` parameter kept in an
    attribute that ``__iter__`` walks."""
    summary = klass.klass
    init, iterate = summary.method("__init__"), summary.method("__iter__")
    text = index.text(klass.path)
    if init is None or iterate is None or text is None:
        return None
    class_node = locate(text, summary.line, summary.end_line, summary.name, True)
    init_node = locate(text, init.line, init.end_line, "__init__", False)
    iter_node = locate(text, iterate.line, iterate.end_line, "__iter__", False)
    if class_node is None or not isinstance(init_node, ast.FunctionDef) or not isinstance(iter_node, ast.FunctionDef):
        return None
    params = [a.arg for a in init_node.args.args]
    if not params or init_node.args.vararg is not None:
        return None
    for statement in init_node.body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
        value = statement.value if target is not None else None  # type: ignore[union-attr]
        if not (_self_attribute(target) and isinstance(value, ast.Name) and value.id in params[1:]):
            continue
        attr = target.attr  # type: ignore[union-attr]
        if _assignments(class_node, attr) != 1 or _rebinds(init_node, value.id):  # type: ignore[union-attr]
            continue
        if _walks_attribute(iter_node.body, attr):
            # a class that sets a sampler's epoch itself (`set_epoch` in its code) counts its epochs
            endless = _restarts(iter_node, attr) and "set_epoch" not in ast.get_source_segment(text, class_node)  # type: ignore[operator]
            return value.id, params.index(value.id) - 1, endless  # type: ignore[union-attr]
    return None


def _self_attribute(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _assignments(class_node: ast.AST, attr: str) -> int:
    """How many times the class binds ``self.<attr>`` (any store, ``del`` included)."""
    return sum(1 for n in ast.walk(class_node) if _self_attribute(n) and n.attr == attr and not isinstance(n.ctx, ast.Load))  # type: ignore[attr-defined]


def _rebinds(function: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(function))


def _restarts(function: ast.FunctionDef, attr: str) -> bool:
    """``__iter__`` starts a new pass over ``self.<attr>`` inside a ``while True:`` (of its
    own, not under a ``break`` or ``return``): it never ends, walking the source again and
    again."""
    for node in ast.walk(function):
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value in (True, 1):
            if any(isinstance(n, (ast.Break, ast.Return)) for n in ast.walk(node)):
                continue
            if _walks_attribute(node.body, attr):
                return True
    return False


def _walks_attribute(body, attr: str) -> bool:
    """The code starts a pass over ``self.<attr>``: a ``for`` over it (through
    ``enumerate``/``iter``/``tqdm``), ``yield from`` it, ``return iter(...)`` of it, or
    ``iter(...)`` of it bound to a name or an attribute (stepped with ``next``)."""
    target = f"self.{attr}"
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.For) and _walked(node.iter) == target:
            return True
        if isinstance(node, ast.YieldFrom) and _walked(node.value) == target:
            return True
        if isinstance(node, (ast.Return, ast.Assign)) and _is_iter_of(node.value, target):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _is_iter_of(value: Optional[ast.AST], target: str) -> bool:
    return isinstance(value, ast.Call) and ast.unparse(value.func) == "iter" and _walked(value) == target


def _walked(expr: ast.AST) -> str:
    """What a pass over ``expr`` walks, through ``enumerate``/``iter``/``tqdm``, as text."""
    while isinstance(expr, ast.Call) and expr.args and not isinstance(expr.args[0], ast.Starred):
        if ast.unparse(expr.func).split(".")[-1] not in _PASS_THROUGH:
            return ""
        expr = expr.args[0]
    return ast.unparse(expr)
