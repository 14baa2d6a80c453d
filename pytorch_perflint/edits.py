"""The text edits of single fixes, as the JSON and SARIF output carry them.

The plain way to get one fix's edits is to apply it to the whole module, render the whole
module and diff it against the source (``whole_module_edits``, kept for what cannot be spliced). Per fix, that is a pass
over the whole file: a large file with many findings made JSON and SARIF output quadratic
(48.7 s against 2.6 s for concise on torch's 11,000-line distributed_test.py).

Here each replaced node is rendered on its own, in the indentation of the line it starts
on, and spliced into the source text where it stands; only those few lines are diffed.
Every splice is checked first: the *old* node, rendered the same way, must be exactly the
source text it is about to replace. When it is not (a node on a continuation line), for
a node whose rendering depends on its parent (an argument's comma, unless it is the last),
or for replacements that remove or multiply nodes, that fix falls back to the
whole-module way.
Imports a fix adds are found once per file and set of imports, the whole-module way.
"""

from __future__ import annotations

import bisect
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange

from .positions import _TargetedCodegenState
from .finding import NodeFix
from .transform import apply_fixes, keep_line_endings, mixed_line_endings, text_edits, transplant
from .types import Edit, Location

_NEWLINE = re.compile(r"\r\n?|\n")  # LibCST's line breaks
_INDENT = re.compile(r"[ \t\f]*")
# Nodes whose code does not depend on their parent: an expression or a whole statement.
_SELF_CONTAINED = (cst.BaseExpression, cst.BaseStatement)
# Nodes whose separator the parent supplies when it is left at its default: the last one
# of their sequence gets none, as on their own.
_SEPARATED = ((cst.BaseSmallStatement, "semicolon"), (cst.Arg, "comma"))


def _splicable(old: cst.CSTNode, new: object) -> bool:
    """Whether ``new`` renders on its own as it would in ``old``'s place."""
    if isinstance(old, _SELF_CONTAINED) and isinstance(new, _SELF_CONTAINED):
        return True
    for kind, separator in _SEPARATED:
        if isinstance(old, kind) and isinstance(new, kind):
            # Parsed, only the last of a sequence has a default separator.
            return getattr(old, separator) is cst.MaybeSentinel.DEFAULT
    return False


