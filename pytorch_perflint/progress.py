"""A status line for one long file, as the tree's progress bar is for many files.

A 50,000-line file takes a while to lint, and longer to fix: on a terminal, while the run
waits for a file of 500 KB or more, its name, size and the time so far are shown on
stderr, and cleared when it is done.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# A file this large (about 12,000 lines of Python) gets a status line.
LONG_FILE_BYTES = 500_000


class LongFileStatus:
    """``with LongFileStatus("Fixing") as status: status.waiting(path); ...``."""

    def __init__(self, verb: str) -> None:
        self.verb = verb
        self._progress: Any = None

    def __enter__(self) -> "LongFileStatus":
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def waiting(self, path: Path) -> None:
        """The run now waits for ``path``: show it if it is long, else show nothing."""
        self._stop()
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        if size < LONG_FILE_BYTES:
            return
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True), transient=True
        )
        self._progress.start()
        self._progress.add_task(f"{self.verb} {path} ({size / 1e6:.1f} MB)", total=None)

    def _stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
