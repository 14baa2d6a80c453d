"""What a cached result that read the project as a whole depends on, by content.

A result may have read the import graph (who imports a module, who runs on an
accelerator: ``ALL_FILES``) or the text of every module (who calls a function:
``ALL_TEXTS``). The cache keeps, per project root, a *state*: the project's files, each
module's project imports (the graph's edges) and whether it selects an accelerator, and
the stat keys of the files, their folders and ``.gitignore`` files.

* A graph result is tied to the digest of the files and edges (``graph_digest``), not to
  the files' bytes: a comment, a docstring or a function body edited in a widely imported
  module leaves the digest as it was, and its importers' results stay valid.
* A texts result is tied to the digest of the stat keys (``texts_digest``): any change
  to any file invalidates it, as before.

A later run checks the state from ``stat``: an unchanged stat keeps a module's edges; a
changed module is summarised again (one ``ast`` parse) and its edges recomputed; a changed
folder or ``.gitignore`` lists the files again, and a different list of files makes the
graph unknown (every import may resolve differently). The state checked this way is
handed to the run's index (``ProjectIndex.seed_graph``): graph questions are then
answered without reading any module.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple

from .tree_files import StatKey, stat_key

if TYPE_CHECKING:
    from .project.index import ProjectIndex

# The project layer is imported where a module must be read again: checking an unchanged
# state from ``stat`` (the warm path) imports none of it.


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:40]


@dataclass
class State:
    """One project's state as the cache keeps it (JSON-shaped values throughout). Not
    changed once a digest was asked: the digests are worked out once (every cached result
    that read the graph asks; 31 on the torch package, 10 ms each)."""

    files: List[str]
    modules: Dict[str, List[Any]]  # path -> [sorted edges, selects an accelerator, folders it adds to sys.path]
    stats: Dict[str, Optional[List[int]]] = field(default_factory=dict)  # path -> stat key
    _digests: Dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def graph_digest(self) -> str:
        if "graph" not in self._digests:
            self._digests["graph"] = _digest([self.files, self.modules])
        return self._digests["graph"]

    def texts_digest(self) -> str:
        if "texts" not in self._digests:
            self._digests["texts"] = _digest(self.stats)
        return self._digests["texts"]

    def to_json(self) -> Dict[str, Any]:
        return {"files": self.files, "modules": self.modules, "stats": self.stats}

    def graph(self) -> Tuple[Dict[str, FrozenSet[str]], FrozenSet[str]]:
        """The import graph and the accelerator modules, as ``ProjectIndex`` holds them."""
        return {p: frozenset(v[0]) for p, v in self.modules.items()}, frozenset(p for p, v in self.modules.items() if v[1])

    def adding(self) -> Dict[str, Tuple[Tuple[int, str], ...]]:
        """The modules that put folders on ``sys.path``, as ``ProjectIndex`` holds them."""
        return {p: tuple((a[0], a[1]) for a in v[2]) for p, v in self.modules.items() if v[2]}


def _key(key: Optional[StatKey]) -> Optional[List[int]]:
    return list(key) if key is not None else None


def from_json(data: Any) -> Optional[State]:
    """A state read back from the cache (untrusted): None for anything of another shape."""
    if not isinstance(data, dict):
        return None
    files, modules, stats = data.get("files"), data.get("modules"), data.get("stats")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    if not isinstance(modules, dict) or not isinstance(stats, dict):
        return None
    for value in modules.values():
        if not (isinstance(value, list) and len(value) == 3 and isinstance(value[0], list) and isinstance(value[1], bool) and isinstance(value[2], list)):
            return None
        if not all(isinstance(e, str) for e in value[0]):
            return None
    for value in stats.values():
        if value is not None and not (isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value)):
            return None
    return State(list(files), dict(modules), dict(stats))


def state_of(index: "ProjectIndex", stats: Optional[Mapping[str, Optional[StatKey]]] = None) -> Optional[State]:
    """The state of an index whose import graph was built (None otherwise). ``stats``:
    the stat keys taken before the run read anything (else each module's key as its
    summary was read, and the folders' now)."""
    held = index.graph_state()
    if held is None:
        return None
    graph, selecting = held
    files = sorted(index.files)
    adding = index.adding_paths()
    modules = {p: [sorted(edges), p in selecting, [list(a) for a in adding.get(p, ())]] for p, edges in graph.items()}
    if stats is None:
        from .project.linted import snapshot

        stats = snapshot(index)
        stats.update((p, index.stat_key_read(p)) for p in files)
    return State(files, modules, {p: _key(k) for p, k in stats.items()})


# How many steps of a project's state the cache remembers (``with_history``).
HISTORY = 16


def with_history(kept: Any, state: State) -> Dict[str, Any]:
    """``state``'s JSON with the history of the kept state's JSON and, when its stat keys
    differ, one step more: the kept state's texts digest and the modules changed since. A
    result stamped against an older state (a pre-commit run of one file checked the state
    in between) finds there which modules changed since its stamp (``changed_since``)."""
    out = state.to_json()
    old = from_json(kept)
    history = _history(kept)
    if old is not None and old.stats != state.stats:
        changed = sorted(p for p in state.modules if old.stats.get(p) != state.stats.get(p))
        history = [*history, [old.texts_digest(), changed]][-HISTORY:]
    out["history"] = history
    return out


def _history(kept: Any) -> List[List[Any]]:
    """The history of a kept state's JSON (untrusted: [] for anything of another shape)."""
    history = kept.get("history") if isinstance(kept, dict) else None
    if not isinstance(history, list):
        return []
    for step in history:
        if not (isinstance(step, list) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], list)):
            return []
        if not all(isinstance(p, str) for p in step[1]):
            return []
    return history


