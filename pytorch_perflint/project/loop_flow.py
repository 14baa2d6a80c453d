"""Which bindings made inside a loop reach its next iteration (for ``Scope.value_at``).

``x = f(x)`` then ``x = g()`` later in the same loop body: the first binding never reaches
the top of the loop again, since the second overwrites it on every path to the loop's end.
That holds only in a loop whose body cannot jump past the later binding: no ``continue``,
no ``try`` (a handler may resume the loop), no ``break`` of an inner loop; a ``break`` of
the loop itself leaves it, so it does not matter. Anything else keeps every binding."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, List

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