class FixEdits:
    """Edits of single fixes on one parsed file (``module`` parsed from ``source``)."""

    def __init__(self, module: cst.Module, source: str, positions) -> None:
        self.module = module
        self.source = source
        self.positions = positions  # NodePositions of (at least) every replaced node
        self.line_starts = [0, *(match.end() for match in _NEWLINE.finditer(source))]
        self._imports: Dict[Tuple[str, ...], Tuple[Edit, ...]] = {}
        self._rendered: Optional[str] = None

    def edits(self, fix: NodeFix) -> Tuple[Edit, ...]:
        local = self._local(fix)
        if local is None:
            return self._whole(fix)
        if fix.imports:
            added = self._import_edits(fix.imports)
            if _touch(added, local):
                return self._whole(fix)
            local = tuple(sorted(added + local, key=lambda edit: edit.location))
        return local

    def _whole(self, fix: NodeFix) -> Tuple[Edit, ...]:
        if self._rendered is None:
            self._rendered = self.module.code
        return whole_module_edits(self.module, self.source, fix, self._rendered)

    # -- replacements, spliced -----------------------------------------------------------

    def _local(self, fix: NodeFix) -> Optional[Tuple[Edit, ...]]:
        """The replacements' edits, or None when any of them cannot be spliced safely."""
        splices: List[Tuple[int, int, str]] = []
        for old, new in fix.replacements:
            if not _splicable(old, new):
                return None
            splice = self._splice(old, new)
            if splice is None:
                return None
            splices.append(splice)
        splices.sort()
        if any(a[1] > b[0] for a, b in zip(splices, splices[1:])):
            return None
        edits: List[Edit] = []
        for group in self._by_lines(splices):
            first_line = self._line_of(group[0][0])
            begin = self.line_starts[first_line]
            end = self._end_of_line(group[-1][1])
            pieces, at = [], begin
            for start, stop, text in group:
                pieces.append(self.source[at:start])
                pieces.append(text)
                at = stop
            pieces.append(self.source[at:end])
            before, after = self.source[begin:end], "".join(pieces)
            if mixed_line_endings(self.source):  # as --fix writes it (``keep_line_endings``)
                after = keep_line_endings(before, after)
            for edit in text_edits(before, after):
                edits.append(_shifted(edit, first_line))
        return tuple(edits)

    def _splice(self, old: cst.CSTNode, new: cst.CSTNode) -> Optional[Tuple[int, int, str]]:
        """(start, end, new text) in the source for one replacement, checked."""
        try:
            code_range: CodeRange = self.positions[old]
        except KeyError:
            return None
        line = code_range.start.line - 1
        if not 0 <= line < len(self.line_starts):
            return None
        line_start = self.line_starts[line]
        indent = _INDENT.match(self.source, line_start).group()  # type: ignore[union-attr]
        state = _TargetedCodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=[indent] if indent else [],
            wanted={id(old): old},
        )
        old._codegen(state)
        if id(old) not in state.spans:
            return None
        old_text = "".join(state.tokens)
        before = sum(len(token) for token in state.tokens[: state.spans[id(old)][0]])
        start = line_start + code_range.start.column - before
        if start < 0 or self.source[start : start + len(old_text)] != old_text:
            return None  # not rendered as it stands in the file: let the whole module decide
        fresh = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=[indent] if indent else [],
        )
        new._codegen(fresh)
        return start, start + len(old_text), "".join(fresh.tokens)

    def _line_of(self, offset: int) -> int:
        """The 0-based line that holds ``offset``."""
        return bisect.bisect_right(self.line_starts, offset) - 1

    def _end_of_line(self, offset: int) -> int:
        """The end of the line (after its line break) that holds the character before
        ``offset``."""
        line = self._line_of(max(offset - 1, 0))
        return self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.source)

    def _by_lines(self, splices: List[Tuple[int, int, str]]) -> List[List[Tuple[int, int, str]]]:
        """Splices grouped so that no two groups share a line."""
        groups: List[List[Tuple[int, int, str]]] = []
        for splice in splices:
            if groups and self._line_of(splice[0]) <= self._line_of(max(groups[-1][-1][1] - 1, 0)):
                groups[-1].append(splice)
            else:
                groups.append([splice])
        return groups

    # -- imports, once per file --------------------------------------------------------

    def _import_edits(self, imports: Tuple[str, ...]) -> Tuple[Edit, ...]:
        if imports not in self._imports:
            only = NodeFix(replacements=(), applicability=None, message="", imports=imports)  # type: ignore[arg-type]
            self._imports[imports] = self._whole(only)
        return self._imports[imports]


def _shifted(edit: Edit, lines: int) -> Edit:
    return Edit(
        edit.content,
        Location(edit.location.row + lines, edit.location.column),
        Location(edit.end_location.row + lines, edit.end_location.column),
    )


def _touch(a: Tuple[Edit, ...], b: Tuple[Edit, ...]) -> bool:
    """Whether two sets of line edits touch the same or adjacent lines (then their order
    when applied is not obvious: let the whole module decide)."""
    for x in a:
        for y in b:
            if x.location.row <= y.end_location.row and y.location.row <= x.end_location.row:
                return True
    return False


def whole_module_edits(module: cst.Module, source: str, fix: NodeFix, rendered: Optional[str] = None) -> Tuple[Edit, ...]:
    """One fix's edits the whole-module way, with the bytes LibCST's rendering loses (a form
    feed at a line start, a lone carriage return, a last line of only indentation) put back
    as ``--fix`` puts them back (``transform.transplant``): the edits apply to ``source``,
    the text ``module`` was parsed from."""
    rendered = module.code if rendered is None else rendered
    updated = apply_fixes(module, [fix]).code
    if rendered != source:
        kept = transplant(source, rendered, updated)
        if kept is not None:
            return text_edits(source, keep_line_endings(source, kept) if mixed_line_endings(source) else kept)
    if mixed_line_endings(rendered):
        updated = keep_line_endings(rendered, updated)
    return text_edits(rendered, updated)
