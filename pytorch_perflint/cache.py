"""A lint cache: a file whose content, settings, tool version and the project modules its
findings depended on are unchanged is not re-linted.

``lint.json`` holds, for one key of (settings, tool version and code, whether fix edits
were wanted), each file's stat key and content digest, its diagnostics, and what the
rules read about it from other modules (``ProjectIndex.recording``): each module's
summary or text, by stat key and content digest, so that an edit that leaves a summary
as it was (a comment, a docstring) does not invalidate the modules that read it; and,
for a result that read the project as a whole, the digest of the project's state
(``cache_graph``), kept per project root. ``summaries/`` keeps the index's module
summaries between runs, one file per module, read only when a module is needed. JSON,
not pickle: the cache sits in the user's tree and is read back on every run.

The cache is the tree's data, so nothing in it is trusted: a cache of any other shape, at
any depth, is a miss, never an error. It lives at the project root (the config file's
folder, else the nearest folder with a ``pyproject.toml``, ``.git`` or config file above
the linted path); without one, in the current folder as ruff's does when the linted paths
are inside it, else in the folder that holds them all. A cache folder or file that is a symlink is not used: the tree must not be able to
make the tool read or write elsewhere.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from . import __version__
from .config import Settings
from .tree_files import StatKey, read_regular, stat_key as _stat_key
from .cache_json import _Invalid, _diagnostic_from_json, _diagnostic_to_json
from .cache_place import cache_root, project_root  # noqa: F401 - where the cache lives, imported from here
from .types import Diagnostic

CACHE_DIR = ".pytorch_perflint_cache"
# The layout of lint.json and summaries/: a cache of another format is a miss.
FORMAT = 2
SUMMARIES = "summaries"
# A cache file larger than this is a miss (a large tree's cache is a few MB).
MAX_CACHE_BYTES = 1024 * 1024 * 1024
_MISSING = object()


def _code_fingerprint() -> str:
    """Sizes and times of the tool's own modules: a changed rule invalidates the cache even
    when the version number did not move (a development install)."""
    package = Path(__file__).resolve().parent
    parts = []
    for path in sorted(package.rglob("*.py")):
        try:
            info = path.stat()
        except OSError:
            continue
        parts.append(f"{path.relative_to(package)}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _code_key() -> str:
    return f"{__version__}|{_code_fingerprint()}"


def _settings_key(settings: Settings, with_edits: bool) -> str:
    # How findings are printed does not change them: every format shares the entries.
    return f"{_code_key()}|{with_edits}|{dataclasses.replace(settings, output_format=None)!r}"


# -- to and from JSON --------------------------------------------------------------------


def _entries(data: Any) -> Dict[str, Dict[str, Any]]:
    """The entries of a cache file's JSON written by this version and these settings; {}
    for anything else.
    Each entry's own shape is checked when it is used (``Cache.get``)."""
    if not isinstance(data, dict) or data.get("version") != __version__:
        return {}
    files = data.get("files")
    if not isinstance(files, dict):
        return {}
    return {key: entry for key, entry in files.items() if isinstance(entry, dict)}


@dataclass(frozen=True)
class Stamp:
    """What a fresh result depended on, taken where the file was linted: the file's stat
    key before it was read and the digest of the bytes linted; per project module the
    rules read, ``(kind, stat key, digest)`` with kind ``"s"`` (its summary) or ``"t"``
    (its text); the digest of the project's graph state when an answer read the import
    graph, and of its stat keys when one read every module's text (``cache_graph``).
    ``words``: when every text read was read for a word it spells (``ProjectIndex.text_naming``),
    the words: the texts stamp then also holds after an edit that makes no other module
    spell one (a comment in a widely imported module)."""

    key: Optional[StatKey]
    sha256: str
    deps: Mapping[str, Tuple[str, Optional[StatKey], str]] = field(default_factory=dict)
    graph: Optional[str] = None
    texts: Optional[str] = None
    root: Optional[str] = None
    words: Tuple[str, ...] = ()


def _as_key(value: Any) -> Optional[StatKey]:
    """A stat key read back from JSON (``_Invalid`` for anything else)."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 3 or not all(type(v) is int for v in value):
        raise _Invalid("stat")
    return (value[0], value[1], value[2])


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def summary_digest(summary: Any) -> str:
    from .project.codec import to_json

    return hashlib.sha256(json.dumps(to_json(summary), separators=(",", ":")).encode()).hexdigest()[:40]


def _shard(path: str) -> str:
    """The file name of a module's summary in ``summaries/``."""
    return hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".json"


