"""What a call of a project generator function gives (split from ``values``): an
``Iterator`` of what every ``yield`` gives (all agree), so ``for x, y in batches(xs, ys)``
(``yield xs[i:j], ys[i:j]``) reads ``x`` as an array. A generator with a ``yield`` the scope
does not record (``got = yield x``, a ``yield`` inside an expression) is not known."""

from __future__ import annotations

import ast
from typing import Any, Callable

from .kinds import UNKNOWN, Iterator, Kind, Unknown, join_all

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def generated(scope: Any, evaluate: Callable[[Any, int], Kind]) -> Kind:
    """The iterator a call of the generator whose scope is ``scope`` returns; ``evaluate``
    reads a yielded form at its line."""
    node = scope.node
    if not scope.yields or node is None or isinstance(node, ast.AsyncFunctionDef) or _yields(node) != len(scope.yields):
        return UNKNOWN
    element = join_all([evaluate(form, line) for line, _, form in scope.yields])
    return UNKNOWN if type(element) is Unknown else Iterator(element)


def _yields(function: ast.AST) -> int:
    """The ``yield``/``yield from`` expressions of the function itself (not nested scopes)."""
    count = 0
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            count += 1
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return count
