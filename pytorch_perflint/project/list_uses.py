"""How a function uses the lists it builds by ``append`` (``scopes.Scope`` asks): a list whose
items the engine knows must not be changed or handed anywhere but by the appends it reads.

Read with ``ast`` from a scope's own node, once per scope. A use is *safe* when it cannot
change which items the list holds: an ``xs.append(a)`` statement (the scope records it as
a change and checks where it stands), an item read ``xs[i]``, a walk ``for x in xs`` or a
comprehension over it, ``len(xs)``, ``enumerate(xs)``, ``print(xs)`` and other builtins that only read, and the in-place
moves of an ``nn.ModuleList`` (``.cuda()``, ``.to(...)``, ``.train()``...), which keep its
modules' classes. Anything else (``f(xs)``, ``xs.pop()``, ``xs[0] = a``, ``del xs[0]``, a
use in a nested function, which may run at any time) is not safe.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Tuple

ANY_TIME = 0  # the line of a use that may run at any time (in a nested function)
_MOVES = frozenset(("append", "cuda", "cpu", "to", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_"))
_READERS = frozenset(("len", "enumerate", "zip", "print", "sorted", "list", "tuple", "sum", "min", "max", "str", "repr", "isinstance", "any", "all"))
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def list_uses(node: ast.AST) -> Dict[str, List[Tuple[int, bool]]]:
    """For each name used in ``node``'s own body: (line, safe) of every load of it."""
    uses: Dict[str, List[Tuple[int, bool]]] = {}

    def visit(child: ast.AST, parent: ast.AST, nested: bool) -> None:
        if type(child) is ast.Name and type(child.ctx) is ast.Load:
            line = ANY_TIME if nested else child.lineno
            uses.setdefault(child.id, []).append((line, not nested and _safe(child, parent)))
        inner = nested or (isinstance(child, _NESTED) and child is not node)
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild, child, inner)

    parents: Dict[int, ast.AST] = {}
    for outer in ast.walk(node):
        for child in ast.iter_child_nodes(outer):
            parents[id(child)] = outer

    def _safe(name: ast.Name, parent: ast.AST) -> bool:
        kind = type(parent)
        if kind is ast.Attribute and parent.value is name:  # type: ignore[attr-defined]
            call = parents.get(id(parent))
            if type(call) is not ast.Call or call.func is not parent or parent.attr not in _MOVES:  # type: ignore[attr-defined,union-attr]
                return False
            return parent.attr != "append" or type(parents.get(id(call))) is ast.Expr  # type: ignore[attr-defined]
        if kind is ast.Subscript and parent.value is name:  # type: ignore[attr-defined]
            return type(parent.ctx) is ast.Load  # type: ignore[attr-defined]
        if kind in (ast.For, ast.AsyncFor, ast.comprehension) and parent.iter is name:  # type: ignore[attr-defined]
            return True
        if kind is ast.Call and name in parent.args and type(parent.func) is ast.Name:  # type: ignore[attr-defined]
            return parent.func.id in _READERS  # type: ignore[attr-defined]
        return False

    for child in ast.iter_child_nodes(node):
        visit(child, node, False)
    return uses
