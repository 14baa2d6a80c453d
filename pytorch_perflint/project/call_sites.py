"""Where the project calls a step function from a loop, and whether that call runs on every
iteration (TPF202: a step function called from a loop is a loop body).

The callers of a function come from the index (``callers``); the callers of a method are
the ``x.m(...)`` calls whose receiver the value engine knows to be an object of the
method's class (or ``self`` in that class). Whether a call is plain (no condition between
it and its loop, and the loop no reinforcement-learning rollout) is read from the calling
module's ``ast``: a structural fact of the caller's text, not a value.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from .call_values import methods
from .forms import Ref
from .kinds import Instance
from .resolution import Definition
from .scan import nodes_on_lines
from .values import ValueEngine, Where

if TYPE_CHECKING:
    from .index import ProjectIndex

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def loop_call_sites(engine: ValueEngine, definition: Definition) -> Optional[List[Tuple[str, int, str]]]:
    """(path, line, name as called) of the project's calls of a function or method made
    inside a loop; None when its callers cannot be known. A method's calls are those on
    ``self`` in its class, and ``obj.m(...)`` whose ``obj`` the engine knows to be an
    object of the method's class."""
    index = engine.index
    if index is None:
        return None
    short = definition.name.rsplit(".", 1)[-1]
    if definition.kind == "function":
        sites = index.callers(definition)
        if sites is None:
            return None
        return [(path, site.line, short) for path, site in sites if site.in_loop and site.called]
    if definition.kind != "method" or definition.klass is None:
        return None
    class_name = definition.klass.name
    out = []
    for path, site in index.method_calls(short):
        if not site.in_loop:
            continue
        receiver = site.callee.rsplit(".", 1)[0]
        if receiver in ("self", "cls"):
            if path == definition.path and site.caller.split(".")[0] == class_name:
                out.append((path, site.line, short))
            continue
        where = engine._site_where(path, site)
        if where is not None and _may_be(engine, receiver, where, definition):
            out.append((path, site.line, short))
    return out


def step_call_sites(
    engine: ValueEngine, definition: Definition, wanted: Callable[[str, int, str], bool]
) -> Optional[List[Tuple[str, int, str]]]:
    """(path, line, calling function's dotted name) of the project's calls of a function
    or method made outside loops inside another function that ``wanted`` accepts (the
    callers that may pass a step on: ``facts/training/loop_bodies``; asked before a
    receiver is evaluated); None when its callers cannot be known. A method's calls are
    chosen as ``loop_call_sites`` chooses them."""
    index = engine.index
    if index is None:
        return None
    if definition.kind == "function":
        sites = index.callers(definition)
        if sites is None:
            return None
        return [
            (path, site.line, site.caller)
            for path, site in sites
            if site.called and not site.in_loop and site.caller and wanted(path, site.line, site.caller)
        ]
    if definition.kind != "method" or definition.klass is None:
        return None
    short = definition.name.rsplit(".", 1)[-1]
    class_name = definition.klass.name
    out = []
    for path, site in index.method_calls(short):
        if site.in_loop or not site.caller:
            continue
        receiver = site.callee.rsplit(".", 1)[0]
        if receiver in ("self", "cls"):
            if path == definition.path and site.caller.split(".")[0] == class_name and wanted(path, site.line, site.caller):
                out.append((path, site.line, site.caller))
            continue
        if not wanted(path, site.line, site.caller):
            continue
        where = engine._caller_where(path, site.caller, site.line)
        if where is not None and _may_be(engine, receiver, where, definition):
            out.append((path, site.line, site.caller))
    return out


def _may_be(engine: ValueEngine, receiver: str, where: Where, method: Definition) -> bool:
    """Whether ``receiver`` may be an object whose method is ``method``: its value, or one
    of the values its function binds it to (``if args.algo == "a2c": agent = A2C(...)``
    ``elif ...: agent = PPO(...)``; a may-question: which branch runs is not known)."""
    short = method.name.rsplit(".", 1)[-1]
    forms = [(Ref(receiver), where)]
    if where.scope is not None and "." not in receiver:
        forms += [(entry.form, where.at(entry.line)) for entry in where.scope.entries.get(receiver, ()) if entry.form is not None]
    for form, at in forms:
        kind = engine._eval(form, at, 0)
        if type(kind) is Instance and any(found.key == method.key for found in methods(engine, kind, short) or ()):
            return True
    return False


def plain_loop_call(index: "ProjectIndex", path: str, line: int, name: str) -> bool:
    """Whether the call of ``name`` on ``line`` of ``path`` runs on every iteration of the
    loop around it (no condition between them) in a loop that is not a reinforcement
    learning rollout (``env.step(...)``): TPF202 then reports the call itself."""
    text = index.text(path)
    if text is None:
        return True
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node, ancestors in nodes_on_lines(tree, [line]):
        if not isinstance(node, ast.Call) or getattr(node, "lineno", 0) != line:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if called != name:
            continue
        return _plain(ancestors, node)
    return True


def _plain(ancestors: Sequence[ast.AST], node: ast.AST) -> bool:
    chain = (*ancestors, node)
    start = 0
    for index in range(len(chain) - 1):
        if isinstance(chain[index], _FUNCTIONS):
            start = index + 1
    loop_at = None
    for index in range(start, len(chain) - 1):
        if isinstance(chain[index], _LOOPS):
            loop_at = index
            if _rollout(chain[index]):
                return False
    if loop_at is None:
        return True
    for parent, child in zip(chain[loop_at:], chain[loop_at + 1 :]):
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            return False
        if isinstance(parent, ast.BoolOp) and child is not parent.values[0]:
            return False
        if isinstance(parent, ast.ExceptHandler) or type(parent).__name__ == "match_case":
            return False
    return True


def _rollout(loop: ast.AST) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step" and node.args:
            receiver = node.func.value
            last = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
            if "env" in last.lower():
                return True
    return False
