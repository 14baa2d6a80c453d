"""The findings in the code a script ran, and the copies the tool's own fixer rewrites.

Everything goes through the same runner ``check`` and ``check --fix`` use, on the copies
(never the user's files): the settings are the user's (config discovery from the script,
flags on top) with the project root moved to the copy, so per-file ignores and project-wide
facts read the mirrored tree. Only the files the script actually ran are linted and fixed:
the others cannot change its speed, and fixing a whole repository per program would cost
more than the runs. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ...config import Settings
from ...types import Applicability, Diagnostic
from .copies import Copy


@dataclass(frozen=True)
class Finding:
    """A diagnostic on a file the script ran, located in the user's tree."""

    code: str
    name: str
    message: str
    path: str  # relative to the project root, as the user knows the file
    line: int
    column: int
    applicability: Optional[str]  # "safe", "unsafe", "display-only", or None (no fix)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class FixResult:
    """One fixed copy: which rules' fixes went in, and what the fixer could not do."""

    label: str  # "all fixes" or a rule code
    fixed: int
    codes: Tuple[str, ...]  # rules with at least one of their findings fixed
    errors: Tuple[str, ...]
    # Fixes beyond the findings' own: a fix can make another rule fire and be fixed in turn
    # (num_workers added, then persistent_workers for a loader in an epoch loop).
    follow_ups: int = 0


def _for_copy(settings: Settings, copy: Copy, **changes) -> Settings:
    return dataclasses.replace(settings, project_root=str(copy.root), **changes)


def _files(copy: Copy, ran: Sequence[str]) -> List[Path]:
    files = []
    code = {str(rel) for rel in copy.project.code}
    for rel in ran:
        if rel in code:
            path = copy.root / rel
            if path.is_symlink() or not path.is_file():  # never write through a link
                continue
            files.append(path)
    return files


def lint(copy: Copy, ran: Sequence[str], settings: Settings) -> Tuple[List[Finding], List[str]]:
    """The findings on the files the script ran (``ran``: paths relative to the root)."""
    from ... import runner

    files = _files(copy, ran)
    results, _ = runner.run(files, _for_copy(settings, copy, fix=False), mode=runner.Mode.CHECK, jobs=1)
    findings = [_finding(d, copy) for result in results for d in result.diagnostics]
    errors = [e for result in results for e in result.errors]
    return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.code)), errors


def _finding(diagnostic: Diagnostic, copy: Copy) -> Finding:
    path = Path(os.path.abspath(diagnostic.path))
    try:
        shown = str(path.relative_to(copy.root))
    except ValueError:
        shown = str(diagnostic.path)
    applicability = str(diagnostic.fix.applicability) if diagnostic.fix is not None else None
    return Finding(
        diagnostic.code,
        diagnostic.name,
        diagnostic.message,
        shown,
        diagnostic.location.row,
        diagnostic.location.column,
        applicability,
    )


def applicable_codes(findings: Sequence[Finding], unsafe_fixes: bool) -> List[str]:
    """Rules with a fix this run may apply (safe ones; unsafe ones with --unsafe-fixes)."""
    allowed = {str(Applicability.SAFE)} | ({str(Applicability.UNSAFE)} if unsafe_fixes else set())
    return sorted({f.code for f in findings if f.applicability in allowed})


def held_back_codes(findings: Sequence[Finding], unsafe_fixes: bool) -> List[str]:
    """Rules whose unsafe fixes this run leaves out (the report says how to include them)."""
    if unsafe_fixes:
        return []
    return sorted({f.code for f in findings if f.applicability == str(Applicability.UNSAFE)})


def fix(copy: Copy, ran: Sequence[str], settings: Settings, findings: Sequence[Finding], label: str, only: Optional[str] = None) -> FixResult:
    """Apply the fixes ``check --fix`` would (only rule ``only`` when given) to the copy;
    ``findings`` are the ones ``lint`` gave on the unfixed code."""
    from ... import runner

    changes: dict = dict(fix=True)
    if only is not None:
        changes.update(select=(only,), extend_select=(), ignore=())
    extra: dict = {}
    if "roots" in inspect.signature(runner.run).parameters:  # write guard, where the runner has it
        extra["roots"] = [str(copy.root)]  # a fix is never written through a link out of the copy
    results, _ = runner.run(_files(copy, ran), _for_copy(settings, copy, **changes), mode=runner.Mode.FIX, jobs=1, **extra)
    counts_before = Counter(f.code for f in findings if only is None or f.code == only)
    counts_after = Counter(d.code for r in results for d in r.diagnostics)
    codes = tuple(sorted(code for code in counts_before if counts_after[code] < counts_before[code]))
    errors = tuple(e for r in results for e in tuple(r.errors) + tuple(r.fix_errors))
    fixed = sum(r.fixed for r in results)
    direct = sum(counts_before[code] - counts_after[code] for code in codes)
    return FixResult(label, fixed, codes, errors, max(0, fixed - direct))
