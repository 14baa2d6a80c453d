"""The cache side of a run: the cache opened at the project root, the project indexes
prepared before the workers start (summaries kept from earlier runs, a snapshot of the
project's stat keys), cached results answered from ``stat``, fresh ones stored with what
they depended on, and the summaries the workers read kept for the next run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional, Sequence, Tuple

from .cache import Stamp
from .config import Settings
from .tree_files import stat_key
from .types import FileResult

if TYPE_CHECKING:  # the project layer is imported only when some file is linted
    from .project.linted import RunProjects


@dataclass(frozen=True)
class Done:
    """A worker's answer for one file: its result and, for the cache, what it depended on
    and the module summaries the worker read for it (for the parent to keep)."""

    result: FileResult
    stamp: Optional[Stamp] = None
    summaries: Optional[Tuple[str, dict]] = None  # (project root, path -> (stat key, summary))


def open_cache(settings: Settings, with_edits: bool, start: Path):
    from .cache import Cache, project_root

    root = project_root(settings, start)
    return Cache(root, settings, with_edits) if root is not None else None


def prepare_projects(projects: RunProjects, todo: Sequence[Path], cache) -> None:
    """Before the workers start: the cache's project gets the summaries kept from earlier
    runs and a snapshot of its files' stat keys (taken before any is read)."""
    from .project.index import collector_paused
    from .project.linted import snapshot

    cache_root = os.path.abspath(cache.file.parent.parent)
    for root in sorted({r for r in (projects.root_of(p) for p in todo) if r is not None}):
        index = projects.for_file(Path(root) / "__init__.py")
        if index is None:
            continue
        if root == cache_root:
            with collector_paused():
                projects.known[root] = cache.load_summaries(index)
        cache.prepare_folder()  # first: creating it changes the root folder's mtime
        cache.set_snapshot(root, snapshot(index))


def save_summaries(projects: RunProjects, cache) -> None:
    """Keep the summaries of the cache's project for the next run (stale ones dropped)."""
    from .project.index import collector_paused

    cache_root = os.path.abspath(cache.file.parent.parent)
    index = projects.indexes.get(cache_root)
    if index is None:
        return
    entries = {p: (k, s) for p, (k, s) in index.entries().items() if stat_key(p) == k}
    if entries:
        with collector_paused():
            cache.save_summaries(entries)


def cache_lookup(cache, path: Path) -> Optional[FileResult]:
    """A cached result for an unchanged file (decided from ``stat``, see ``Cache.lookup``)."""
    from .decoding import Undecodable, decode

    diagnostics = cache.lookup(path)
    if diagnostics is None:
        return None
    source = None
    if diagnostics:  # the code frames need the text
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if path.suffix == ".ipynb":
            source = data.decode("utf-8-sig", errors="replace")
        else:
            try:
                source = decode(data).text
            except Undecodable:
                source = None
    return FileResult(path, diagnostics, source=source)


def merge(files: Sequence[Path], cached: dict, fresh: Iterator[Done], cache, projects: RunProjects) -> Iterator[FileResult]:
    """Results in the order of ``files``; fresh results without errors go into the cache,
    and the summaries the workers read into the parent's index (to be kept)."""
    for path in files:
        if path in cached:
            yield cached[path]
            continue
        done = next(fresh)
        result = done.result
        if cache is not None and not result.errors and done.stamp is not None:
            cache.put(path, b"", result.diagnostics, done.stamp)
        if done.summaries is not None:
            root, entries = done.summaries
            index = projects.indexes.get(root)
            if index is not None:
                for module, (key, summary) in entries.items():
                    index.add(module, key, summary)
        yield result
