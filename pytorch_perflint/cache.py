"""A lint cache: a file whose content, settings, tool version and the project modules its
findings depended on are unchanged is not re-linted.

``lint.json`` holds, for one key of (settings, tool version and code, whether fix edits
were wanted), each file's stat key and content digest, the stat keys of the project
modules the rules read about it (``ProjectIndex.recording``), and its diagnostics; and per
project root a snapshot of every project file's and folder's stat key, for results that
needed the whole import graph (who runs on an accelerator). ``summaries.json`` keeps the
index's module summaries between runs. JSON, not pickle: the cache sits in the user's
tree and is read back on every run.

The cache is the tree's data, so nothing in it is trusted: a cache of any other shape, at
any depth, is a miss, never an error. It lives at the project root (the config file's
folder, else the nearest folder with a ``pyproject.toml``, ``.git`` or config file above
the linted path; without one, nothing is cached), never wherever the tool happens to
run. A cache folder or file that is a symlink is not used: the tree must not be able to
make the tool read or write elsewhere.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from . import __version__
from .config import Settings
from .tree_files import StatKey, read_regular, stat_key as _stat_key
from .types import Applicability, Diagnostic, Edit, Fix, Location

CACHE_DIR = ".pytorch_perflint_cache"
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


def project_root(settings: Settings, start: Path) -> Optional[Path]:
    """Where the cache of a run that starts at ``start`` (its first path) goes: the
    project's root (``config.project_root``); None without one (a cache is not dropped
    into whatever folder was linted)."""
    from .config import project_root as root_of

    return root_of(settings, start)


# -- to and from JSON --------------------------------------------------------------------


class _Invalid(ValueError):
    """A cache entry of another shape than this version writes."""


def _diagnostic_to_json(diagnostic: Diagnostic) -> Dict[str, Any]:
    data = asdict(diagnostic)
    data["path"] = str(diagnostic.path)
    if diagnostic.fix is not None:
        data["fix"]["applicability"] = diagnostic.fix.applicability.value
    return data


def _field(data: Any, key: str, kind: type, optional: bool = False) -> Any:
    if not isinstance(data, dict):
        raise _Invalid(key)
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Invalid(key)
    return value


def _location(data: Any, key: str) -> Location:
    value = _field(data, key, dict)
    return Location(_field(value, "row", int), _field(value, "column", int))


def _fix_from_json(data: Any) -> Optional[Fix]:
    raw = _field(data, "fix", dict, optional=True)
    if raw is None:
        return None
    try:
        applicability = Applicability(_field(raw, "applicability", str))
    except ValueError:
        raise _Invalid("applicability") from None
    edits = tuple(
        Edit(_field(e, "content", str), _location(e, "location"), _location(e, "end_location"))
        for e in _field(raw, "edits", list)
    )
    return Fix(applicability, _field(raw, "message", str), edits)


def _diagnostic_from_json(data: Any) -> Diagnostic:
    """A diagnostic from its JSON, every field checked (``_Invalid`` otherwise)."""
    return Diagnostic(
        code=_field(data, "code", str),
        name=_field(data, "name", str),
        message=_field(data, "message", str),
        path=Path(_field(data, "path", str)),
        location=_location(data, "location"),
        end_location=_location(data, "end_location"),
        fix=_fix_from_json(data),
        noqa_row=_field(data, "noqa_row", int, optional=True),
        cell=_field(data, "cell", int, optional=True),
    )


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
    key before it was read and the digest of the bytes linted, the stat keys of the
    project modules whose summaries or text the rules read, and whether an answer needed
    every project file (the import graph: then the project's snapshot must not change)."""

    key: Optional[StatKey]
    sha256: str
    deps: Mapping[str, Optional[StatKey]] = field(default_factory=dict)
    all_files: bool = False
    root: Optional[str] = None


