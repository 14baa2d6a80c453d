"""Endless generators over a loader (TPF105 across files).

``def sample_data(loader): while True: for batch in loader: yield batch`` walks its loader
again and again: each pass of the ``while True`` is an epoch, so a function that rebinds
its loader parameter to such a generator of the project (``loader = sample_data(loader)``,
then ``next(loader)`` per step) walks the loader every epoch, as the rule's own module
reads a generator (``loader_sources``). Read with ``ast`` from the project index.
"""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence

from ...project import ProjectIndex
from ...project.forms import dotted
from ...project.summarizer import parse_tree

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def walks_endlessly(
    index: ProjectIndex,
    path: str,
    function: ast.FunctionDef,
    parameter: str,
    guarded: Sequence[ast.AST],
    unless_text: Optional[str],
    unless_name: Optional["re.Pattern[str]"],
) -> bool:
    """``function`` (of module ``path``) binds ``parameter`` once more, to ``gen(parameter)``
    where ``gen`` is an endless generator of the project over its first parameter, outside
    ``guarded`` (no-grad) blocks, and reads the name after that. Only for TPF105
    (``unless_name`` given), and not when the generator's module mentions ``unless_text``."""
    if unless_name is None:
        return False
    stores = [n for n in _own_nodes(function.body) if type(n) is ast.Name and n.id == parameter and type(n.ctx) is not ast.Load]
    if len(stores) != 1:
        return False
    rebinding = next(
        (s for s in _own_nodes(function.body) if type(s) is ast.Assign and len(s.targets) == 1 and s.targets[0] is stores[0]), None
    )
    value = rebinding.value if rebinding is not None else None
    if type(value) is not ast.Call or len(value.args) != 1 or value.keywords:  # type: ignore[union-attr]
        return False
    first = value.args[0]  # type: ignore[union-attr]
    if type(first) is not ast.Name or first.id != parameter or any(_holds(g, rebinding) for g in guarded):  # type: ignore[arg-type]
        return False
    reads = [
        n for n in _own_nodes(function.body)
        if type(n) is ast.Name and n.id == parameter and type(n.ctx) is ast.Load and n.lineno > rebinding.end_lineno  # type: ignore[union-attr, operator]
    ]
    if not reads or all(any(_holds(g, n) for g in guarded) for n in reads):
        return False
    return is_endless_generator(index, path, dotted(value.func), unless_text)  # type: ignore[union-attr]


def is_endless_generator(index: ProjectIndex, path: str, callee: Optional[str], unless_text: Optional[str]) -> bool:
    """``callee`` (read in module ``path``) is a project function whose body walks its first
    parameter inside a ``while True:`` loop and yields, never rebinding that parameter."""
    found = index.resolve(path, callee) if callee else None
    if found is None or found.kind != "function" or found.function is None or found.path is None:
        return False
    text = index.text(found.path)
    if text is None or (unless_text is not None and unless_text in text):
        return False
    tree = parse_tree(text)
    function = next(
        (s for s in ast.walk(tree) if type(s) is ast.FunctionDef and s.name == found.function.name and s.lineno == found.function.line),
        None,
    ) if tree is not None else None
    if function is None or not function.args.args:
        return False
    parameter = function.args.args[0].arg
    nodes = list(_own_nodes(function.body))
    if not any(type(n) in (ast.Yield, ast.YieldFrom) for n in nodes):
        return False
    if any(type(n) is ast.Name and n.id == parameter and type(n.ctx) is not ast.Load for n in nodes):
        return False
    for loop in nodes:
        if type(loop) is ast.While and type(loop.test) is ast.Constant and loop.test.value in (True, 1):
            if any(type(n) is ast.For and type(n.iter) is ast.Name and n.iter.id == parameter for n in _own_nodes(loop.body)):
                return True
    return False


def _own_nodes(body: Sequence[ast.AST]) -> List[ast.AST]:
    """The nodes of a scope's statements, not those of nested functions or classes."""
    out: List[ast.AST] = []
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    return out


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(outer))
