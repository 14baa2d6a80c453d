"""Source positions of the few nodes a file's findings and fixes name.

LibCST's ``PositionProvider`` generates the module's code while tracking the line and column
after every token and storing a range for every node: on a large file that costs more than
parsing it, for the handful of nodes the findings need. Here the code is generated once
without that bookkeeping; only the wanted nodes note which tokens they span, and those token
indices are turned into lines and columns at the end. The rules for where a node starts and
ends (syntactic positions, hoisted children) are LibCST's own, so the ranges are the same as
``PositionProvider``'s, which a test checks on every node of the fixtures.

When Python's ``ast`` tree of the same source is at hand, only the top-level statements that
hold the wanted nodes are generated: ``ast`` says on which line each statement starts, and
the generated text is checked against the source there (any doubt falls back to the whole
module). On a 28,000-line file with one finding that is most of the cost of a finding.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

from .analysis.walk import descendants

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
    the nodes named when it was built (``source`` and ``tree``: the text the module was
    parsed from and its ``ast`` tree, which let it generate only the statements needed)."""

    def __init__(
        self,
        module: cst.Module,
        nodes: Iterable[cst.CSTNode],
        source: Optional[str] = None,
        tree: Optional[ast.Module] = None,
    ) -> None:
        wanted = {id(node): node for node in nodes}
        ranges = None
        if source is not None and tree is not None:
            ranges = _statement_ranges(module, wanted, source, tree)
        self._ranges = ranges if ranges is not None else _spans_to_ranges(_generate(module, module, wanted), 0)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        return self._ranges[id(node)]


def _generate(module: cst.Module, root: cst.CSTNode, wanted: Dict[int, cst.CSTNode]) -> _TargetedCodegenState:
    state = _TargetedCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        wanted=dict(wanted),
    )
    root._codegen(state)
    return state


def _spans_to_ranges(state: _TargetedCodegenState, first_line: int) -> Dict[int, CodeRange]:
    offsets = [0, *itertools.accumulate(len(token) for token in state.tokens)]
    text = "".join(state.tokens)
    breaks = [match.end() for match in _NEWLINE.finditer(text)]

    def position(token_index: int) -> CodePosition:
        offset = offsets[min(token_index, len(offsets) - 1)]
        line = bisect.bisect_right(breaks, offset)
        return CodePosition(first_line + line + 1, offset - (breaks[line - 1] if line else 0))

    return {key: CodeRange(position(start), position(end)) for key, (start, end) in state.spans.items()}


def _statement_ranges(
    module: cst.Module, wanted: Dict[int, cst.CSTNode], source: str, tree: ast.Module
) -> Optional[Dict[int, CodeRange]]:
    """The wanted nodes' ranges from generating only the top-level statements that hold
    them; None when that cannot be done with certainty."""
    holders = _holding_statements(module, wanted)
    starts = statement_lines(module, tree) if holders else None
    if holders is None or starts is None:
        return None
    line_offsets = [0, *(match.end() for match in _NEWLINE.finditer(source))]
    ranges: Dict[int, CodeRange] = {}
    for index in holders:
        first_line = starts[index]
        if not 0 <= first_line < len(line_offsets):
            return None
        state = _generate(module, module.body[index], wanted)
        text = "".join(state.tokens)
        at = line_offsets[first_line]
        if source[at : at + len(text)] != text:
            return None  # not where ast says: let the whole module decide
        ranges.update(_spans_to_ranges(state, first_line))
    if not all(key in ranges for key in wanted):
        return None
    return ranges


def _holding_statements(module: cst.Module, wanted: Dict[int, cst.CSTNode]) -> Optional[List[int]]:
    """The indices of the top-level statements that hold the wanted nodes (None: some node
    is not under any statement)."""
    remaining = set(wanted)
    found: List[int] = []
    for index, statement in enumerate(module.body):
        held = {id(node) for node in descendants(statement)} & remaining
        if held:
            remaining -= held
            found.append(index)
        if not remaining:
            return found
    return None