def _as_key(value: Any) -> Optional[StatKey]:
    """A stat key read back from JSON (``_Invalid`` for anything else)."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 3 or not all(type(v) is int for v in value):
        raise _Invalid("stat")
    return (value[0], value[1], value[2])


class Cache:
    """The cache of one project root for one set of settings.

    The warm path (``lookup``) decides from ``stat`` alone: a file whose size, mtime and
    inode are the ones recorded, and whose recorded dependencies' are too, is a hit
    without its content being read (ruff's cache does the same). A changed stat falls back
    to the content's digest (a ``touch`` is not a change).
    """

    def __init__(self, root: Path, settings: Settings, with_edits: bool) -> None:
        folder = root / CACHE_DIR
        # A symlinked cache folder is not used at all: no read, no write.
        self.folder: Optional[Path] = None if os.path.islink(folder) else folder
        self.file = folder / "lint.json"
        self.key = _settings_key(settings, with_edits)
        self.entries: Dict[str, Dict[str, Any]] = {}
        self.snapshots: Dict[str, Dict[str, Any]] = {}
        self._snapshot_ok: Dict[str, bool] = {}
        self._digests: Dict[str, Tuple[Dict[str, Any], str]] = {}  # root -> (snapshot, its digest)
        self._keys_now: Dict[str, Optional[List[int]]] = {}  # see _key_now
        self.dirty = False
        raw = read_regular(self.file, MAX_CACHE_BYTES) if self.folder is not None else None
        if raw is not None:
            try:
                data = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or absurdly deep
                data = None
            if isinstance(data, dict) and data.get("settings") == self.key:
                self.entries = _entries(data)
                snapshots = data.get("projects")
                if isinstance(snapshots, dict):
                    self.snapshots = {k: v for k, v in snapshots.items() if isinstance(v, dict)}

    def _digest(self, content: bytes) -> str:
        return hashlib.sha256(content).hexdigest()

    def _diagnostics(self, entry: Dict[str, Any]) -> Optional[Tuple[Diagnostic, ...]]:
        diagnostics = entry.get("diagnostics")
        if not isinstance(diagnostics, list):
            return None
        try:
            return tuple(_diagnostic_from_json(d) for d in diagnostics)
        except _Invalid:
            return None

    def _depends_unchanged(self, entry: Dict[str, Any]) -> bool:
        """The recorded dependencies still have their stat keys (read as untrusted data)."""
        deps = entry.get("deps", {})
        if not isinstance(deps, dict):
            return False
        if any(self._key_now(path) != key for path, key in deps.items()):
            return False
        if entry.get("all", False) is not False:
            root = entry.get("root")
            return (
                isinstance(root, str)
                and entry.get("all") is True
                and entry.get("snapshot") == self._snapshot_digest(root)
                and self._unchanged_project(root)
            )
        return True

    def _key_now(self, path: str) -> Optional[List[int]]:
        """A dependency's or snapshot entry's stat key in its JSON form (what the cache file
        holds: a value of any other shape is simply not equal), taken once per run: many
        files depend on one module."""
        key = self._keys_now.get(path, _MISSING)
        if key is _MISSING:
            now = _stat_key(path)
            key = self._keys_now[path] = list(now) if now is not None else None
        return key  # type: ignore[return-value]

    def _snapshot_digest(self, root: str) -> Optional[str]:
        """Which snapshot of the project a result was computed against: a result from
        before a later run replaced the snapshot is not made valid by the new one."""
        snapshot = self.snapshots.get(root)
        if not snapshot:
            return None
        kept = self._digests.get(root)
        if kept is None or kept[0] is not snapshot:  # once per snapshot, not once per file
            kept = self._digests[root] = (snapshot, hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest())
        return kept[1]

    def _unchanged_project(self, root: str) -> bool:
        """Every project file and folder has the stat key recorded (a new, removed or
        changed module changes one of them), asked once per run."""
        if root not in self._snapshot_ok:
            snapshot = self.snapshots.get(root)
            ok = bool(snapshot) and all(self._key_now(p) == k for p, k in snapshot.items())  # type: ignore[union-attr]
            self._snapshot_ok[root] = ok
        return self._snapshot_ok[root]

    def lookup(self, path: Path) -> Optional[Tuple[Diagnostic, ...]]:
        """The cached diagnostics of an unchanged file, decided from ``stat`` first."""
        entry = self.entries.get(str(path))
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
        return self._diagnostics(entry)

    def get(self, path: Path, content: bytes) -> Optional[Tuple[Diagnostic, ...]]:
        """The cached diagnostics for ``path`` with this ``content`` (no stat shortcut)."""
        entry = self.entries.get(str(path))
        if entry is None or entry.get("sha256") != self._digest(content) or not self._depends_unchanged(entry):
            return None
        return self._diagnostics(entry)

    def put(self, path: Path, content: bytes, diagnostics: Iterable[Diagnostic], stamp: Optional[Stamp] = None) -> None:
        if stamp is None:
            stamp = Stamp(_stat_key(str(path)), self._digest(content))
        entry: Dict[str, Any] = {
            "stat": list(stamp.key) if stamp.key is not None else None,
            "sha256": stamp.sha256,
            "diagnostics": [_diagnostic_to_json(d) for d in diagnostics],
        }
        if stamp.deps:
            entry["deps"] = {p: list(k) if k is not None else None for p, k in stamp.deps.items()}
        if stamp.all_files:
            digest = self._snapshot_digest(stamp.root) if stamp.root is not None else None
            if digest is None:
                self.entries.pop(str(path), None)  # nothing to check it against: not kept
                return
            entry["all"], entry["root"], entry["snapshot"] = True, stamp.root, digest
        self.entries[str(path)] = entry
        self.dirty = True

    def set_snapshot(self, root: str, snapshot: Mapping[str, Optional[StatKey]]) -> None:
        """The stat keys of a project's files and folders, taken before its files were read."""
        self.snapshots[root] = {p: list(k) if k is not None else None for p, k in snapshot.items()}
        self._snapshot_ok.pop(root, None)
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is simply skipped."""
        if not self.dirty:
            return
        payload = {"version": __version__, "settings": self.key, "files": self.entries, "projects": self.snapshots}
        self._write("lint.json", json.dumps(payload))

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

    def _write(self, name: str, payload: str) -> None:
        if not self.prepare_folder():
            return
        assert self.folder is not None
        try:
            import tempfile  # only when something is written: a warm run writes nothing

            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".lint-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, self.folder / name)  # replaces a symlink there, never follows it
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:
            pass

    # -- module summaries (the project index's, kept between runs) --------------------
    def load_summaries(self, index: Any) -> Dict[str, StatKey]:
        """Hand the summaries kept from earlier runs to ``index`` (``ProjectIndex.add``);
        the stat keys handed in. Anything unreadable is left out."""
        from .project.codec import DecodeError, from_json

        raw = read_regular(self.folder / "summaries.json", MAX_CACHE_BYTES) if self.folder is not None else None
        if raw is None:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return {}
        if not isinstance(data, dict) or data.get("code") != _code_key() or not isinstance(data.get("modules"), dict):
            return {}
        added: Dict[str, StatKey] = {}
        for path, value in data["modules"].items():
            try:
                key = _as_key(value[0])
                summary = from_json(value[1])
            except (_Invalid, DecodeError, LookupError, TypeError, ValueError, RecursionError):
                continue
            if key is not None and index.add(path, key, summary):
                added[path] = key
        return added

    def save_summaries(self, entries: Mapping[str, Tuple[StatKey, Any]]) -> None:
        from .project.codec import to_json

        modules = {path: [list(key), to_json(summary)] for path, (key, summary) in entries.items()}
        self._write("summaries.json", json.dumps({"code": _code_key(), "modules": modules}))

    def _write_gitignore(self) -> None:
        assert self.folder is not None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.folder / ".gitignore", flags, 0o644)
        except FileExistsError:  # written before (or a symlink there: left alone)
            return
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("*\n")
