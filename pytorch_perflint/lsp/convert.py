"""The engine's values in LSP terms: positions, ranges, diagnostics, text edits.

The engine counts rows from 1 and columns from 1 in characters, with lines ending at
``\\r\\n``, ``\\r`` or ``\\n`` (LibCST's rule). LSP counts both from 0, and columns in the
client's code units (UTF-16 unless the client and server agreed on UTF-8 or UTF-32), so a
column after a non-ASCII character differs between the two.
"""

from __future__ import annotations

import bisect
import re
from typing import Callable, List, Optional, Sequence, Tuple

from lsprotocol import types

from ..types import Diagnostic, Location
from .documents import Buffer, Linted, by_cell

SOURCE = "pytorch-perflint"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
# Findings that stop the file from being linted at all read as errors, the rest as warnings.
ERROR_CODES = frozenset({"TPF001"})

_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_units(text: str) -> int:
    """LSP's default column unit."""
    return len(text.encode("utf-16-le")) // 2


class Positions:
    """Converts between the engine's (row, column) and LSP positions, for one text."""

    def __init__(self, text: str, units: Callable[[str], int] = utf16_units) -> None:
        self.text = text
        self.units = units
        breaks = list(_BREAK.finditer(text))
        self.starts: List[int] = [0, *(match.end() for match in breaks)]
        self.ends: List[int] = [*(match.start() for match in breaks), len(text)]

    def offset(self, row: int, column: int) -> int:
        """The character offset of a 1-based (row, column), kept within the row's text;
        a row past the last is the end of the text."""
        line = row - 1
        if line >= len(self.starts):
            return len(self.text)
        return max(self.starts[line], min(self.starts[line] + column - 1, self.ends[line]))

    def position(self, offset: int) -> types.Position:
        line = bisect.bisect_right(self.starts, offset) - 1
        return types.Position(line=line, character=self.units(self.text[self.starts[line] : offset]))

    def at(self, location: Location) -> types.Position:
        return self.position(self.offset(location.row, location.column))

    def range(self, start: Location, end: Location) -> types.Range:
        return types.Range(start=self.at(start), end=self.at(end))

    def location(self, position: types.Position) -> Location:
        """The engine's location of an LSP position (a column inside a character: its start)."""
        line = min(position.line, len(self.starts) - 1)
        text = self.text[self.starts[line] : self.ends[line]]
        column = units = 0
        while column < len(text) and units + self.units(text[column]) <= position.character:
            units += self.units(text[column])
            column += 1
        return Location(line + 1, column + 1)


def diagnostic(found: Diagnostic, positions: Positions) -> types.Diagnostic:
    """An LSP diagnostic: code, message, range, severity, and the rule's docs link."""
    severity = types.DiagnosticSeverity.Error if found.code in ERROR_CODES else types.DiagnosticSeverity.Warning
    data = {"name": found.name}
    if found.fix is not None:
        data["fix"] = str(found.fix.applicability)
    return types.Diagnostic(
        range=positions.range(found.location, found.end_location),
        message=found.message,
        severity=severity,
        code=found.code,
        code_description=types.CodeDescription(href=found.url),
        source=SOURCE,
        data=data,
    )


def text_edit(positions: Positions, start: Location, end: Location, text: str) -> types.TextEdit:
    return types.TextEdit(range=positions.range(start, end), new_text=text)


def row_edits(positions: Positions, edits) -> List[types.TextEdit]:
    """The engine's ``Edit`` values (1-based rows and columns) as LSP text edits."""
    return [text_edit(positions, edit.location, edit.end_location, edit.content) for edit in edits]


def touches(outer: types.Range, inner: types.Range) -> bool:
    """Whether two ranges touch (a cursor at either end of a finding counts)."""
    return _key(outer.start) <= _key(inner.end) and _key(inner.start) <= _key(outer.end)


def _key(position: types.Position) -> Tuple[int, int]:
    return (position.line, position.character)


def findings_at(
    buffer: Buffer,
    linted: Linted,
    uri: str,
    where: types.Range,
    units: Callable[[str], int],
    sent: Sequence[types.Diagnostic] = (),
) -> List[Tuple[Diagnostic, types.Diagnostic]]:
    """(the engine's diagnostic on the buffer's text, its LSP form in document ``uri``) for
    each finding that ``where`` touches or that the client sent in the request's context
    (``sent``: editors send the diagnostics of the cursor's line, so a cursor at column 0
    of a flagged line gets its quick fixes, as in ruff); ``uri`` is the buffer's, or one
    of its cells'."""
    wanted = {_identity(d) for d in sent if d.source in (None, SOURCE)}
    found: List[Tuple[Diagnostic, types.Diagnostic]] = []
    for raw, text, shown_at in _shown(buffer, linted, uri):
        shown = diagnostic(shown_at, Positions(text, units))
        if touches(shown.range, where) or _identity(shown) in wanted:
            found.append((raw, shown))
    return found


def _identity(shown: types.Diagnostic) -> Tuple[str, int, int, int, int]:
    """What tells a published diagnostic from another: its code and range."""
    start, end = shown.range.start, shown.range.end
    return (str(shown.code), start.line, start.character, end.line, end.character)


def _shown(buffer: Buffer, linted: Linted, uri: str) -> List[Tuple[Diagnostic, str, Diagnostic]]:
    """(raw diagnostic, the text of document ``uri``, the diagnostic in that text's rows)."""
    if buffer.book is None:
        return [(d, buffer.text, d) for d in linted.lint.diagnostics] if uri == buffer.uri else []
    number = next((n for n, cell in enumerate(buffer.cells, start=1) if cell.uri == uri), None)
    if number is None:
        return []
    text = buffer.cells[number - 1].text
    out = []
    for raw in linted.lint.diagnostics:
        mapped: Optional[List[Diagnostic]] = by_cell(buffer.book, [raw]).get(number)
        if mapped:
            out.append((raw, text, mapped[0]))
    return out
