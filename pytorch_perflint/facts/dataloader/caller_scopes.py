"""The callers in other modules of a module-level helper, each with the body of the scope
that calls it (read with ``ast`` from its text): what the cross-file TPF103/TPF105 checks
(``project_iterations``, ``sampler_callers``) read a caller's loader and loops from."""

from __future__ import annotations

import ast
import os
from typing import Iterator, List, Optional, Sequence, Tuple

from ...project import ProjectIndex
from ...project.reads import spells
from ...project.summarizer import parse_tree
from ...project.summary import CallSite

__all__ = ["caller_scopes", "mentions", "scope_body"]


def caller_scopes(
    index: ProjectIndex, path: str, helper: str, unless_text: str
) -> Iterator[Tuple[str, CallSite, Sequence[ast.stmt], List[str]]]:
    """For module-level function ``helper`` of ``path``: each call of it from another module
    (outside loops, no ``*``/``**``), in a module that never mentions ``unless_text``; with
    the caller's path, the call site, the calling scope's body and the helper's positional
    parameters."""
    path = os.path.abspath(path)
    found = index.resolve(path, helper)
    if found is None or found.kind != "function" or found.path != path or found.function is None:
        return
    params = [p.name for p in found.function.params if p.kind == "positional"]
    for caller_path, site in index.callers(found) or ():
        if caller_path == path or site.in_loop or site.star or site.dstar:
            continue
        text = index.text(caller_path)
        if text is None or mentions(index, caller_path, text, unless_text):
            continue
        tree = parse_tree(text)
        body = scope_body(tree, site.caller) if tree is not None else None
        if body is not None:
            yield caller_path, site, body, params


def mentions(index: ProjectIndex, path: str, text: str, word: str) -> bool:
    """``word`` is in the module's text or in a project module it imports (one that cannot
    be read counts as mentioning it)."""
    if word in text:
        return True
    for imported in index.imported_modules(path):
        if spells(index, imported, word) is not False:
            return True
    return False


def scope_body(tree: ast.Module, caller: str) -> Optional[List[ast.stmt]]:
    """The statements of the function ``caller`` names (``""``: the module, ``f``,
    ``Class.method``), when exactly one top-level definition matches."""
    body: List[ast.stmt] = tree.body
    for part in caller.split(".") if caller else ():
        matches = [s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == part]
        if len(matches) != 1:
            return None
        body = matches[0].body
    return body
