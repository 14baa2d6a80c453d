"""What every output format shares: path display, ordering, fix markers, rule metadata.

Kept free of rich so the machine formats (json, github, sarif, concise) stay cheap to import.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..types import Applicability, Diagnostic, FileResult, Fix, Location, rule_url


@dataclass(frozen=True)
class Entry:
    """One diagnostic with the file result it came from (for its source text)."""

    diagnostic: Diagnostic
    result: FileResult


def entries(results: Sequence[FileResult]) -> List[Entry]:
    """All diagnostics of a run in one stable order: path, cell, location, code.

    Results arrive in process-pool order; sorting here makes every format deterministic.
    """
    found = [Entry(d, r) for r in results for d in r.diagnostics]
    found.sort(key=lambda e: e.diagnostic.sort_key())
    return found


def _abspath(path: Path) -> str:
    return os.path.abspath(os.fspath(path))


def absolute_path(path: Path) -> str:
    """The absolute path string, as ruff's JSON ``filename`` carries it."""
    return _abspath(path)


def relative_to_root(path: Path, root: Optional[Path]) -> Optional[str]:
    """``path`` relative to ``root`` (default: cwd) in posix form, or None if outside it."""
    base = _abspath(root) if root is not None else os.getcwd()
    target = _abspath(path)
    try:
        rel = Path(target).relative_to(base)
    except ValueError:
        return None
    return rel.as_posix()


def display_path(path: Path, root: Optional[Path]) -> str:
    """How a human format shows a path: relative to root, else as it was given."""
    rel = relative_to_root(path, root)
    if rel is None:
        return str(path)
    return rel.replace("/", os.sep) if os.sep != "/" else rel


def position(diagnostic: Diagnostic) -> str:
    """``row:col``, or ``cell N:row:col`` for a notebook cell (ruff's spelling)."""
    loc = diagnostic.location
    if diagnostic.cell is not None:
        return f"cell {diagnostic.cell}:{loc.row}:{loc.column}"
    return f"{loc.row}:{loc.column}"


def file_position(diagnostic: Diagnostic) -> Tuple[Location, Location, str]:
    """Where a finding sits in the file itself, for formats that know no notebook cells.

    A cell's rows are not rows of the ``.ipynb`` file: those formats point at its first line
    and add where in which cell to the message (the third item; empty for a plain file).
    """
    if diagnostic.cell is None:
        return diagnostic.location, diagnostic.end_location, ""
    start = diagnostic.location
    where = f" (cell {diagnostic.cell}, line {start.row}, column {start.column})"
    return Location(1, 1), Location(1, 1), where


def is_applicable(fix: Optional[Fix], unsafe_fixes: bool) -> bool:
    """Whether ``--fix`` would apply this fix: the ``[*]`` marker.

    Safe fixes always; unsafe ones only when the run has ``--unsafe-fixes``; display-only
    fixes never (they carry advice, not edits).
    """
    if fix is None:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return fix.applicability is Applicability.UNSAFE and unsafe_fixes


def plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{'' if count == 1 else suffix}"


@dataclass(frozen=True)
class RuleInfo:
    """What the machine formats say about a rule, built-in or visitor alike."""

    code: str
    name: str
    message: str
    docs: str
    fix_applicability: Optional[Applicability] = None
    preview: bool = False
    level: str = "warning"

    @property
    def url(self) -> str:
        return rule_url(self.code)


def rule_catalog() -> Tuple[RuleInfo, ...]:
    """Every rule the tool knows (visitor rules and TPF0xx), sorted by code."""
    from .. import registry

    infos = [
        RuleInfo(
            code=rule.code,
            name=rule.name,
            message=rule.message,
            docs=rule.docs(),
            fix_applicability=rule.fix_applicability,
            preview=rule.preview,
        )
        for rule in registry.all_rules()
    ]
    for builtin in registry.BUILTINS:
        infos.append(RuleInfo(code=builtin.code, name=builtin.name, message=builtin.summary, docs=builtin.docs, level=builtin.level))
    infos.sort(key=lambda info: info.code)
    return tuple(infos)


def level(code: str) -> str:
    """SARIF / GitHub severity: a file that cannot be parsed is an error, the rest warnings."""
    from .. import registry

    builtin = registry.builtin(code)
    return builtin.level if builtin is not None else "warning"


_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> List[str]:
    """Lines as Python's tokenizer (and LibCST) count them: only \\r\\n, \\r and \\n break.

    ``str.splitlines`` also breaks on form feeds and other separators, which would shift
    every row after them.
    """
    return _NEWLINE.split(text)
