"""``full``: each finding with a code frame, its rule and its fix, then the summary (rich).

The layout is ruff's: a ``path:row:col: CODE [*] message`` header, the source lines around
the finding with its span underlined by carets and labelled with the code and rule name,
``= help: ...`` when the rule offers a fix, a blank line. Colour only when asked or when
the stream is a terminal; text is never wrapped (paths and code must stay copyable).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from ..types import Diagnostic, FileResult, RunSummary
from .common import Entry, display_path, entries, is_applicable, position, split_lines
from .summary import fixed_lines, summary_lines

# Lines of source shown before and after the reported span.
CONTEXT = 2
# A span longer than this shows its first and last lines with ``...`` between.
MAX_SPAN_LINES = 8
TAB = 4


def make_console(stream: TextIO, color: Optional[bool]) -> Any:
    """A rich Console writing to ``stream``: forced colour, no colour, or auto (a tty)."""
    from rich.console import Console

    def console(color_system: Optional[str]) -> Any:
        return Console(
            file=stream,
            force_terminal=color,
            no_color=color is False,
            color_system=color_system,
            soft_wrap=True,
            highlight=False,
            markup=False,
            emoji=False,
            force_jupyter=False,
        )

    made = console(None if color is False else "auto")
    if color is True and made.color_system is None:
        # Colour was asked for explicitly (--color / CI log viewers) but TERM says "dumb".
        made = console("standard")
    return made


@dataclass(frozen=True)
class FrameLine:
    """A row of the frame: a source line (``row`` set) or a caret line under it."""

    row: Optional[int]
    text: str
    carets: Tuple[int, int] = (0, 0)  # (start cell, width) on a caret line
    label: str = ""


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _span_on_line(line: str, row: int, start: Tuple[int, int], end: Tuple[int, int]) -> Tuple[int, int]:
    """The [from, to) character columns (0-based) of the span on one line."""
    (start_row, start_col), (end_row, end_col) = start, end
    first = start_col - 1 if row == start_row else len(line) - len(line.lstrip())
    last = end_col - 1 if row == end_row else len(line)
    first = max(0, min(first, len(line)))
    last = max(first, min(last, len(line)))
    return first, last


def source_lines(source: str) -> List[str]:
    """The file's lines, without the empty "line" after a final newline; at least one."""
    lines = split_lines(source)
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines or [""]


def frame(lines: Sequence[str], diagnostic: Diagnostic) -> List[FrameLine]:
    """The frame rows for a diagnostic: context, the span's lines with carets, context."""
    count = len(lines)
    start_row = min(max(diagnostic.location.row, 1), count)
    end_row = min(max(diagnostic.end_location.row, start_row), count)
    start_col = diagnostic.location.column if diagnostic.location.row <= count else len(lines[-1]) + 1
    end_col = diagnostic.end_location.column if diagnostic.end_location.row <= count else len(lines[end_row - 1]) + 1
    if end_row > start_row and end_col <= 1:
        # A span that ends at the start of a line (a whole statement and its newline)
        # underlines up to the end of the line before.
        end_row -= 1
        end_col = len(lines[end_row - 1]) + 1
    start, end = (start_row, start_col), (end_row, end_col)

    span_rows = list(range(start_row, end_row + 1))
    if len(span_rows) > MAX_SPAN_LINES:
        span_rows = span_rows[:3] + [-1] + span_rows[-2:]
    before = list(range(max(1, start_row - CONTEXT), start_row))
    after = list(range(end_row + 1, min(count, end_row + CONTEXT) + 1))
    while before and not lines[before[0] - 1].strip():
        before.pop(0)
    while after and not lines[after[-1] - 1].strip():
        after.pop()

    label = f"{diagnostic.code} {diagnostic.name}"
    rows: List[FrameLine] = []
    for row in before:
        rows.append(FrameLine(row, lines[row - 1].expandtabs(TAB)))
    last_marked = span_rows[-1]
    for row in span_rows:
        if row == -1:
            rows.append(FrameLine(None, "..."))
            continue
        line = lines[row - 1]
        rows.append(FrameLine(row, line.expandtabs(TAB)))
        first, last = _span_on_line(line, row, start, end)
        offset = _cells(line[:first].expandtabs(TAB))
        width = max(1, _cells(line[:last].expandtabs(TAB)) - offset)
        rows.append(FrameLine(None, "", (offset, width), label if row == last_marked else ""))
    for row in after:
        rows.append(FrameLine(row, lines[row - 1].expandtabs(TAB)))
    return rows


def _header(diagnostic: Diagnostic, root: Optional[Path], unsafe_fixes: bool, linked: bool) -> Any:
    from rich.style import Style
    from rich.text import Text

    text = Text()
    text.append(display_path(diagnostic.path, root), style="bold")
    text.append(":", style="cyan")
    for index, part in enumerate(position(diagnostic).split(":")):
        if index:
            text.append(":", style="cyan")
        text.append(part)
    text.append(":", style="cyan")
    text.append(" ")
    code_style = Style(bold=True, color="red", link=diagnostic.url if linked else None)
    text.append(diagnostic.code, style=code_style)
    text.append(" ")
    if is_applicable(diagnostic.fix, unsafe_fixes):
        text.append("[")
        text.append("*", style="cyan")
        text.append("] ")
    text.append(diagnostic.message)
    return text