class Cache:
    """The cache of one project root for one set of settings.

    The warm path (``lookup``) decides from ``stat`` alone: a file whose size, mtime and
    inode are the ones recorded, and whose recorded dependencies' are too, is a hit
    without its content being read (ruff's cache does the same). A changed stat falls back
    to the content's digest (a ``touch`` is not a change); a dependency whose stat changed
    is read again and holds when its summary (or text) digest is the recorded one.
    """

    def __init__(self, root: Path, settings: Settings, with_edits: bool) -> None:
        folder = root / CACHE_DIR
        # A symlinked cache folder is not used at all: no read, no write.
        self.folder: Optional[Path] = None if os.path.islink(folder) else folder
        self.root = os.path.abspath(root)
        self.file = folder / "lint.json"
        self.key = _settings_key(settings, with_edits)
        self.entries: Dict[str, Dict[str, Any]] = {}
        self.states: Dict[str, Any] = {}  # project root -> its state's JSON (cache_graph)
        # The project index of a root, for checking its state (set by the run).
        self.index_of: Optional[Callable[[str], Any]] = None
        self._states_now: Dict[str, Tuple[Any, bool]] = {}  # root -> (checked State or None, nothing changed)
        self._keys_now: Dict[str, Optional[List[int]]] = {}  # see _key_now
        self._digests_now: Dict[Tuple[str, str], Optional[str]] = {}
        self._trees_now: Dict[str, Any] = {}
        self.summaries_now: Dict[str, Tuple[Any, Any, Tuple[int, int]]] = {}  # changed modules summarised here
        self._shards: Dict[str, StatKey] = {}  # summaries read from or written to summaries/
        self.dirty = False
        raw = read_regular(self.file, MAX_CACHE_BYTES) if self.folder is not None else None
        if raw is not None:
            try:
                data = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or absurdly deep
                data = None
            if isinstance(data, dict) and data.get("settings") == self.key and data.get("format") == FORMAT:
                self.entries = _entries(data)
                states = data.get("projects")
                if isinstance(states, dict):
                    self.states = {k: v for k, v in states.items() if isinstance(v, dict)}

    def _digest(self, content: bytes) -> str:
        return hashlib.sha256(content).hexdigest()

    def _diagnostics(self, entry: Dict[str, Any], path: Path) -> Optional[Tuple[Diagnostic, ...]]:
        """The entry's diagnostics, about ``path`` as this run spells it (entries are kept
        by absolute path: a run from another folder, or the server, finds them too)."""
        diagnostics = entry.get("diagnostics")
        if not isinstance(diagnostics, list):
            return None
        try:
            found = tuple(_diagnostic_from_json(d) for d in diagnostics)
        except _Invalid:
            return None
        return tuple(d if d.path == path else dataclasses.replace(d, path=path) for d in found)

    def _depends_unchanged(self, entry: Dict[str, Any]) -> bool:
        """The recorded dependencies still hold (read as untrusted data)."""
        deps = entry.get("deps", {})
        if not isinstance(deps, dict) or not all(self._dep_holds(path, dep) for path, dep in deps.items()):
            return False
        graph, texts = entry.get("graph"), entry.get("texts")
        if graph is None and texts is None:
            return True
        root = entry.get("root")
        if not isinstance(root, str):
            return False
        state, unchanged = self.state_now(root)
        if state is None:
            return False
        if graph is not None and graph != state.graph_digest():
            return False
        if texts is None or (unchanged and texts == state.texts_digest()):
            return True
        return self._words_hold(entry, root, state)

    def _words_hold(self, entry: Dict[str, Any], root: str, state: Any) -> bool:
        """A texts result that read only texts spelling its ``words`` (their modules are its
        deps, checked already) still holds when the state it was stamped against is one the
        cache remembers (``cache_graph.changed_since``) and no module changed since spells
        a word now; it is stamped anew."""
        words = entry.get("words")
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
            return False
        from . import cache_graph

        changed = cache_graph.changed_since(self.states.get(root), state, entry.get("texts"))
        if changed is None:
            return False
        for path in changed:
            text = self._text_now(path)
            if text is None or any(word in text for word in words):
                return False
        if entry["texts"] != state.texts_digest():
            entry["texts"], self.dirty = state.texts_digest(), True
        return True

    def _text_now(self, path: str) -> Optional[str]:
        """A changed module's text now, and (``parsed_now``) its tree: read and parsed once
        per run for the words, its summary's digest and the graph's edges."""
        if ("text", path) not in self._digests_now:
            from .project.index import read_source

            self._digests_now[("text", path)] = read_source(path)[0]
        return self._digests_now[("text", path)]

    def parsed_now(self, path: str) -> Tuple[Optional[str], Any]:
        text = self._text_now(path)
        if path not in self._trees_now:
            from .project.summarizer import parse

            self._trees_now[path] = parse(text)[0] if text is not None else None
        return text, self._trees_now[path]

    def _dep_holds(self, path: str, dep: Any) -> bool:
        if not isinstance(dep, list) or len(dep) != 3 or dep[0] not in ("s", "t") or not isinstance(dep[2], str):
            return False
        if self._key_now(path) == dep[1]:
            return True
        if self._digest_now(dep[0], path) != dep[2]:
            return False
        dep[1] = self._key_now(path)  # changed, not in what was read: a stat hit next time
        self.dirty = True
        return True

    def _digest_now(self, kind: str, path: str) -> Optional[str]:
        """The digest of a changed dependency's text or summary now, once per run."""
        if (kind, path) not in self._digests_now:
            text, digest = self._text_now(path), None
            if text is not None and kind == "t":
                digest = text_digest(text)
            elif text is not None:
                from . import registry
                from .project.summarizer import summarize

                registry.all_rules()  # the families' summarisers are part of a summary
                summary = summarize(self.parsed_now(path)[1], text)
                self.summaries_now[path] = (self._key_now(path), summary, (len(text), hash(text)))  # for the index
                digest = summary_digest(summary)
            self._digests_now[(kind, path)] = digest
        return self._digests_now[(kind, path)]

    def state_now(self, root: str) -> Tuple[Any, bool]:
        """The project's state checked against the files on disk (once per run; see
        ``cache_graph.checked``), and whether nothing changed at all. A state whose stat
        keys all hold is decided from ``stat`` alone: no index is made (the warm path)."""
        if root not in self._states_now:
            from . import cache_graph

            state = cache_graph.from_json(self.states.get(root))
            result: Tuple[Any, bool] = (None, False)
            if state is not None and cache_graph.unchanged(state):
                result = (state, True)
            elif state is not None and self.index_of is not None:
                index = self.index_of(root)
                if index is not None:
                    result = cache_graph.checked(state, index, self.parsed_now)
                    if result[0] is not None and not result[1]:
                        self.states[root] = cache_graph.with_history(self.states.get(root), result[0])
                        self.dirty = True
            self._states_now[root] = result
        return self._states_now[root]

    def seed(self, root: str, index: Any) -> Tuple[Any, bool]:
        """``state_now``, its graph handed to the run's ``index`` of that root (graph
        questions are then answered without reading any module)."""
        result = self.state_now(root)
        if result[0] is not None and index.graph_state() is None:
            graph, selecting = result[0].graph()
            index.seed_graph(result[0].files, graph, selecting, result[0].adding())
        return result

    def new_run(self) -> None:
        """Forget the stat keys and digests taken (a long-lived server asks again later)."""
        self._keys_now.clear()
        self._digests_now.clear()
        self._trees_now.clear()
        self.summaries_now.clear()
        self._states_now.clear()

    def set_state(self, root: str, state: Any) -> None:
        """Keep a project's state (``cache_graph.State``) as the one this run read."""
        from . import cache_graph

        self.states[root] = cache_graph.with_history(self.states.get(root), state)
        self._states_now[root] = (state, True)
        self.dirty = True

    def _key_now(self, path: str) -> Optional[List[int]]:
        """A dependency's stat key in its JSON form (what the cache file holds: a value of
        any other shape is simply not equal), taken once per run: many files depend on
        one module."""
        key = self._keys_now.get(path, _MISSING)
        if key is _MISSING:
            now = _stat_key(path)
            key = self._keys_now[path] = list(now) if now is not None else None
        return key  # type: ignore[return-value]

    def lookup(self, path: Path) -> Optional[Tuple[Diagnostic, ...]]:
        """The cached diagnostics of an unchanged file, decided from ``stat`` first."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None:
            return None
        key = _stat_key(str(path))
        if (list(key) if key is not None else None) != entry.get("stat"):  # JSON form, as above
            try:
                content = path.read_bytes()
            except OSError:
                return None
            if entry.get("sha256") != self._digest(content):
                return None
            now = _stat_key(str(path))  # touched, not changed: keep it a stat hit
            entry["stat"] = list(now) if now is not None else None
            self.dirty = True
        if not self._depends_unchanged(entry):
            return None
        return self._diagnostics(entry, path)

    def get(self, path: Path, content: bytes) -> Optional[Tuple[Diagnostic, ...]]:
        """The cached diagnostics for ``path`` with this ``content`` (no stat shortcut)."""
        entry = self.entries.get(os.path.abspath(path))
        if entry is None or entry.get("sha256") != self._digest(content) or not self._depends_unchanged(entry):
            return None
        return self._diagnostics(entry, path)

    def put(self, path: Path, content: bytes, diagnostics: Iterable[Diagnostic], stamp: Optional[Stamp] = None) -> None:
        if stamp is None:
            stamp = Stamp(_stat_key(str(path)), self._digest(content))
        entry: Dict[str, Any] = {
            "stat": list(stamp.key) if stamp.key is not None else None,
            "sha256": stamp.sha256,
            "diagnostics": [_diagnostic_to_json(d) for d in diagnostics],
        }
        if stamp.deps:
            entry["deps"] = {p: [kind, list(k) if k is not None else None, digest] for p, (kind, k, digest) in stamp.deps.items()}
        if stamp.graph is not None or stamp.texts is not None:
            if stamp.root is None:
                self.entries.pop(os.path.abspath(path), None)  # nothing to check it against: not kept
                return
            entry["root"] = stamp.root
            if stamp.graph is not None:
                entry["graph"] = stamp.graph
            if stamp.texts is not None:
                entry["texts"] = stamp.texts
                if stamp.words:
                    entry["words"] = list(stamp.words)
        self.entries[os.path.abspath(path)] = entry
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is simply skipped."""
        if not self.dirty:
            return
        payload = {"version": __version__, "format": FORMAT, "settings": self.key, "files": self.entries, "projects": self.states}
        self._write(self.folder, "lint.json", json.dumps(payload, separators=(",", ":")))  # type: ignore[arg-type]
        self.dirty = False

    def prepare_folder(self) -> bool:
        """Create the cache folder (before a project snapshot is taken: creating it changes
        the root folder's mtime). False when it cannot be used."""
        if self.folder is None:
            return False
        try:
            self.folder.mkdir(exist_ok=True)
        except OSError:
            return False
        if os.path.islink(self.folder):
            return False
        try:
            self._write_gitignore()
        except OSError:
            return False
        return True

    def _write(self, folder: Path, name: str, payload: str) -> None:
        if not self.prepare_folder():
            return
        try:
            import tempfile  # only when something is written: a warm run writes nothing

            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lint-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, folder / name)  # replaces a symlink there, never follows it
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:
            pass

    # -- module summaries (the project index's, kept between runs) --------------------
    def stored_summary(self, path: str, key: StatKey) -> Optional[Any]:
        """The summary kept for the module at ``path`` when its file still has stat
        ``key`` (``ProjectIndex.stored``); None for anything else."""
        from .project.codec import DecodeError, from_json

        if self.folder is None:
            return None
        raw = read_regular(self.folder / SUMMARIES / _shard(path), MAX_CACHE_BYTES)
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("code") != _code_key() or data.get("path") != path:
                return None
            if _as_key(data.get("stat")) != tuple(key):
                return None
            summary = from_json(data.get("summary"))
        except (_Invalid, DecodeError, LookupError, TypeError, ValueError, RecursionError):
            return None
        self._shards[path] = tuple(key)  # type: ignore[assignment]
        return summary

    def save_summaries(self, entries: Mapping[str, Tuple[StatKey, Any]], files: Optional[Iterable[str]] = None) -> None:
        """Keep the summaries not kept yet, one file each; with ``files`` (the project's
        files, when listed), drop the kept summaries of files no longer there."""
        from .project.codec import to_json

        if self.folder is None or not self.prepare_folder():
            return
        folder = self.folder / SUMMARIES
        if os.path.islink(folder):
            return
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            return
        code = _code_key()
        for path, (key, summary) in entries.items():
            if self._shards.get(path) == tuple(key):
                continue
            payload = json.dumps({"code": code, "path": path, "stat": list(key), "summary": to_json(summary)})
            self._write(folder, _shard(path), payload)
            self._shards[path] = tuple(key)  # type: ignore[assignment]
        if files is not None:
            wanted = {_shard(p) for p in files}
            try:
                for name in os.listdir(folder):
                    if name.endswith(".json") and name not in wanted:
                        os.unlink(folder / name)
            except OSError:
                pass

    def _write_gitignore(self) -> None:
        assert self.folder is not None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.folder / ".gitignore", flags, 0o644)
        except FileExistsError:  # written before (or a symlink there: left alone)
            return
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("*\n")
