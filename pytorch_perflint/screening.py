"""The rules' pre-screens as the engine asks them of one file, cheapest first: the text
(``Rule.could_fire``), the ``ast`` tree (``could_fire_tree``), and the project with the tree
(``could_fire_project``, or its ``project_question`` answered where the tree is gone). A
screen that fails keeps its rule: a screen must never cost the file its other findings."""

from __future__ import annotations

import ast
from typing import Hashable, List, Optional, Tuple, Type

from .project.index import ProjectIndex
from .pyparse import verdict
from .rule import Rule

# Rules whose ``could_fire_tree`` answers None have no ast screen; remembered per class.
_NO_TREE_SCREEN: set = set()
_EMPTY_TREE = ast.Module(body=[], type_ignores=[])


def screen_with_ast(
    active: List[Type[Rule]], source: str, parsed: Optional[ast.Module] = None
) -> Tuple[List[Type[Rule]], Optional[ast.Module]]:
    """Drop the rules whose ast pre-screen says they cannot fire (one ``ast.parse``, and
    only when a candidate rule has such a screen), and give the ``ast`` tree when it was
    parsed (None: not tried, or a syntax error, when every rule stays: LibCST reports it)."""
    screened = [r for r in active if r not in _NO_TREE_SCREEN]
    for rule in screened:
        if rule.could_fire_tree(_EMPTY_TREE) is None:
            _NO_TREE_SCREEN.add(rule)
    screened = [r for r in screened if r not in _NO_TREE_SCREEN]
    if not screened:
        return active, parsed
    tree = parsed if parsed is not None else ast_tree(source)
    if tree is None:
        return active, None
    return [r for r in active if r in _NO_TREE_SCREEN or r.could_fire_tree(tree)], tree


def ast_tree(source: str) -> Optional[ast.Module]:
    """The ``ast`` tree of a text, None for one Python cannot parse."""
    return verdict(source)[0]


def could_fire_in_project(rule: Type[Rule], tree: ast.Module, path: str, project: ProjectIndex) -> bool:
    """The rule's project screen; one that fails keeps the rule, whose run then reports
    any error as that rule's own (a screen must never cost the file its other findings)."""
    try:
        return rule.could_fire_project(tree, path, project)
    except Exception:  # noqa: BLE001 - see above
        return True


def project_question(rule: Type[Rule], tree: Optional[ast.Module]) -> Optional[Hashable]:
    """The rule's project question of the tree; None (screen with the tree) when it fails."""
    try:
        return rule.project_question(tree) if tree is not None else None
    except Exception:  # noqa: BLE001 - see could_fire_in_project
        return None


def could_fire_answering(rule: Type[Rule], question: Hashable, path: str, project: ProjectIndex) -> Optional[bool]:
    """The rule's project screen from its question (None: ask it with the tree); one that
    fails keeps the rule."""
    try:
        return rule.could_fire_answering(question, path, project)
    except Exception:  # noqa: BLE001 - see could_fire_in_project
        return True
