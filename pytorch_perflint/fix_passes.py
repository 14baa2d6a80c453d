"""A fix run over a project: pass after pass, until fixing one file leaves no fix in another.

A fix in one file can make a finding appear in another: ``pin_memory=True`` added to a
helper's ``DataLoader`` in ``utils/dataloader.py`` makes the blocking copies of its
batches in ``train.py`` TPF104. Each file is fixed until it settles (``fixer``) with the
project as the pass read it; when a pass writes files, the files whose findings read the
written files' facts (or the whole project's: the import graph, who runs on an
accelerator) are fixed again, with the project as it is now on disk, up to
``MAX_PASSES`` passes. The results add up the passes, so that the summary says what a
plain ``check`` right after reports.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, MutableMapping, Optional, Sequence, Set

from .types import FileResult

MAX_PASSES = 5


@dataclass(frozen=True)
class Reads:
    """What one file's findings read in a pass: the project modules (absolute paths), or
    the whole project (the import graph, every module's text), in the project at ``root``;
    ``words``: what scans of every module's text looked for (a written file that spells one
    may change the findings)."""

    deps: FrozenSet[str]
    all_files: bool
    root: Optional[str]
    words: FrozenSet[str] = frozenset()

    @classmethod
    def of(cls, used: Set[str], root: Optional[str]) -> "Reads":
        """From what a ``ProjectIndex.recording()`` collected (modules read for their
        summary or their text, or the whole project)."""
        from .project.index import ALL_FILES, ALL_TEXTS, TEXT_OF, TEXTS_NAMING

        words = frozenset(u[len(TEXTS_NAMING):] for u in used if u.startswith(TEXTS_NAMING))
        deps = frozenset(u[len(TEXT_OF):] if u.startswith(TEXT_OF) else u for u in used if not u.startswith(TEXTS_NAMING))
        return cls(deps, ALL_FILES in used or ALL_TEXTS in used, root, words)


# Runs one pass over the files given; records in the mapping, for each file linted with
# its project's index, what the rules read.
RunPass = Callable[[Sequence[Path], MutableMapping[Path, Reads]], List[FileResult]]


def fix_until_settled(files: Sequence[Path], run_pass: RunPass) -> List[FileResult]:
    """Every file's result over all the passes, in the order of ``files``."""
    reads: Dict[Path, Reads] = {}
    results = list(run_pass(files, reads))
    position = {path: index for index, path in enumerate(files)}
    written = [result.path for result in results if result.fixed]
    for _ in range(MAX_PASSES - 1):
        again = [path for path in files if _reads_any(path, reads.get(path), written, reads)]
        if not again:
            break
        fresh_reads: Dict[Path, Reads] = {}
        fresh = run_pass(again, fresh_reads)
        reads.update(fresh_reads)
        written = [result.path for result in fresh if result.fixed]
        for result in fresh:
            index = position[result.path]
            results[index] = combined(results[index], result)
    return results


def _reads_any(path: Path, stamp: Optional[Reads], written: Sequence[Path], reads: Dict[Path, Reads]) -> bool:
    """Whether the findings of ``path`` read a fact of a written file (its own fixes
    settled with its own facts)."""
    if stamp is None or not written:
        return False  # linted without a project: no other file's facts
    if stamp.all_files:
        roots: Set[Optional[str]] = {reads[other].root for other in written if other in reads and other != path}
        if stamp.root in roots:
            return True
    if any(other != path and os.path.abspath(other) in stamp.deps for other in written):
        return True
    return bool(stamp.words) and any(other != path and _spells(other, stamp.words) for other in written)


def _spells(path: Path, words: FrozenSet[str]) -> bool:
    """Whether the file as written now holds one of ``words`` (unreadable: it may)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    return any(word in text for word in words)


def combined(first: FileResult, then: FileResult) -> FileResult:
    """One file's result over two passes: what the second left, the fixes of both, and
    the findings it had before any fix (what ``check`` reported before the run)."""
    fixed = first.fixed + then.fixed
    if not fixed:
        return then
    by_rule: Counter = Counter()
    for code, name, count in (*first.fixes, *then.fixes):
        by_rule[(code, name)] += count
    found = first.found_before_fix if first.found_before_fix is not None else len(first.diagnostics) + first.fixed
    return dataclasses.replace(
        then,
        fixed=fixed,
        errors=tuple(dict.fromkeys((*first.errors, *then.errors))),
        fix_errors=tuple(dict.fromkeys((*first.fix_errors, *then.fix_errors))),
        fixes=tuple((code, name, count) for (code, name), count in sorted(by_rule.items())),
        found_before_fix=found,
    )
