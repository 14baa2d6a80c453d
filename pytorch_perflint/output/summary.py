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
            notes = [f"{unsafe} additional {_fixes(unsafe)} available with `--unsafe-fixes`"] if unsafe else []
            revealed = _revealed(summary)
            if revealed:  # the counts add up: found + revealed = fixed + remaining
                left = f", {remaining} would remain" if remaining else ""
                notes.insert(0, f"{summary.found_before_fix} found now, {revealed} more that fixing reveals{left}")
            extra = f" ({'; '.join(notes)})" if notes else ""
            lines.append(Line(f"Would fix {plural(fixed, 'error')}{extra}."))
        else:
            extra = f" ({unsafe} {_fixes(unsafe)} available with `--unsafe-fixes`)" if unsafe else ""
            lines.append(Line(f"No errors would be fixed{extra}."))
        return lines
    if fixed:
        lines.append(Line(fixed_sentence(summary)))
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


def _revealed(summary: RunSummary) -> int:
    """How many findings the fixes brought to light: a fix can make another rule's pattern
    appear (workers added to a DataLoader, then pinned memory makes copies blockable), so a
    run can fix more than `check` reported. 0 when unknown."""
    if not summary.found_before_fix:
        return 0
    return max(0, summary.fixed + summary.remaining - summary.found_before_fix)


def fixed_sentence(summary: RunSummary) -> str:
    """The closing line of a ``--fix`` run, with counts that add up to what `check` said.

    ``Found 2 errors, and fixing revealed 2 more (4 fixed, 0 remaining).`` when fixes brought
    new findings; ``(3 fixed, 1 resolved by other fixes, 0 remaining)`` when a fix made
    another finding go away; otherwise ruff's ``Found N errors (F fixed, R remaining).``
    """
    fixed, remaining, before = summary.fixed, summary.remaining, summary.found_before_fix
    revealed = _revealed(summary)
    if revealed:
        return f"Found {plural(before, 'error')}, and fixing revealed {revealed} more ({fixed} fixed, {remaining} remaining)."
    gone = before - fixed - remaining if before else 0
    if gone > 0:
        return f"Found {plural(before, 'error')} ({fixed} fixed, {gone} resolved by other fixes, {remaining} remaining)."
    return f"Found {plural(fixed + remaining, 'error')} ({fixed} fixed, {remaining} remaining)."


def fix_only_sentence(summary: RunSummary) -> str:
    """``--fix-only``'s one line: ``Fixed 4 errors (2 found, 3 more that fixing revealed, 1
    remaining).``: found and revealed add up to fixed and remaining (a finding without a
    fix, display-only say, is found but not fixed)."""
    revealed = _revealed(summary)
    left = f", {summary.remaining} remaining" if summary.remaining else ""
    extra = f" ({summary.found_before_fix} found, {revealed} more that fixing revealed{left})" if revealed else ""
    return f"Fixed {plural(summary.fixed, 'error')}{extra}."


def fixed_lines(results: Sequence[FileResult], root: Optional[Path]) -> List[str]:
    """``--show-fixes``: the fixes applied, per file and per rule, as ruff lists them::

        Fixed 3 errors:
        - train.py:
            2 × TPF104 (blocking-host-to-device-copy)
            1 × TPF102 (dataloader-no-pin-memory)

    A result without the per-rule counts (built elsewhere) gets one line with its total.
    """
    fixed = sorted((r for r in results if r.fixed), key=lambda r: str(r.path))
    if not fixed:
        return []
    total = sum(r.fixed for r in fixed)
    width = len(str(max(count for r in fixed for count in ([c for _, _, c in r.fixes] or [r.fixed]))))
    lines = [f"Fixed {plural(total, 'error')}:"]
    for result in fixed:
        if not result.fixes:
            lines.append(f"- {display_path(result.path, root)}: {plural(result.fixed, 'fix', 'es')}")
            continue
        lines.append(f"- {display_path(result.path, root)}:")
        for code, name, count in sorted(result.fixes, key=lambda item: (-item[2], item[0])):
            lines.append(f"    {count:>{width}} × {code} ({name})")
    return lines
