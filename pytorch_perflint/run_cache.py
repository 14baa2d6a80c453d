"""The cache side of a run: the cache opened where the run's files are, cached results
answered from ``stat``, the project indexes prepared before the workers start (summaries
kept from earlier runs, read only when a module is needed; the project's state checked
against the disk), fresh results stored with what they depended on, and the summaries and
the project state the run read kept for the next run."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from .cache import Stamp
from .config import Settings
from .tree_files import stat_key
from .types import FileResult

if TYPE_CHECKING:  # the project layer is imported only when some file is linted
    from .fix_passes import Reads
    from .project.linted import RunProjects


@dataclass(frozen=True)
class Done:
    """A worker's answer for one file: its result and, for the cache, what it depended on,
    the module summaries the worker read for it (for the parent to keep) and the project
    state when the worker built the import graph itself; in a fix pass, what its findings
    read (``fix_passes``)."""

    result: FileResult
    stamp: Optional[Stamp] = None
    summaries: Optional[Tuple[str, dict]] = None  # (project root, path -> (stat key, summary))
    state: Optional[Tuple[str, Any]] = None  # (project root, cache_graph.State)
    reads: Optional["Reads"] = None
    summarised: int = 0  # the module summaries the worker built for it (the run's accounting)


class LazyProjects:
    """The run's ``RunProjects``, made when first needed: a warm run that the cache answers
    from ``stat`` alone imports no project code."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.made: Optional["RunProjects"] = None

    def get(self) -> "RunProjects":
        if self.made is None:
            from .project.linted import RunProjects

            self.made = RunProjects(self.settings)
        return self.made

    def index(self, root: str):
        return self.get().for_file(Path(root) / "__init__.py")


def open_cache(settings: Settings, with_edits: bool, paths: Sequence[Path], projects: LazyProjects):
    from .cache import Cache, cache_root

    root = cache_root(settings, paths)
    if root is None:
        return None
    cache = Cache(root, settings, with_edits)
    cache.index_of = projects.index
    return cache


def prepare_projects(projects: RunProjects, todo: Sequence[Path], cache, many: bool) -> None:
    """Before the workers start: the cache's project reads kept summaries on demand, and
    its state is checked (its graph seeded into the index when still valid). A run over
    many files also takes the stat keys of the project's files before any is read (what
    the results that read every module depend on); a run over one file lists nothing."""
    from .cache_graph import texts_digest_of
    from .project.linted import snapshot

    for root in sorted({r for r in (projects.root_of(p) for p in todo) if r is not None}):
        if root != cache.root:
            continue
        index = projects.for_file(Path(root) / "__init__.py")
        if index is None:
            continue
        index.stored = cache.stored_summary
        for path, (key, summary, text_hash) in cache.summaries_now.items():  # changed modules, summarised once
            if key is not None and os.path.dirname(path).startswith(root):
                index.add(path, tuple(key), summary, text_hash)
        cache.prepare_folder()  # first: creating it changes the root folder's mtime
        state, unchanged = cache.seed(root, index)
        if many:
            projects.stats[root] = snapshot(index)
            projects.texts[root] = texts_digest_of(projects.stats[root])
        elif state is not None:  # checked against the disk now, before anything is read
            projects.texts[root] = state.texts_digest()


def save_project(projects: RunProjects, cache, states: Dict[str, Any]) -> None:
    """Keep what the run read of the cache's project for the next run: the summaries not
    kept yet, and the project's state (from the graph built here, or by a worker)."""
    from . import cache_graph
    from .project.index import collector_paused

    index = projects.indexes.get(cache.root)
    if index is None:
        return
    state = None
    if cache.root in projects.stats:  # the graph was built here, after the stats were taken
        state = cache_graph.state_of(index, projects.stats[cache.root])
    elif cache.root in states and cache.state_now(cache.root)[0] is None:
        state = states[cache.root]
    if state is not None:
        cache.set_state(cache.root, state)
    entries = {p: (k, s) for p, (k, s) in index.entries().items() if stat_key(p) == k}
    with collector_paused():
        cache.save_summaries(entries, index.files if index.has_files() and cache.root in projects.stats else None)


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


