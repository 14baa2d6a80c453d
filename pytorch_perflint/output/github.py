"""``github``: GitHub Actions workflow commands, one annotation per finding.

The runner turns ``::warning file=...::`` lines on stdout into annotations on the pull
request's diff, so CI needs no extra action to show findings inline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, TextIO

from ..types import Diagnostic, FileResult
from .common import display_path, entries, file_position, level, relative_to_root


def escape_data(text: str) -> str:
    """Escape a command's message, as the runner's toolkit does (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: the data escapes plus ``:`` and ``,``, which delimit them."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_command(diagnostic: Diagnostic, root: Optional[Path]) -> str:
    """One workflow command.

    The file is relative to ``root`` (the repository checkout) in posix form, which is how
    GitHub matches annotations to the diff. A notebook cell's rows are not rows of the
    ``.ipynb`` file, so its annotation points at line 1 and the message names the cell.
    """
    rel = relative_to_root(diagnostic.path, root)
    path = rel if rel is not None else display_path(diagnostic.path, root)
    start, end, in_cell = file_position(diagnostic)
    message = f"{diagnostic.code} {diagnostic.message}{in_cell}"
    if in_cell:
        where = "line=1,col=1"
    else:
        where = f"line={start.row},col={start.column},endLine={end.row},endColumn={end.column}"
    props = ",".join(
        (
            f"title={escape_property(f'pytorch-perflint ({diagnostic.code})')}",
            f"file={escape_property(path)}",
            where,
        )
    )
    return f"::{level(diagnostic.code)} {props}::{escape_data(message)}"


def write(results: Sequence[FileResult], stream: TextIO, *, root: Optional[Path]) -> None:
    for entry in entries(results):
        stream.write(format_command(entry.diagnostic, root) + "\n")
