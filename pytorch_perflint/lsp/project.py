"""The language server and the on-disk cache that ``check`` keeps at the project root.

The server starts from that cache when there is one: an opened file whose text is the
file's on disk, and whose cached result still holds (the same checks ``check`` makes:
the modules it read, the project's state), is answered from it without being linted; the
project's index takes the cached summaries (read only when a module is needed) and the
cached import graph, checked against the disk. What is missing is built in the
background, with progress shown, after the opened file was answered, and kept in the
cache for the next start.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..cache import Cache
from ..config import Settings, project_root
from ..decoding import Undecodable, decode
from ..project.index import ProjectIndex
from ..project.linted import index_for, snapshot

# The modules summarised between two progress reports.
REPORT_EVERY = 100


@dataclass(frozen=True)
class Answer:
    """A buffer's result that no lint made (the cache's answer, or nothing linted): what
    the server reads of an ``engine.FileLint``, without importing the engine (or LibCST)."""

    path: Path
    source: str
    diagnostics: List[Any] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    module: None = None
    candidates: Tuple[()] = ()


class ProjectCaches:
    """One on-disk cache per (project root, settings), opened once per server."""

    def __init__(self) -> None:
        self._caches: Dict[Tuple[str, Settings], Cache] = {}
        self._indexed: Dict[Tuple[str, Settings], bool] = {}
        self._lock = threading.RLock()

    def cache_for(self, path: Path, settings: Settings) -> Optional[Cache]:
        """The cache of the project holding ``path`` (None outside a project)."""
        root = project_root(settings, path)
        if root is None:
            return None
        key = (str(root), settings)
        with self._lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = self._caches[key] = Cache(root, settings, with_edits=False)
                cache.index_of = lambda _root: index_for(path, settings)
            return cache

    def prepare(self, index: Optional[ProjectIndex], path: Path, settings: Settings) -> None:
        """Let the index read the cache's summaries on demand and take its checked graph."""
        cache = self.cache_for(path, settings)
        if index is None or cache is None or index.root != cache.root:
            return
        with self._lock:
            if index.stored is None:
                index.stored = cache.stored_summary
                cache.seed(cache.root, index)

    def answer(self, path: Path, text: str, settings: Settings) -> Optional[Answer]:
        """The cached result of a buffer whose text is the file's on disk, when it holds."""
        cache = self.cache_for(path, settings)
        if cache is None or path.suffix != ".py":
            return None
        try:
            data = path.read_bytes()
            if decode(data).text != text:
                return None
        except (OSError, Undecodable):
            return None
        self.prepare(index_for(path, settings), path, settings)
        with self._lock:
            cache.new_run()  # the disk now, not as it was at the last question
            diagnostics = cache.get(path, data)
        if diagnostics is None:
            return None
        return Answer(path, text, diagnostics=list(diagnostics))

    def needs_indexing(self, path: Path, settings: Settings) -> bool:
        """Whether the project is to be indexed and kept in the cache: it has no checked
        state there (asked once per project and settings)."""
        cache = self.cache_for(path, settings)
        index = index_for(path, settings)
        if cache is None or index is None:
            return False
        key = (cache.root, settings)
        with self._lock:
            if self._indexed.get(key):
                return False
            self._indexed[key] = True
            self.prepare(index, path, settings)
            return cache.state_now(cache.root)[0] is None  # nothing kept for the next start

    def index_project(self, path: Path, settings: Settings, report: Callable[[int, int], None]) -> int:
        """Summarise every module of the project (kept summaries first), build the import
        graph, and keep both in the cache; ``report(done, total)`` now and then. The
        number of modules."""
        from .. import cache_graph

        cache = self.cache_for(path, settings)
        index = index_for(path, settings)
        if cache is None or index is None:
            return 0
        self.prepare(index, path, settings)
        # The files on disk only, not the open buffers: a fresh index, given what the
        # server's index read from disk already.
        disk = ProjectIndex(index.root, settings)
        disk.stored = cache.stored_summary
        stats = snapshot(disk)  # before any module is read
        for module, (key, summary) in index.entries().items():
            if stats.get(module) == tuple(key):
                disk.add(module, key, summary)
        modules = sorted(p for p in disk.files if p.endswith(".py"))
        for number, module in enumerate(modules, start=1):
            disk.summary(module)
            if number % REPORT_EVERY == 0:
                report(number, len(modules))
        disk.import_graph()
        state = cache_graph.state_of(disk, stats)
        with self._lock:
            if state is not None:
                cache.set_state(cache.root, state)
            cache.save_summaries(disk.entries(), disk.files)
            cache.save()
        return len(modules)
