"""What an answer depended on: ``ProjectIndex.recording`` collects the modules whose summary
or text the answers given inside it read, the dependencies of a cached lint result (a mixin
of ``ProjectIndex``, which sets ``_local`` to a ``threading.local``)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, List, Set

from .reads import ALL_FILES, TEXT_OF

__all__ = ["Recordings"]


class Recordings:
    """The recording half of ``ProjectIndex`` (see the module docstring)."""

    _local: threading.local

    @property
    def _recorders(self) -> List[Set[str]]:
        """The recordings active on this thread: the language server lints on several
        threads over one index, and one lint's reads are neither another's dependencies nor
        hidden by another's ``unnoted`` block."""
        try:
            return self._local.recorders
        except AttributeError:
            self._local.recorders = []
            return self._local.recorders

    @_recorders.setter
    def _recorders(self, recorders: List[Set[str]]) -> None:
        self._local.recorders = recorders

    @contextmanager
    def recording(self) -> Iterator[Set[str]]:
        """Collect the modules whose summary or text the answers given inside the block read
        (``ALL_FILES`` when one needed the whole import graph): what a cached lint result of
        one file depends on besides the file itself."""
        used: Set[str] = set()
        self._recorders.append(used)
        try:
            yield used
        finally:
            # By identity: two recordings may hold equal sets (nested ones, say).
            self._recorders = [r for r in self._recorders if r is not used]

    def note_read(self, what: str) -> None:
        """Tell the active recordings that an answer read ``what`` (a path, or ``ALL_FILES``)."""
        for used in self._recorders:
            used.add(what)

    def note_text(self, path: str) -> None:
        """An answer read the module's text, not only its summary (``TEXT_OF`` + path)."""
        if self._recorders:
            self.note_read(TEXT_OF + path)

    @contextmanager
    def _graph_reads(self) -> Iterator[None]:
        """Reads that build the import graph are one dependency, ``ALL_FILES`` (the graph's
        own content, see ``graph_state``), not one on every module's summary."""
        self.note_read(ALL_FILES)
        recorders, self._recorders = self._recorders, []
        try:
            yield
        finally:
            self._recorders = recorders

    @contextmanager
    def unnoted(self) -> Iterator[None]:
        """Reads inside the block are told to no recording: the caller notes itself what its
        answer depends on (``trainers.project_trains``: the one module that settles it)."""
        recorders, self._recorders = self._recorders, []
        try:
            yield
        finally:
            self._recorders = recorders
