"""``gitlab``: a GitLab Code Quality report (the Code Climate issue subset GitLab reads).

Each finding has a ``fingerprint`` that GitLab uses to tell new findings from old ones
between a merge request and its target branch. It hashes the rule, the file and the text of
the finding's first line (not its row), so findings keep their fingerprints when code above
them moves; identical findings in one file are told apart by their order. Paths are
relative to ``$CI_PROJECT_DIR`` when GitLab sets it, else to the root.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO

from ..types import Diagnostic, FileResult
from .common import entries, file_position, level, relative_to_root, split_lines
from .json import dump

# Code Climate severities: a finding is a minor issue, a file that cannot be parsed a major one.
_SEVERITY = {"warning": "minor", "error": "major"}


def _path(path: Path, root: Optional[Path]) -> str:
    project = os.environ.get("CI_PROJECT_DIR")
    base = Path(project) if project else root
    rel = relative_to_root(path, base)
    return rel if rel is not None else path.as_posix()


def _line_text(diagnostic: Diagnostic, source: Optional[str]) -> str:
    if source is None or diagnostic.cell is not None:
        return ""
    lines = split_lines(source)
    row = diagnostic.location.row
    return lines[row - 1].strip() if 0 < row <= len(lines) else ""


def issues(results: Sequence[FileResult], root: Optional[Path]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    seen: Dict[str, int] = {}
    for entry in entries(results):
        d = entry.diagnostic
        path = _path(d.path, root)
        key = "\0".join((d.code, path, str(d.cell or ""), _line_text(d, entry.result.source)))
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        fingerprint = hashlib.sha256(f"{key}\0{occurrence}".encode("utf-8")).hexdigest()
        start, end, in_cell = file_position(d)
        out.append(
            {
                "check_name": d.code,
                "description": f"{d.code}: {d.message}{in_cell}",
                "severity": _SEVERITY[level(d.code)],
                "fingerprint": fingerprint,
                "location": {
                    "path": path,
                    "positions": {
                        "begin": {"line": start.row, "column": start.column},
                        "end": {"line": end.row, "column": end.column},
                    },
                },
            }
        )
    return out


def write(results: Sequence[FileResult], stream: TextIO, *, root: Optional[Path]) -> None:
    dump(issues(results, root), stream)
