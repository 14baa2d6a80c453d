"""The closing lines of the human formats, worded as ruff words them.

Counts come from the ``RunSummary`` the CLI built, not from re-counting diagnostics, so the
summary, the exit code and the cache all agree on one set of numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from ..types import FileResult, RunSummary
from .common import display_path, plural


@dataclass(frozen=True)
class Line:
    """A summary line; ``fix_hint`` marks the line whose leading ``[*]`` full colours."""

    text: str
    fix_hint: bool = False


def _fixes(count: int) -> str:
    return "fix" if count == 1 else "fixes"


def _hidden(count: int) -> str:
    return f"{count} hidden {_fixes(count)} can be enabled with the `--unsafe-fixes` option"


def summary_lines(summary: RunSummary, *, unsafe_fixes: bool = False) -> List[Line]:
    """``Found N errors.`` / ``All checks passed!`` and the ``[*] N fixable`` hint.

    With ``unsafe_fixes`` (the run has ``--unsafe-fixes``) unsafe fixes count as fixable by
    ``--fix`` and no ``hidden fixes`` hint is given.
    """
    lines: List[Line] = []
    fixed, remaining = summary.fixed, summary.remaining
    safe, unsafe = summary.fixable_safe, summary.fixable_unsafe
    if unsafe_fixes:
        safe, unsafe = safe + unsafe, 0
    if summary.diff_mode:
        # --diff shows the fixes instead of the findings; only the unsafe ones left out are news.
        if fixed:
            extra = f" ({unsafe} additional {_fixes(unsafe)} available with `--unsafe-fixes`)" if unsafe else ""
            lines.append(Line(f"Would fix {plural(fixed, 'error')}{extra}."))
        else:
            extra = f" ({unsafe} {_fixes(unsafe)} available with `--unsafe-fixes`)" if unsafe else ""
            lines.append(Line(f"No errors would be fixed{extra}."))
        return lines
    if fixed:
        lines.append(Line(f"Found {plural(fixed + remaining, 'error')} ({fixed} fixed, {remaining} remaining)."))
    elif remaining:
        lines.append(Line(f"Found {plural(remaining, 'error')}."))
    elif summary.errors:
        # Errors: a missing path, an unreadable file, a failed write, a crash; each on stderr.
        lines.append(Line(f"No findings, but {plural(summary.errors, 'error')} occurred."))
    else:
        lines.append(Line("All checks passed!"))

    if safe and unsafe:
        lines.append(Line(f"[*] {safe} fixable with the `--fix` option ({_hidden(unsafe)}).", fix_hint=True))
    elif safe:
        lines.append(Line(f"[*] {safe} fixable with the `--fix` option.", fix_hint=True))
    elif unsafe:
        lines.append(Line(f"No fixes available ({_hidden(unsafe)})."))
    return lines


def fixed_lines(results: Sequence[FileResult], root: Optional[Path]) -> List[str]:
    """``--show-fixes``: how many fixes were applied to each file.

    The engine counts fixes per file, not per rule, so that is what is listed.
    """
    fixed = sorted((r for r in results if r.fixed), key=lambda r: str(r.path))
    if not fixed:
        return []
    total = sum(r.fixed for r in fixed)
    lines = [f"Fixed {plural(total, 'error')}:"]
    for result in fixed:
        lines.append(f"- {display_path(result.path, root)}: {plural(result.fixed, 'fix', 'es')}")
    return lines
