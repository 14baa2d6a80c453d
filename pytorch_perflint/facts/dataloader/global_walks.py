"""Loaders walked by a function that reads them as a free name (TPF103).

``test_loader = get_test_loader(...)`` bound once at a script's top level, and ``for epoch
in ...: evaluate(epoch)`` there, where the module's own ``def evaluate(epoch)`` walks
``test_loader`` without binding it (a global; a nested function's free name reads its
enclosing function's local in the same way): each call is a pass over the loader, every
epoch. A function that binds the name itself (a parameter, an assignment, ``global``) reads
something else, and one defined twice is not known.
"""

from __future__ import annotations

import ast
from typing import Sequence

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_PASS_THROUGH = frozenset({"enumerate", "iter", "tqdm"})


def walked_through_free_name(body: Sequence[ast.stmt], loop: ast.AST, name: str) -> bool:
    """A call in ``loop`` of a function defined once in ``body`` whose own code walks
    ``name`` as a free name."""
    functions = {}
    for statement in body:
        if isinstance(statement, ast.FunctionDef):
            functions[statement.name] = None if statement.name in functions else statement
    for node in ast.walk(loop):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        function = functions.get(node.func.id)
        if function is not None and _free(function, name) and any(_walks(n, name) for n in _own_nodes(function)):
            return True
    return False


def _free(function: ast.FunctionDef, name: str) -> bool:
    """The function binds ``name`` nowhere in its own code (nor names it ``global``)."""
    arguments = function.args
    params = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    params += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
    if name in params:
        return False
    for node in _own_nodes(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            return False
    return True


def _walks(node: ast.AST, name: str) -> bool:
    """``for ... in name`` (through ``enumerate``/``iter``/``tqdm``)."""
    if not isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return False
    expr = node.iter
    while isinstance(expr, ast.Call) and expr.args and not isinstance(expr.args[0], ast.Starred):
        func = expr.func.attr if isinstance(expr.func, ast.Attribute) else getattr(expr.func, "id", "")
        if func not in _PASS_THROUGH:
            return False
        expr = expr.args[0]
    return isinstance(expr, ast.Name) and expr.id == name


def _own_nodes(function: ast.AST):
    """The function's nodes, nested scopes left out."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
