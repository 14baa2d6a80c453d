"""Loops that run at least once on every call of a training step's helper (``call_values``
asks, for TPF202's "syncs on every call"): a loop over a model's parameters or an
optimizer's ``param_groups``. Read with ``ast`` from the function's own lines; a loop over
any other iterable may run no time.
"""

from __future__ import annotations

import ast
from typing import Dict


def over_parameters(iterable: ast.AST, once: Dict[str, ast.AST]) -> bool:
    """A model's parameters (``m.parameters()``, ``m.named_parameters()``, no arguments),
    an optimizer's ``param_groups`` (never empty), ``list``/``tuple``/``enumerate`` of
    them, or a name bound once to one of these: what a training step's helper walks."""
    if isinstance(iterable, ast.Name) and iterable.id in once:
        # Substituted once: ``tokens = list(tokens)`` of a parameter must not loop forever.
        iterable, once = once[iterable.id], {k: v for k, v in once.items() if k != iterable.id}
    if isinstance(iterable, ast.Attribute):
        return iterable.attr == "param_groups"
    if not isinstance(iterable, ast.Call) or iterable.keywords:
        return False
    func = iterable.func
    if isinstance(func, ast.Attribute):
        return func.attr in ("parameters", "named_parameters") and not iterable.args
    if isinstance(func, ast.Name) and func.id in ("list", "tuple", "enumerate") and len(iterable.args) == 1:
        return over_parameters(iterable.args[0], once)
    return False


def bound_once(node: ast.AST) -> Dict[str, ast.AST]:
    """Names a function binds once, by a plain assignment: their values."""
    counts: Dict[str, int] = {}
    values: Dict[str, ast.AST] = {}
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            counts[child.id] = counts.get(child.id, 0) + 1
        if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
            values[child.targets[0].id] = child.value
        stack.extend(ast.iter_child_nodes(child))
    return {name: value for name, value in values.items() if counts.get(name) == 1}
