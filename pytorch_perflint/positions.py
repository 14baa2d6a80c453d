"""Source positions of the few nodes a file's findings and fixes name.

LibCST's ``PositionProvider`` generates the module's code while tracking the line and column
after every token and storing a range for every node: on a large file that costs more than
parsing it, for the handful of nodes the findings need. Here the code is generated once
without that bookkeeping; only the wanted nodes note which tokens they span, and those token
indices are turned into lines and columns at the end. The rules for where a node starts and
ends (syntactic positions, hoisted children) are LibCST's own, so the ranges are the same as
``PositionProvider``'s, which a test checks on every node of the fixtures.
"""

from __future__ import annotations

import bisect
import itertools
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")  # what LibCST counts as a line break


@dataclass
class _TargetedCodegenState(CodegenState):
    """Code generation that records, for the wanted nodes only, the tokens they span."""

    wanted: Dict[int, cst.CSTNode] = field(default_factory=dict)
    spans: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    starts: Dict[int, List[int]] = field(default_factory=dict)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.starts.setdefault(id(node), []).append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            start = self.starts[id(node)].pop()
            self.spans.setdefault(id(node), (start, len(self.tokens)))

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: Optional[cst.CSTNode] = None,
        end_node: Optional[cst.CSTNode] = None,
    ) -> Iterator[None]:
        if id(node) not in self.wanted:
            yield
            return
        for child in (start_node, end_node):  # their ranges bound this node's
            if child is not None:
                self.wanted[id(child)] = child
        start = len(self.tokens)
        yield
        end = len(self.tokens)
        if start_node is not None:
            start = self.spans[id(start_node)][0]
        if end_node is not None:
            end = self.spans[id(end_node)][1]
        self.spans[id(node)] = (start, end)


class NodePositions:
    """``positions[node]`` -> the ``CodeRange`` that ``PositionProvider`` would give, for
    the nodes named when it was built."""

    def __init__(self, module: cst.Module, nodes: Iterable[cst.CSTNode]) -> None:
        state = _TargetedCodegenState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            wanted={id(node): node for node in nodes},
        )
        module._codegen(state)
        offsets = [0, *itertools.accumulate(len(token) for token in state.tokens)]
        text = "".join(state.tokens)
        breaks = [match.end() for match in _NEWLINE.finditer(text)]

        def position(token_index: int) -> CodePosition:
            offset = offsets[min(token_index, len(offsets) - 1)]
            line = bisect.bisect_right(breaks, offset)
            return CodePosition(line + 1, offset - (breaks[line - 1] if line else 0))

        self._ranges = {key: CodeRange(position(start), position(end)) for key, (start, end) in state.spans.items()}

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        return self._ranges[id(node)]
