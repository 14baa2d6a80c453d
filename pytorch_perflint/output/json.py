"""``json``: ruff's JSON list of diagnostics, plus ``name``; nothing else on stdout.

Field names and shapes follow ruff's so tools written for ruff's JSON read ours too.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence, TextIO

from ..types import Diagnostic, FileResult, Fix, Location
from .common import absolute_path, entries


def _location(location: Location) -> Dict[str, int]:
    return {"column": location.column, "row": location.row}


def _fix(fix: Fix) -> Dict[str, Any]:
    return {
        "applicability": fix.applicability.value,
        "edits": [
            {
                "content": edit.content,
                "end_location": _location(edit.end_location),
                "location": _location(edit.location),
            }
            for edit in fix.edits
        ],
        "message": fix.message,
    }


def diagnostic_object(diagnostic: Diagnostic) -> Dict[str, Any]:
    """One diagnostic as a JSON-ready dict (keys in ruff's order, ``name`` added)."""
    return {
        "cell": diagnostic.cell,
        "code": diagnostic.code,
        "end_location": _location(diagnostic.end_location),
        "filename": absolute_path(diagnostic.path),
        "fix": _fix(diagnostic.fix) if diagnostic.fix is not None else None,
        "location": _location(diagnostic.location),
        "message": diagnostic.message,
        "name": diagnostic.name,
        "noqa_row": diagnostic.noqa_row,
        "url": diagnostic.url,
    }


def objects(results: Sequence[FileResult]) -> List[Dict[str, Any]]:
    return [diagnostic_object(entry.diagnostic) for entry in entries(results)]


def dump(value: Any, stream: TextIO) -> None:
    """Pretty JSON, ASCII-escaped so a narrow console encoding cannot break it."""
    json.dump(value, stream, indent=2, ensure_ascii=True)
    stream.write("\n")


def write(results: Sequence[FileResult], stream: TextIO) -> None:
    dump(objects(results), stream)
