"""``concise``: one ``path:line:col: CODE message`` line per finding, then the summary.

Plain text, no rich: it is what editors' problem matchers and ``grep`` read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, TextIO

from ..types import FileResult, RunSummary
from .common import display_path, entries, position
from .summary import fixed_lines, summary_lines


# ANSI styles as ruff's concise output has them: the path bold, separators cyan, the code
# bold red.
_BOLD, _CYAN, _RED, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[1;31m", "\x1b[0m"


def format_line(diagnostic, root: Optional[Path], color: bool = False) -> str:
    """The one line for a diagnostic (1-based line and column, no fix marker)."""
    if not color:
        return f"{display_path(diagnostic.path, root)}:{position(diagnostic)}: {diagnostic.code} {diagnostic.message}"
    colon = f"{_CYAN}:{_RESET}"
    where = colon.join(position(diagnostic).split(":"))
    return f"{_BOLD}{display_path(diagnostic.path, root)}{_RESET}{colon}{where}{colon} {_RED}{diagnostic.code}{_RESET} {diagnostic.message}"


def write(
    results: Sequence[FileResult],
    stream: TextIO,
    *,
    summary: RunSummary,
    show_fixes: bool,
    root: Optional[Path],
    unsafe_fixes: bool,
    quiet: bool = False,
    color: bool = False,
) -> None:
    found = entries(results)
    for entry in found:
        stream.write(format_line(entry.diagnostic, root, color) + "\n")
    fixes = fixed_lines(results, root) if show_fixes else []
    if fixes:
        # Set off by blank lines from the findings above and the summary below, as ruff does.
        stream.write(("\n" if found else "") + "\n".join(fixes) + "\n\n")
    if not quiet:
        write_summary(summary, stream, unsafe_fixes=unsafe_fixes)


def write_summary(summary: RunSummary, stream: TextIO, *, unsafe_fixes: bool) -> None:
    stream.write("\n".join(line.text for line in summary_lines(summary, unsafe_fixes=unsafe_fixes)) + "\n")