def in_order(
    todo: Sequence[Path], screened: Mapping[Path, Done], fresh: Iterator[Done], reads: Optional[Dict[Path, "Reads"]], built: List[int]
) -> Iterator[Done]:
    """The results of ``todo`` in its order: those screened while summarising, the rest
    from the lint workers; what each read goes into ``reads`` (a fix pass), the count of
    the summaries each built into ``built``."""
    for path in todo:
        done = screened[path] if path in screened else next(fresh)
        built.append(done.summarised)
        if reads is not None and done.reads is not None:
            reads[path] = done.reads
        yield done


def summaries_built(counts: Optional[List[int]], own_only: bool = False) -> Any:
    """The run's accounting of the module summaries it built (``RunSummary.summarised``):
    with None, start counting (a list the workers' counts go into; ``own_only``: this
    process's count, handed on once); else the run's total, this process's own included.
    Imports nothing that was not imported (the warm path)."""
    summarizer = sys.modules.get(f"{__package__}.project.summarizer")
    own = summarizer.take_built() if summarizer is not None else 0  # type: ignore[attr-defined]
    if counts is None:
        return own if own_only else []
    return sum(counts) + own


def merge(
    files: Sequence[Path], cached: dict, fresh: Iterator[Done], cache, projects: RunProjects, states: Dict[str, Any]
) -> Iterator[FileResult]:
    """Results in the order of ``files``; fresh results without errors go into the cache,
    the summaries the workers read into the parent's index (to be kept), and the project
    state a worker built into ``states``."""
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
        if done.state is not None:
            states.setdefault(done.state[0], done.state[1])
        yield result


_STATES: Dict[str, Tuple[Any, Any, Optional[str]]] = {}  # root -> (graph, its state, digest)


def _state_of(project) -> Tuple[Any, Optional[str]]:
    """The project state of the index's graph and its digest, once per graph built."""
    from . import cache_graph

    held = project.graph_state()
    if held is None:
        return None, None
    kept = _STATES.get(project.root)
    if kept is None or kept[0] is not held[0]:
        state = cache_graph.state_of(project)
        kept = _STATES[project.root] = (held[0], state, state.graph_digest() if state is not None else None)
    return kept[1], kept[2]


def built_state(project, used) -> Any:
    """The project state when the lint that read ``used`` built the import graph, kept for
    the next run even when that lint's own result is not (``stamp_of`` said None)."""
    from .project.index import ALL_FILES

    return _state_of(project)[0] if ALL_FILES in used else None


def stamp_of(projects: RunProjects, project, path: Path, key, digest: str, used) -> Optional[Tuple[Stamp, Any]]:
    """What a fresh result of ``path`` depended on (``Stamp``), and the project state when
    this worker built the graph; None when a module it read changed meanwhile (not cached)."""
    from .cache import summary_digest, text_digest
    from .project.index import ALL_FILES, ALL_TEXTS, TEXT_OF, TEXTS_NAMING

    own = os.path.abspath(path)
    root = project.root
    texts = None
    # The words of scans of every module's text (``text_naming``): the result holds while
    # no module that did not spell one starts to; the modules that did are its deps.
    words = tuple(sorted(w[len(TEXTS_NAMING) :] for w in used if w.startswith(TEXTS_NAMING)))
    if ALL_TEXTS in used or words:
        texts = projects.texts.get(root)
        if texts is None:
            return None  # nothing taken before the run read every module: not kept
    deps: Dict[str, Tuple[str, Any, str]] = {}
    if ALL_TEXTS not in used:  # else every file's stat key, as taken before the run
        for what in sorted(used):
            if what in (ALL_FILES, own, TEXT_OF + own) or what.startswith(TEXTS_NAMING):
                continue
            module = what[len(TEXT_OF) :] if what.startswith(TEXT_OF) else what
            read_at = project.stat_key_read(module)
            if stat_key(module) != read_at:
                return None
            if what.startswith(TEXT_OF):
                text = project.text(module)
                if text is None:
                    return None
                deps[module] = ("t", read_at, text_digest(text))
            elif module not in deps:
                deps[module] = ("s", read_at, summary_digest(project.summary(module)))
    state = None
    graph = None
    if ALL_FILES in used:
        state, graph = _state_of(project)
        if state is None:
            return None
    stamp = Stamp(key, digest, deps, graph, texts, root, words if ALL_TEXTS not in used else ())
    return stamp, state
