"""What a rule hands back: a finding at a node, and its fix in tree form.

These are the rule's output types. They sit below the rule contract so that the engine,
the fixer and the edits can use them without importing the contract itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

import libcst as cst

from .types import Applicability

if TYPE_CHECKING:
    from .rule import Rule

Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


@dataclass(frozen=True)
class NodeFix:
    """A fix in tree form: nodes of the parsed module and what replaces each.

    ``imports`` names modules the replacement code needs (``import torch``); the fixer adds
    each once, with LibCST's AddImportsVisitor.
    """

    replacements: Tuple[Tuple[cst.CSTNode, Replacement], ...]
    applicability: Applicability
    message: str
    imports: Tuple[str, ...] = ()


@dataclass
class Finding:
    """What a rule reported, before positions are known."""

    rule: "type[Rule]"
    node: cst.CSTNode
    message: str
    fix: Optional[NodeFix] = None


class PassFindings(list):
    """The findings of the rules' pass; ``paths``: the ancestors (the module down to it) of
    each one anchored at the node being visited, kept for ``facts.dead_arms``, which would
    otherwise walk the module to find them."""

    def __init__(self, ancestors: List[cst.CSTNode]) -> None:
        super().__init__()
        self.ancestors = ancestors  # the pass's stack, kept current by the engine
        self.paths: Dict[int, Tuple[cst.CSTNode, ...]] = {}

    def append(self, finding: Finding) -> None:
        super().append(finding)
        if self.ancestors and self.ancestors[-1] is finding.node:
            self.paths[id(finding.node)] = tuple(self.ancestors)
