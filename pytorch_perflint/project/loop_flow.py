"""Which bindings reach a read, from the statements' structure (for ``Scope.value_at``).

Through an ``if``/``else``: a binding in one arm does not reach a read in the other
(``other_arm``); ``x = np.load(p)``, then ``if a: x = f(x)`` ``elif b: x = g(x)``
``else: raise ...`` before the read: every path that reaches the read rebinds ``x`` (or
leaves by ``raise``/``return``), so the first binding does not reach it (``overwritten``).

Round a loop: which bindings made inside it reach its next iteration.

``x = f(x)`` then ``x = g()`` later in the same loop body: the first binding never reaches
the top of the loop again, since the second overwrites it on every path to the loop's end.
That holds only in a loop whose body cannot jump past the later binding: no ``continue``,
no ``try`` (a handler may resume the loop), no ``break`` of an inner loop; a ``break`` of
the loop itself leaves it, so it does not matter. Anything else keeps every binding."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List, Tuple

from .statements import target_names

if TYPE_CHECKING:
    from .scopes import Entry, Scope

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_JUMPS = (ast.Continue, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def reaching_back(scope: "Scope", loop: int, found: List["Entry"], entries: List["Entry"]) -> List["Entry"]:
    """The bindings of ``found`` (inside loop ``loop``) that a later binding of the same
    name does not overwrite on every path to the loop's end."""
    node = scope.loop_nodes.get(loop)
    if node is None or not _straight(node, scope.straight):
        return found
    end = scope.loops[loop][1]
    inside = (loop, "body")
    return [
        e for e in found
        if not any(e.line < f.line <= end and inside in f.blocks and e.blocks[: len(f.blocks)] == f.blocks for f in entries)
    ]


def _straight(loop: ast.stmt, memo: Dict[int, bool]) -> bool:
    """No jump in the loop's body can skip a later statement of it (see the module)."""
    key = id(loop)
    if key not in memo:
        memo[key] = _no_jumps(loop.body, False)  # type: ignore[attr-defined]
    return memo[key]


def _no_jumps(body: List[ast.stmt], inner: bool) -> bool:
    stack = [(stmt, inner) for stmt in body]
    while stack:
        node, nested = stack.pop()
        if isinstance(node, _JUMPS) or (nested and isinstance(node, ast.Break)):
            return False
        if isinstance(node, _NESTED):
            continue
        deeper = nested or isinstance(node, _LOOPS)
        stack.extend((child, deeper) for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return True


def overwritten(scope: "Scope", entry: "Entry", line: int, name: str) -> bool:
    """Whether an ``if`` with an ``else``, after ``entry``'s line and wholly before ``line``
    in a block around the read, binds ``name`` or leaves on every path through it."""
    key = (entry.line, line, name)
    if key not in scope.straight:  # memoised beside the loops' answers
        scope.straight[key] = _overwritten(scope, entry, line, name)  # type: ignore[index]
    return scope.straight[key]  # type: ignore[index]


def _overwritten(scope: "Scope", entry: "Entry", line: int, name: str) -> bool:
    body = getattr(scope.node, "body", None)
    while isinstance(body, list) and body:
        here = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if any(entry.line < s.lineno and (s.end_lineno or s.lineno) < line and _settles([s], name) for s in body):
            return True
        if here is None or isinstance(here, _NESTED):
            return False
        body = next((b for b in _blocks(here) if b and b[0].lineno <= line <= (b[-1].end_lineno or b[-1].lineno)), None)
    return False


def _blocks(statement: ast.stmt) -> List[List[ast.stmt]]:
    out = [getattr(statement, field, None) or [] for field in ("body", "orelse", "finalbody")]
    return out + [handler.body for handler in getattr(statement, "handlers", ())]


def _settles(block: List[ast.stmt], name: str) -> bool:
    """Every path through ``block`` binds ``name`` or leaves the function (``raise``,
    ``return``): a plain assignment of it, or an ``if``/``else`` whose arms both settle."""
    for statement in block:
        if isinstance(statement, (ast.Raise, ast.Return)):
            return True
        if isinstance(statement, ast.Assign) and any(name in target_names(t) for t in statement.targets):
            return True
        if isinstance(statement, ast.If) and statement.orelse and _settles(statement.body, name) and _settles(statement.orelse, name):
            return True
    return False


def other_arm(blocks: Tuple, here: Tuple, ifs: Dict[int, object]) -> bool:
    """Whether a binding in ``blocks`` stands in the other arm of an ``if`` than the read
    (in ``here``): one path takes one arm only, so it cannot reach the read (round a loop,
    ``value_at`` reads it as carried)."""
    for (statement, field), (other, other_field) in zip(blocks, here):
        if statement != other:
            return False
        if field != other_field:
            return statement in ifs and {field, other_field} == {"body", "orelse"}
    return False
