"""Whether a loader that a helper of this module returns is iterated every epoch by a
caller in another module of the project (TPF103 across files).

``data.py``: ``def get_loaders(): ...; return train_loader, val_loader``; ``train.py``:
``train_loader, val_loader = get_loaders()`` once, then ``for epoch in ...: for x in
train_loader:``. The callers come from the project index (``callers``: None when they
cannot all be known, and then nothing is claimed); each caller's function is read with
``ast`` from its module. A caller counts when it binds the helper's result (or the tuple
element that holds the loader) to a name bound once in its function, not inside a loop,
and walks that name (directly or through ``enumerate``/``iter``/``tqdm``) inside a loop
of the same function that does not hold the binding.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from typing import Iterator, List, Optional, Sequence

from ...project import ProjectIndex
from ...project.forms import dotted

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_PASS_THROUGH = frozenset({"enumerate", "iter", "tqdm"})


def iterated_every_epoch(
    index: ProjectIndex,
    path: str,
    helper: str,
    element: Optional[int],
    unless_text: Optional[str] = None,
    unless_name: Optional["re.Pattern[str]"] = None,
) -> bool:
    """Some caller of module-level function ``helper`` (of module ``path``) in another
    module walks the loader it returns (element ``element`` of a returned tuple) inside an
    outer loop. A caller whose module, or a project module it imports, contains
    ``unless_text`` (TPF105: ``set_epoch``), or that binds the loader to a name
    ``unless_name`` matches (``val_loader``), does not count."""
    path = os.path.abspath(path)
    found = index.resolve(path, helper)
    if found is None or found.kind != "function" or found.path != path:
        return False
    callers = index.callers(found)
    if not callers:
        return False
    for caller_path, site in callers:
        if caller_path == path or site.in_loop or site.star or site.dstar:
            continue
        text = index.text(caller_path)
        if unless_text is not None and (text is None or _mentions(index, caller_path, text, unless_text)):
            continue
        tree = _parse(text) if text is not None else None
        body = _scope_body(tree, site.caller) if tree is not None else None
        if body is not None and _walked_in_a_loop(body, site.line, site.callee, element, unless_name):
            return True
    return False


def _mentions(index: ProjectIndex, path: str, text: str, word: str) -> bool:
    """``word`` is in the module's text or in a project module it imports (one that cannot
    be read counts as mentioning it)."""
    if word in text:
        return True
    for imported in index.imported_modules(path):
        other = index.text(imported)
        if other is None or word in other:
            return True
    return False


def _parse(text: str) -> Optional[ast.Module]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _scope_body(tree: ast.Module, caller: str) -> Optional[List[ast.stmt]]:
    """The statements of the function ``caller`` names (``""``: the module, ``f``,
    ``Class.method``), when exactly one top-level definition matches."""
    body: List[ast.stmt] = tree.body
    for part in caller.split(".") if caller else ():
        matches = [s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == part]
        if len(matches) != 1:
            return None
        body = matches[0].body
    return body


def _own_nodes(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a scope's statements, not those of nested functions or classes."""
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))


def _walked_in_a_loop(
    body: Sequence[ast.stmt], line: int, callee: str, element: Optional[int], unless_name: Optional["re.Pattern[str]"] = None
) -> bool:
    assign = next(
        (
            n
            for n in _own_nodes(body)
            if type(n) is ast.Assign
            and len(n.targets) == 1
            and type(n.value) is ast.Call
            and n.value.lineno == line
            and dotted(n.value.func) == callee
        ),
        None,
    )
    if assign is None:
        return False
    name = _bound_name(assign.targets[0], element)
    if name is None or (unless_name is not None and unless_name.search(name)):
        return False
    stores = [n for n in _own_nodes(body) if type(n) is ast.Name and n.id == name and type(n.ctx) is not ast.Load]
    declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names for n in _own_nodes(body))
    if len(stores) != 1 or declared:
        return False
    for loop in _own_nodes(body):
        if not isinstance(loop, _LOOPS) or _holds(loop, assign) or _holds_in_loop(body, assign):
            continue
        if any(_walks(inner, name) for inner in _own_nodes(loop.body) if inner is not loop):
            return True
    return False


def _bound_name(target: ast.AST, element: Optional[int]) -> Optional[str]:
    if element is None:
        return target.id if type(target) is ast.Name else None  # type: ignore[attr-defined]
    if type(target) not in (ast.Tuple, ast.List):
        return None
    items = target.elts  # type: ignore[attr-defined]
    if any(type(e) is ast.Starred for e in items) or element >= len(items):
        return None
    chosen = items[element]
    return chosen.id if type(chosen) is ast.Name else None


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(outer))


def _holds_in_loop(body: Sequence[ast.stmt], node: ast.AST) -> bool:
    """The binding itself runs in a loop of the scope (a new loader each time round)."""
    return any(isinstance(n, _LOOPS) and _holds(n, node) for n in _own_nodes(body))


def _walks(node: ast.AST, name: str) -> bool:
    """``for ... in name`` (or ``enumerate(name)``, ``iter(name)``, ``tqdm(name)``)."""
    if not isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return False
    expr = node.iter
    while type(expr) is ast.Call and expr.args and type(expr.args[0]) is not ast.Starred:  # type: ignore[attr-defined]
        func = dotted(expr.func) or ""  # type: ignore[attr-defined]
        if func.split(".")[-1] not in _PASS_THROUGH:
            return False
        expr = expr.args[0]  # type: ignore[attr-defined]
    return type(expr) is ast.Name and expr.id == name  # type: ignore[attr-defined]