def _render_frame(rows: List[FrameLine]) -> List[Any]:
    from rich.text import Text

    numbered = [r.row for r in rows if r.row is not None]
    width = len(str(max(numbered))) if numbered else 1
    pad = " " * width
    out = [Text(f"{pad} |", style="blue")]
    for row in rows:
        text = Text()
        if row.row is not None:
            text.append(f"{row.row:>{width}} |", style="blue")
            if row.text:
                text.append(" " + row.text)
        elif row.text:  # the "..." of an elided span
            text.append(f"{row.text:>{width}}", style="blue")
        else:
            text.append(f"{pad} |", style="blue")
            start, size = row.carets
            text.append(" " + " " * start)
            text.append("^" * size, style="bold red")
            if row.label:
                text.append(" " + row.label, style="bold red")
        out.append(text)
    out.append(Text(f"{pad} |", style="blue"))
    return out


def _cells_of_notebook(text: str) -> Tuple[str, ...]:
    """The code cells of a notebook's JSON text (none if it does not read as a notebook):
    a cell's finding is framed with its own cell's lines."""
    from ..notebook import NotebookError, cell_sources, load

    try:
        return cell_sources(load(text))
    except NotebookError:
        return ()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _Sink:
    """Writes rich Text: through the console when styled, as plain text otherwise.

    Plain text skips rich's render pipeline, which dominates the time of a large report.
    """

    def __init__(self, stream: TextIO, color: Optional[bool]) -> None:
        self.stream = stream
        self.console = make_console(stream, color)
        self.styled = self.console.color_system is not None or (self.console.is_terminal and color is not False)

    def line(self, text: Any = "") -> None:
        if self.styled:
            self.console.print(text)
        else:
            self.stream.write((text if isinstance(text, str) else text.plain) + "\n")


def _block(entry: Entry, lines: Optional[Sequence[str]], root: Optional[Path], unsafe_fixes: bool, linked: bool) -> Any:
    """One finding: header, frame, help line, then a blank line, as a single Text."""
    from rich.text import Text

    diagnostic = entry.diagnostic
    parts = [_header(diagnostic, root, unsafe_fixes, linked)]
    rows = frame(lines, diagnostic) if lines is not None else []
    if rows:
        parts.extend(_render_frame(rows))
    if diagnostic.fix is not None:
        width = len(str(max((r.row for r in rows if r.row is not None), default=1)))
        help_line = Text()
        help_line.append(" " * width + " = ", style="blue")
        help_line.append("help", style="bold cyan")
        help_line.append(": " + diagnostic.fix.message)
        parts.append(help_line)
    parts.append(Text())
    return Text("\n").join(parts)


def write(
    results: Sequence[FileResult],
    stream: TextIO,
    *,
    summary: RunSummary,
    statistics: bool,
    show_fixes: bool,
    root: Optional[Path],
    color: Optional[bool],
    unsafe_fixes: bool,
    quiet: bool = False,
) -> None:
    from rich.text import Text

    sink = _Sink(stream, color)
    if statistics:
        from . import statistics as stats

        rows = stats.compute(results, unsafe_fixes=unsafe_fixes)
        if sink.styled:
            stats.write_rich(rows, sink.console)
        else:
            stats.write_text(rows, stream)
    else:
        # Hyperlinks (OSC 8) only on a real terminal: CI log viewers show them as garbage.
        linked = sink.styled and color is not False and _isatty(stream)
        lines_of: Dict[Tuple[int, Optional[int]], Optional[List[str]]] = {}
        cells_of: Dict[int, Tuple[str, ...]] = {}
        for entry in entries(results):
            cell = entry.diagnostic.cell
            key = (id(entry.result), cell)
            if key not in lines_of:
                source = entry.result.source
                if source is not None and cell is not None:
                    if id(entry.result) not in cells_of:
                        cells_of[id(entry.result)] = _cells_of_notebook(source)
                    cells = cells_of[id(entry.result)]
                    source = cells[cell - 1] if 0 < cell <= len(cells) else None
                lines_of[key] = source_lines(source) if source is not None else None
            sink.line(_block(entry, lines_of[key], root, unsafe_fixes, linked))
    if show_fixes:
        fixes = fixed_lines(results, root)
        if fixes:
            for line in fixes:
                sink.line(Text(line, style="bold" if line.startswith("Fixed") else ""))
            sink.line()
    if quiet:
        return
    for line in summary_lines(summary, unsafe_fixes=unsafe_fixes):
        if line.fix_hint:
            text = Text("[")
            text.append("*", style="cyan")
            text.append(line.text[2:])
            sink.line(text)
        else:
            sink.line(Text(line.text))
