"""A lint cache: a file whose content, settings and tool version are unchanged is not re-linted.

Entries are keyed by the file's path and hold a hash of (content, settings, tool version,
whether fix edits were wanted) plus the diagnostics as JSON. JSON, not pickle: the cache
sits in the user's tree and is read back on every run.

The cache is the tree's data, so nothing in it is trusted: a cache of any other shape, at
any depth, is a miss, never an error. It lives at the project root (the config file's
folder, else the nearest folder with a ``pyproject.toml``, ``.git`` or config file above
the linted path; without one, nothing is cached), never wherever the tool happens to
run. A cache folder or file that is a symlink is not used: the tree must not be able to
make the tool read or write elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple

from . import __version__
from .config import Settings
from .tree_files import read_regular
from .types import Applicability, Diagnostic, Edit, Fix, Location

CACHE_DIR = ".pytorch_perflint_cache"
# A cache file larger than this is a miss (a large tree's cache is a few MB).
MAX_CACHE_BYTES = 1024 * 1024 * 1024


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


def _settings_key(settings: Settings, with_edits: bool) -> str:
    return f"{__version__}|{_code_fingerprint()}|{with_edits}|{settings!r}"


def project_root(settings: Settings, start: Path) -> Optional[Path]:
    """Where the cache of a run that starts at ``start`` (its first path) goes: the project
    layer's root (``project.root``), except that without any root marker there is none
    (a cache is not dropped into whatever folder was linted)."""
    from .project.root import ROOT_MARKERS

    if settings.config_path:
        return Path(settings.config_path).parent
    folder = Path(os.path.abspath(start))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        if any(os.path.lexists(candidate / marker) for marker in ROOT_MARKERS):
            return candidate
    return None


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
    """The entries of a cache file's JSON written by this version; {} for anything else.
    Each entry's own shape is checked when it is used (``Cache.get``)."""
    if not isinstance(data, dict) or data.get("version") != __version__:
        return {}
    files = data.get("files")
    if not isinstance(files, dict):
        return {}
    return {key: entry for key, entry in files.items() if isinstance(entry, dict)}


class Cache:
    """The cache of one project root for one set of settings."""

    def __init__(self, root: Path, settings: Settings, with_edits: bool) -> None:
        folder = root / CACHE_DIR
        # A symlinked cache folder is not used at all: no read, no write.
        self.folder: Optional[Path] = None if os.path.islink(folder) else folder
        self.file = folder / "lint.json"
        self.key = _settings_key(settings, with_edits)
        self.entries: Dict[str, Dict[str, Any]] = {}
        self.dirty = False
        raw = read_regular(self.file, MAX_CACHE_BYTES) if self.folder is not None else None
        if raw is not None:
            try:
                self.entries = _entries(json.loads(raw.decode("utf-8")))
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or absurdly deep
                self.entries = {}

    def _digest(self, content: bytes) -> str:
        return hashlib.sha256(self.key.encode() + b"\0" + content).hexdigest()

    def get(self, path: Path, content: bytes) -> Optional[Tuple[Diagnostic, ...]]:
        entry = self.entries.get(str(path))
        if entry is None or entry.get("hash") != self._digest(content):
            return None
        diagnostics = entry.get("diagnostics")
        if not isinstance(diagnostics, list):
            return None
        try:
            return tuple(_diagnostic_from_json(d) for d in diagnostics)
        except _Invalid:
            return None

    def put(self, path: Path, content: bytes, diagnostics: Iterable[Diagnostic]) -> None:
        self.entries[str(path)] = {
            "hash": self._digest(content),
            "diagnostics": [_diagnostic_to_json(d) for d in diagnostics],
        }
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is simply skipped."""
        if not self.dirty or self.folder is None:
            return
        try:
            self.folder.mkdir(exist_ok=True)
            if os.path.islink(self.folder):
                return
            self._write_gitignore()
            payload = json.dumps({"version": __version__, "files": self.entries})
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".lint-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, self.file)  # replaces a symlink there, never follows it
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
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
