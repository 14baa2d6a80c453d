"""A lint cache: a file whose content, settings and tool version are unchanged is not re-linted.

Entries are keyed by the file's path and hold a hash of (content, settings, tool version,
whether fix edits were wanted) plus the diagnostics as JSON. JSON, not pickle: the cache
sits in the user's tree and is read back on every run.
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
from .types import Applicability, Diagnostic, Edit, Fix, Location

CACHE_DIR = ".pytorch_perflint_cache"


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


def _diagnostic_to_json(diagnostic: Diagnostic) -> Dict[str, Any]:
    data = asdict(diagnostic)
    data["path"] = str(diagnostic.path)
    if diagnostic.fix is not None:
        data["fix"]["applicability"] = diagnostic.fix.applicability.value
    return data


def _location(data: Dict[str, int]) -> Location:
    return Location(data["row"], data["column"])


def _diagnostic_from_json(data: Dict[str, Any]) -> Diagnostic:
    fix = None
    if data.get("fix"):
        raw = data["fix"]
        fix = Fix(
            Applicability(raw["applicability"]),
            raw["message"],
            tuple(Edit(e["content"], _location(e["location"]), _location(e["end_location"])) for e in raw["edits"]),
        )
    return Diagnostic(
        code=data["code"],
        name=data["name"],
        message=data["message"],
        path=Path(data["path"]),
        location=_location(data["location"]),
        end_location=_location(data["end_location"]),
        fix=fix,
        noqa_row=data.get("noqa_row"),
        cell=data.get("cell"),
    )


class Cache:
    """The cache of one project root for one set of settings."""

    def __init__(self, root: Path, settings: Settings, with_edits: bool) -> None:
        self.folder = root / CACHE_DIR
        self.file = self.folder / "lint.json"
        self.key = _settings_key(settings, with_edits)
        self.entries: Dict[str, Dict[str, Any]] = {}
        self.dirty = False
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("version") == __version__:
                self.entries = data.get("files", {})
        except (OSError, ValueError):
            self.entries = {}

    def _digest(self, content: bytes) -> str:
        return hashlib.sha256(self.key.encode() + b"\0" + content).hexdigest()

    def get(self, path: Path, content: bytes) -> Optional[Tuple[Diagnostic, ...]]:
        entry = self.entries.get(str(path))
        if entry is None or entry.get("hash") != self._digest(content):
            return None
        try:
            return tuple(_diagnostic_from_json(d) for d in entry["diagnostics"])
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, path: Path, content: bytes, diagnostics: Iterable[Diagnostic]) -> None:
        self.entries[str(path)] = {
            "hash": self._digest(content),
            "diagnostics": [_diagnostic_to_json(d) for d in diagnostics],
        }
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is simply skipped."""
        if not self.dirty:
            return
        try:
            self.folder.mkdir(exist_ok=True)
            gitignore = self.folder / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n", encoding="utf-8")
            payload = json.dumps({"version": __version__, "files": self.entries})
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".lint-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, self.file)
        except OSError:
            pass
