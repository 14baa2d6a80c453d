"""``concise``: one ``path:line:col: CODE message`` line per finding, then the summary.

Plain text, no rich: it is what editors' problem matchers and ``grep`` read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, TextIO

from ..types import FileResult, RunSummary
from .common import display_path, entries, position
from .summary import fixed_lines, summary_lines


def format_line(diagnostic, root: Optional[Path]) -> str:
    """The one line for a diagnostic (1-based line and column, no fix marker)."""
    return f"{display_path(diagnostic.path, root)}:{position(diagnostic)}: {diagnostic.code} {diagnostic.message}"


def write(
    results: Sequence[FileResult],
    stream: TextIO,
    *,
    summary: RunSummary,
    show_fixes: bool,
    root: Optional[Path],
    unsafe_fixes: bool,
    quiet: bool = False,
) -> None:
    found = entries(results)
    for entry in found:
        stream.write(format_line(entry.diagnostic, root) + "\n")
    fixes = fixed_lines(results, root) if show_fixes else []
    if fixes:
        # Set off by blank lines from the findings above and the summary below, as ruff does.
        stream.write(("\n" if found else "") + "\n".join(fixes) + "\n\n")
    if not quiet:
        write_summary(summary, stream, unsafe_fixes=unsafe_fixes)


def write_summary(summary: RunSummary, stream: TextIO, *, unsafe_fixes: bool) -> None:
    stream.write("\n".join(line.text for line in summary_lines(summary, unsafe_fixes=unsafe_fixes)) + "\n")
