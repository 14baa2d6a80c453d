"""Value types that flow from the engine to the fixer and the output formats.

All of them are frozen dataclasses of plain data, so they pickle cheaply across the process
pool and cannot be changed by a later stage behind an earlier one's back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Tuple


class Applicability(str, enum.Enum):
    """How far a fix can be trusted; ruff's terms."""

    SAFE = "safe"  # meaning unchanged: applied by --fix
    UNSAFE = "unsafe"  # meaning can change: applied only with --unsafe-fixes
    DISPLAY_ONLY = "display-only"  # shown, never applied

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based row and a 1-based column, as editors and ruff's JSON show them."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) with ``content``."""

    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class Fix:
    """A fix as the outside world sees it: its applicability and its text edits."""

    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Diagnostic:
    """One finding: a rule, a place, a message and maybe a fix."""

    code: str
    name: str
    message: str
    path: Path
    location: Location
    end_location: Location
    fix: Optional[Fix] = None
    noqa_row: Optional[int] = None
    # For notebooks: the 1-based cell number; rows are then relative to that cell.
    cell: Optional[int] = None

    @property
    def url(self) -> str:
        return rule_url(self.code)

    def sort_key(self) -> tuple:
        return (str(self.path), self.cell or 0, self.location, self.code)


DOCS_URL = "https://github.com/pytorch-perflint/pytorch-perflint/blob/main/docs/rules.md"


def rule_url(code: str) -> str:
    """The documentation anchor of a rule."""
    return f"{DOCS_URL}#{code.lower()}"


@dataclass(frozen=True)
class FileResult:
    """What linting (and maybe fixing) one file produced."""

    path: Path
    diagnostics: Tuple[Diagnostic, ...] = ()
    # Number of fixes applied and written (or shown with --diff).
    fixed: int = 0
    # Unified diff of the fixes, when --diff was asked for.
    diff: Optional[str] = None
    # An internal error (a crash in a rule, an unreadable file): makes the exit code 2.
    errors: Tuple[str, ...] = ()
    # Fix that could not be applied (result did not parse, file changed on disk, ...).
    fix_errors: Tuple[str, ...] = field(default=())
    # The (fixed) text, carried back only for files with diagnostics, for code frames.
    source: Optional[str] = None
    # (code, name, count) of the fixes applied, by rule (--show-fixes).
    fixes: Tuple[Tuple[str, str, int], ...] = ()
    # Findings before fixing (what `check` reports); None when nothing was fixed.
    found_before_fix: Optional[int] = None


@dataclass(frozen=True)
class RunSummary:
    """Counts over a whole run, for the summary line and the exit code."""

    files_checked: int = 0
    # Fixes applied (or that --diff would apply).
    fixed: int = 0
    # Diagnostics still reported.
    remaining: int = 0
    # Findings before fixing, over every file (what `check` reported): with fixed and
    # remaining it tells how many the fixes revealed.
    found_before_fix: int = 0
    # Of the remaining: how many a plain --fix would fix, and how many more --unsafe-fixes.
    fixable_safe: int = 0
    fixable_unsafe: int = 0
    errors: int = 0
    fix_mode: bool = False
    diff_mode: bool = False
    # A checking run's own accounting (the cache's effect, for tests and benchmarks): the
    # files it linted (the others were answered from the cache) and the module summaries
    # it built, in any of its processes (the others came from the cache).
    linted: int = 0
    summarised: int = 0