def statement_lines(module: cst.Module, tree: ast.Module) -> Optional[Sequence[int]]:
    """For each top-level LibCST statement, the 0-based line its code starts on (its
    leading blank and comment lines included), from ``ast``'s line numbers; None when the
    two trees do not pair up statement for statement."""
    paired = paired_statements(module.body, tree.body)
    return None if paired is None else [line for line, _ in paired]


def line_starts(text: str) -> List[int]:
    """The offset at which each line of ``text`` starts, as LibCST breaks lines."""
    return [0, *(match.end() for match in _NEWLINE.finditer(text))]


def paired_statements(statements: Sequence[cst.BaseStatement], nodes: Sequence[ast.stmt]) -> Optional[List[Tuple[int, ast.stmt]]]:
    """For each LibCST statement of a block, the 0-based line its code starts on (leading
    blank and comment lines included) and the first ``ast`` statement it stands for; None
    when the two blocks do not pair up statement for statement."""
    remaining = iter(nodes)
    out: List[Tuple[int, ast.stmt]] = []
    for statement in statements:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        group = [node for _, node in zip(range(count), remaining)]
        if len(group) != count:
            return None
        first = group[0]
        line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))])
        out.append((line - 1 - len(statement.leading_lines), first))
    if next(remaining, None) is not None:
        return None
    return out


class _Everything(Dict[int, cst.CSTNode]):
    """The ``wanted`` of a generation that records every node's tokens."""

    def __contains__(self, key: object) -> bool:
        return True


class StatementPositions:
    """The range of any node of one top-level statement, ``module.body[index]``, whose code
    starts on 0-based line ``first_line`` (``statement_lines``): the statement is generated
    once, noting every node's tokens, and a node's range is worked out when asked (the
    value engine asks about many nodes of the same statement, a class's methods)."""

    def __init__(self, module: cst.Module, index: int, first_line: int, member: Optional[Tuple[cst.CSTNode, str]] = None) -> None:
        state = _TargetedCodegenState(default_indent=module.default_indent, default_newline=module.default_newline, wanted=_Everything())
        if member is None:
            module.body[index]._codegen(state)
        else:  # one statement of a top-level class's body, at that body's indentation
            state.increase_indent(member[1])
            member[0]._codegen(state)
        self.text = "".join(state.tokens)
        self._spans = state.spans
        self._offsets = [0, *itertools.accumulate(len(token) for token in state.tokens)]
        self._breaks = [match.end() for match in _NEWLINE.finditer(self.text)]
        self._first_line = first_line

    def get(self, node: cst.CSTNode) -> Optional[CodeRange]:
        """The node's range in the file; None for a node not in the statement."""
        span = self._spans.get(id(node))
        return None if span is None else CodeRange(self._position(span[0]), self._position(span[1]))

    def _position(self, token_index: int) -> CodePosition:
        offset = self._offsets[min(token_index, len(self._offsets) - 1)]
        line = bisect.bisect_right(self._breaks, offset)
        return CodePosition(self._first_line + line + 1, offset - (self._breaks[line - 1] if line else 0))


def member_positions(
    module: cst.Module, source: str, line_starts: Sequence[int], klass: cst.ClassDef, node: ast.AST, member: cst.CSTNode
) -> Optional[StatementPositions]:
    """The node ranges of one statement of a top-level class's body (``klass``, whose ``ast``
    twin is ``node``), generated alone: a class of a thousand lines is not generated whole
    for a question about one of its methods. None when the statement cannot be placed with
    certainty: the blocks do not pair up, or its code is not in ``source`` (whose lines
    start at the offsets ``line_starts``) where ``ast`` puts it."""
    block = klass.body
    if not isinstance(block, cst.IndentedBlock) or not isinstance(node, ast.ClassDef):
        return None
    index = next((i for i, statement in enumerate(block.body) if statement is member), None)
    paired = None if index is None else paired_statements(block.body, node.body)
    if index is None or paired is None:
        return None
    first_line = paired[index][0]
    indent = module.default_indent if block.indent is None else block.indent
    positions = StatementPositions(module, -1, first_line, member=(member, indent))
    if not 0 <= first_line < len(line_starts):
        return None
    at = line_starts[first_line]
    if source[at : at + len(positions.text)] != positions.text:
        return None
    return positions