def changed_since(kept: Any, state: State, digest: Any) -> Optional[List[str]]:
    """The modules changed between the state whose texts digest is ``digest`` and
    ``state`` (kept's JSON holds the history); None when that state is not remembered."""
    if digest == state.texts_digest():
        return []
    history = _history(kept)
    for at in range(len(history) - 1, -1, -1):
        if history[at][0] == digest:
            return sorted({p for _, paths in history[at:] for p in paths})
    return None


def texts_digest_of(stats: Mapping[str, Optional[StatKey]]) -> str:
    """The digest a texts result depends on, of stat keys taken before the run read."""
    return _digest({p: _key(k) for p, k in stats.items()})


def unchanged(state: State) -> bool:
    """Whether every stat key the state holds is the file's (or folder's) now."""
    return all(_key(stat_key(p)) == k for p, k in state.stats.items())


def checked(state: State, index: "ProjectIndex", parsed: Optional[Callable[[str], Tuple[Optional[str], Any]]] = None) -> Tuple[Optional[State], bool]:
    """The state brought up to date with the files on disk, and whether nothing changed
    at all (texts results stay valid). None when the graph cannot be known without
    reading the whole project again (the list of files changed). ``parsed``: a changed
    module's text and tree, as the cache reads them (read and parsed once per run)."""
    changed = [p for p, k in state.stats.items() if _key(stat_key(p)) != k]
    if not changed:
        return state, True
    from .project.index import read_source
    from .project.summarizer import summarize

    modules = set(state.modules)
    known = set(state.files)
    if any(p not in known for p in changed):  # a folder or .gitignore: files added or removed?
        if set(index.files) != known:
            return None, False
    index.seed_files(state.files)
    updated = State(list(state.files), dict(state.modules), dict(state.stats))
    for path in changed:
        key = stat_key(path)
        updated.stats[path] = _key(key)
        if path not in modules:
            continue
        text, tree = parsed(path) if parsed is not None else (read_source(path, index.max_bytes)[0], None)
        if text is None or key is None:
            return None, False
        summary = summarize(tree, text, ())  # imports and the accelerator need no summarisers
        added = [list(a) for a in summary.added_paths]
        if added != state.modules[path][2]:
            return None, False  # other modules' imports may resolve differently now
        updated.modules[path] = [sorted(index.edges_of(path, summary)), summary.accelerator is not None, added]
    return updated, False
