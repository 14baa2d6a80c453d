"""A sampler a module-level helper returns, followed to callers in other modules (TPF105).

``project_iterations.sampler_walked_every_epoch`` reads callers that bind the helper's
result to a name, pass that name as ``sampler=`` and walk the loader in a loop of their
own. A caller may as well pass the call itself (``loader = DataLoader(ds,
sampler=data_sampler(ds, shuffle=True, distributed=d))``), or hand the loader once to a
project function that walks it in an epoch loop of its own, an endless generator over it
included (``endless_walks``). Such a caller counts when the loader is bound once, outside
loops, and walked every epoch. A caller module that mentions ``set_epoch`` (or imports a
project module that does) never counts.
"""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Tuple

from ...project import ProjectIndex
from ...project.forms import dotted
from .caller_scopes import caller_scopes
from .project_iterations import (
    _Walker, _assignment, _holds_in_loop, _loader_taking, _name_walked, _passes_true,
    sampler_walked_every_epoch as _bound_sampler_walked,
)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def sampler_walked_every_epoch(
    index: ProjectIndex, path: str, helper: str, shuffle: Optional[str], unless_text: str, unless_name: "re.Pattern[str]"
) -> bool:
    """The helper's sampler feeds a loader some caller elsewhere walks every epoch, bound to
    a name first (``project_iterations``) or passed straight as ``sampler=``."""
    if _bound_sampler_walked(index, path, helper, shuffle, unless_text, unless_name):
        return True
    return _inline_sampler_walked(index, path, helper, shuffle, unless_text, unless_name)


def _inline_sampler_walked(
    index: ProjectIndex, path: str, helper: str, shuffle: Optional[str], unless_text: str, unless_name: "re.Pattern[str]"
) -> bool:
    for caller_path, site, body, params in caller_scopes(index, path, helper, unless_text):
        loader, sampler = _loader_of(body, site.line, site.callee)
        if loader is None or sampler is None:
            continue
        if shuffle is not None and not _passes_true(sampler, shuffle, params):  # type: ignore[arg-type]
            continue
        name = loader.targets[0].id  # type: ignore[attr-defined]
        own = _scope_nodes(body)
        if unless_name.search(name) or _holds_in_loop(body, loader) or len([n for n in own if _stores(n, name)]) != 1:
            continue
        walker = _Walker(index, caller_path, unless_text, unless_name)
        if _name_walked(body, loader, name, unless_name, walker):
            return True
        if any(walker.walks_every_epoch(n, (name,)) for n in own if not _holds_in_loop(body, n)):
            return True
    return False


def _loader_of(body: Sequence[ast.stmt], line: int, callee: str) -> Tuple[Optional[ast.Assign], Optional[ast.Call]]:
    """The loader the helper's call at ``line`` feeds and that call: passed straight as
    ``sampler=``, or bound once to a name a ``DataLoader(..., sampler=name)`` takes."""
    loader = _loader_passing(body, line, callee)
    if loader is not None:
        return loader, next(k.value for k in loader.value.keywords if k.arg == "sampler")  # type: ignore[attr-defined, return-value]
    assign = _assignment(body, line, callee)
    target = assign.targets[0] if assign is not None else None
    if type(target) is not ast.Name or len([n for n in _scope_nodes(body) if _stores(n, target.id)]) != 1:  # type: ignore[union-attr]
        return None, None
    return _loader_taking(body, target.id), assign.value  # type: ignore[union-attr, return-value]


def _loader_passing(body: Sequence[ast.stmt], line: int, callee: str) -> Optional[ast.Assign]:
    """``name = DataLoader(..., sampler=callee(...))`` whose sampler call starts on ``line``."""
    for node in _scope_nodes(body):
        if type(node) is not ast.Assign or len(node.targets) != 1 or type(node.targets[0]) is not ast.Name:
            continue
        value = node.value
        if type(value) is not ast.Call or (dotted(value.func) or "").split(".")[-1] != "DataLoader":
            continue
        for keyword in value.keywords:
            given = keyword.value
            if keyword.arg == "sampler" and type(given) is ast.Call and given.lineno == line and dotted(given.func) == callee:
                return node
    return None


def _scope_nodes(body: Sequence[ast.stmt]) -> List[ast.AST]:
    """The nodes of a scope's own statements: no nested function or class (a module's
    top-level ``def`` included)."""
    out: List[ast.AST] = []
    stack: List[ast.AST] = [s for s in body if not isinstance(s, _SCOPES)]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
    return out


def _stores(node: ast.AST, name: str) -> bool:
    return (type(node) is ast.Name and node.id == name and type(node.ctx) is not ast.Load) or (  # type: ignore[attr-defined]
        isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
    )
