"""``pylint``: ``path:row: [CODE] message`` lines, the shape pylint's parseable output has
and that ruff's ``pylint`` format writes, for tools (Jenkins' warnings plugin, editors)
that read it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, TextIO

from ..types import Diagnostic, FileResult
from .common import display_path, entries, file_position


def format_line(diagnostic: Diagnostic, root: Optional[Path]) -> str:
    start, _, in_cell = file_position(diagnostic)
    return f"{display_path(diagnostic.path, root)}:{start.row}: [{diagnostic.code}] {diagnostic.message}{in_cell}"


def write(results: Sequence[FileResult], stream: TextIO, *, root: Optional[Path]) -> None:
    for entry in entries(results):
        stream.write(format_line(entry.diagnostic, root) + "\n")
