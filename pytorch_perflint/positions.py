"""Source positions of reported nodes, computed one top-level statement at a time.

LibCST's ``PositionProvider`` generates the code of the whole module while tracking the
position of every node: on a large file that costs more than parsing it, for the handful of
nodes a file's findings name. A node's position inside its top-level statement does not
depend on the rest of the module, so only the statements that hold findings are tracked,
shifted by the number of lines before them. A node outside those statements falls back to
the whole-module provider, so the answer is always LibCST's own.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional

import libcst as cst
from libcst.metadata import CodeRange, CodePosition, MetadataWrapper, PositionProvider


class StatementPositions:
    """``positions[node]`` -> the node's ``CodeRange``, as ``PositionProvider`` gives it."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._ranges: Dict[cst.CSTNode, CodeRange] = {}
        self._tracked: set = set()
        self._first_lines: Optional[Dict[int, int]] = None
        self._full: Optional[Mapping[cst.CSTNode, CodeRange]] = None

    def track(self, statement: Optional[cst.CSTNode]) -> None:
        """Compute the positions of the nodes in one top-level statement of the module."""
        if statement is None or id(statement) in self._tracked:
            return
        self._tracked.add(id(statement))
        first_line = self._statement_lines().get(id(statement))
        if first_line is None:
            return
        alone = self.module.with_changes(body=[statement], header=(), footer=())
        shift = first_line - 1
        for node, found in MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider).items():
            self._ranges[node] = CodeRange(
                CodePosition(found.start.line + shift, found.start.column),
                CodePosition(found.end.line + shift, found.end.column),
            )

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is not None:
            return found
        if self._full is None:
            self._full = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return self._full[node]

    def _statement_lines(self) -> Dict[int, int]:
        """id(top-level statement) -> the line its code (leading comments included) starts on."""
        if self._first_lines is None:
            module = self.module
            line = 1 + sum(module.code_for_node(empty).count("\n") for empty in module.header)
            lines: Dict[int, int] = {}
            for statement in module.body:
                lines[id(statement)] = line
                line += module.code_for_node(statement).count("\n")
            self._first_lines = lines
        return self._first_lines


def top_level_statement(ancestors: List[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The module-level statement the innermost of ``ancestors`` stands in, if any."""
    if len(ancestors) > 1 and isinstance(ancestors[0], cst.Module):
        return ancestors[1]
    return None
