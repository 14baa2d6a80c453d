"""TPF003 for a file too large to analyse: over ``max-file-size``, or past the memory its
worker may use. Not analysed, rather than spend gigabytes and minutes on it: linting needs
about 0.6 GB of memory (0.9 GB of address space) and 6 s per MB of source."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence, Type

from .config import Settings
from .selection import for_file
from .types import Diagnostic, FileResult, Location
from .workers import Failure, memory_limit_for

_RAISE = "Raise `max-file-size` in [tool.pytorch-perflint] (0: no limit) to check it"


def source_size(source: str, limit: int) -> int:
    """The text's size in UTF-8 bytes, encoded only when its length leaves it in doubt."""
    if len(source) > limit or len(source) * 4 <= limit:
        return len(source)
    return len(source.encode("utf-8", "surrogatepass"))


def _diagnostic(path: Path, why: str) -> Diagnostic:
    return Diagnostic(
        code="TPF003",
        name="unanalyzable-file",
        message=f"File not checked: too large to analyse ({why}). {_RAISE}",
        path=path,
        location=Location(1, 1),
        end_location=Location(1, 1),
    )


def too_large(path: Path, size: int, limit: int) -> Diagnostic:
    """A file over ``max-file-size`` (``limit`` bytes)."""
    return _diagnostic(path, f"{size:,} bytes of Python source, over the limit of {limit:,}")


def out_of_memory(path: Path, max_file_size: int) -> Diagnostic:
    """A file whose analysis ran out of the memory its worker may use (which follows
    ``max-file-size``: ``workers.memory_limit_for``)."""
    limit = memory_limit_for(max_file_size)
    allowed = f"{limit / (1 << 30):.1f} GiB" if limit else "the machine's"
    return _diagnostic(path, f"its analysis needed more than the {allowed} of memory allowed per file")


def too_large_result(path: Path, size: int, settings: Settings, rules: Optional[Sequence[Type]] = None) -> FileResult:
    """The result of a file over ``max-file-size``, found before it is read."""
    shown = "TPF003" in for_file(path, settings, rules).codes
    return FileResult(path, (too_large(path, size, settings.max_file_size),) if shown else ())


def failed_result(path: Path, failure: Failure, settings: Settings) -> FileResult:
    """The result of a file the workers gave no result for: past the memory cap, TPF003
    (as for a file over ``max-file-size``); else an error (exit 2)."""
    if failure.out_of_memory:
        shown = "TPF003" in for_file(path, settings).codes
        return FileResult(path, (out_of_memory(path, settings.max_file_size),) if shown else ())
    if failure.timed_out:
        return FileResult(path, errors=(
            f"{path}: not linted: {failure.detail}, the time limit per file "
            "(raise it with --file-timeout or `file-timeout` in [tool.pytorch-perflint])",
        ))
    return FileResult(path, errors=(f"{path}: internal error: {failure.detail}",))
