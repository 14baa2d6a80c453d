"""The copies a user's script runs in: its project's code copied, everything else linked.

``bench SCRIPT`` never runs or fixes the user's own files. Each program (before, after, the
A/A control, one "after" per rule) gets a mirror of the project root in a temporary folder:

- the code files that ``check`` would lint there (same config, excludes and ``.gitignore``)
  are copied, so the fixer can rewrite them;
- every other entry is a symlink to the original: ``./data``, checkpoints and configs
  resolve as before without copying gigabytes, and ignored folders (virtualenvs, datasets)
  are pointed at, never walked;
- the script runs from the mirror of the folder bench was started in, so relative paths keep
  their meaning.

A script can still write *through* a link into the user's tree (overwriting a checkpoint
that already exists there); ``LinkWatch`` notices that and the report says so.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

# Code to copy per program, in MB; more is almost always a dataset or vendored tree that
# git does not ignore.
DEFAULT_MAX_COPY_MB = 100.0
# Entries LinkWatch looks at (stat only) across all the linked folders.
WATCH_LIMIT = 5000


class CopyError(Exception):
    """The project cannot be copied (too big, unreadable): a usage error, exit 2."""


@dataclass(frozen=True)
class Project:
    """What to copy: the user's project root, the script, and the code files in it."""

    root: Path  # absolute
    script: Path  # absolute, inside root
    workdir: Path  # where the script runs, relative to root ("." for the root itself)
    code: Tuple[Path, ...]  # code files, relative to root
    code_bytes: int
    notes: Tuple[str, ...] = ()

    @property
    def script_rel(self) -> Path:
        return self.script.relative_to(self.root)


def project_root(script: Path, config_root: Optional[str], config_found: bool, cwd: Path) -> Path:
    """The project the script belongs to: the config file's folder (as for ``check``), else
    the nearest folder above the script holding a ``pyproject.toml`` or ``.git`` (the
    catalogue's "project root"), else the current folder when the script is inside it, else
    the script's own folder. Never a whole home folder just because bench started there."""
    if config_found and config_root and _inside(script, Path(os.path.abspath(config_root))):
        return Path(os.path.abspath(config_root))
    for folder in script.parents:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    if _inside(script, cwd):
        return cwd
    return script.parent


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def find_project(script: Path, root: Path, cwd: Path, code: Sequence[Path], max_mb: float) -> Project:
    """The project to mirror; ``code`` are the files ``discover`` found under ``root``."""
    notes: List[str] = []
    if _inside(cwd, root):
        workdir = cwd.relative_to(root) if cwd != root else Path(".")
    else:
        workdir = script.parent.relative_to(root) if script.parent != root else Path(".")
        notes.append(f"the current folder is outside the project root {root}: the script runs from its own folder")
    relative = []
    for path in code:
        absolute = Path(os.path.abspath(path))
        if _inside(absolute, root) and absolute.is_file():
            relative.append(absolute.relative_to(root))
    script_rel = script.relative_to(root)
    if script_rel not in relative:
        relative.append(script_rel)  # a script that check would skip (excluded) still runs
    sizes = {rel: _size(root / rel) for rel in relative}
    total = sum(sizes.values())
    if total > max_mb * 1e6:
        raise CopyError(_too_big(root, sizes, total, max_mb))
    return Project(root, script, workdir, tuple(sorted(relative)), total, tuple(notes))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _too_big(root: Path, sizes: Dict[Path, int], total: int, max_mb: float) -> str:
    by_folder: Dict[str, int] = {}
    for rel, size in sizes.items():
        top = rel.parts[0] + ("/" if len(rel.parts) > 1 else "")
        by_folder[top] = by_folder.get(top, 0) + size
    biggest = sorted(by_folder.items(), key=lambda item: -item[1])[:5]
    listed = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in biggest)
    return (
        f"{root} holds {total / 1e6:.1f} MB of Python files to copy, more than the limit of "
        f"{max_mb:g} MB (--max-copy-mb). Largest: {listed}. Add what the script does not need to "
        f"extend-exclude in [tool.pytorch-perflint] or to .gitignore (those files are then linked, "
        f"not copied), or raise --max-copy-mb."
    )


@dataclass(frozen=True)
class Copy:
    """One program's mirror of the project."""

    name: str
    root: Path  # the mirror's root
    project: Project

    @property
    def script(self) -> Path:
        return self.root / self.project.script_rel

    @property
    def workdir(self) -> Path:
        return self.root / self.project.workdir

    def code_files(self) -> List[Path]:
        return [self.root / rel for rel in self.project.code]

    def original(self, path: Path) -> Path:
        """The user's file that ``path`` (inside this copy) mirrors."""
        return self.project.root / Path(path).relative_to(self.root)


def make_copy(project: Project, destination: Path, name: str, skip: Sequence[Path] = ()) -> Copy:
    """Mirror the project into ``destination`` (which must not exist): code copied, the rest
    linked. ``skip`` holds folders never to mirror (the temporary folder itself)."""
    code = set(project.code)
    needed = {Path(".")}
    for rel in list(code) + [project.workdir / "_"]:
        needed.update(rel.parents)
    skipped = {os.path.abspath(p) for p in skip}
    destination.mkdir(parents=True)
    for folder in sorted(needed, key=lambda p: len(p.parts)):
        source_folder = project.root / folder
        target_folder = destination / folder
        target_folder.mkdir(exist_ok=True)
        try:
            entries = sorted(os.listdir(source_folder))
        except OSError as error:
            raise CopyError(f"{source_folder}: cannot read folder: {error.strerror or error}") from None
        for entry in entries:
            rel = folder / entry if folder != Path(".") else Path(entry)
            source = project.root / rel
            if os.path.abspath(source) in skipped or rel in needed:
                continue
            target = destination / rel
            try:
                if rel in code:
                    shutil.copy2(source, target)
                else:
                    os.symlink(source, target, target_is_directory=source.is_dir())
            except OSError as error:
                raise CopyError(f"{source}: cannot mirror: {error.strerror or error}") from None
    return Copy(name, destination, project)


def linked_entries(copy: Copy) -> List[Path]:
    """The originals a copy links to (absolute paths in the user's tree)."""
    found = []
    for folder, dirs, files in os.walk(copy.root):
        for name in dirs + files:
            path = Path(folder) / name
            if path.is_symlink():
                found.append(Path(os.readlink(path)))
    return sorted(found)


def remove(path: Path) -> None:
    """Delete a copy. ``shutil.rmtree`` unlinks symlinks and never follows them, so the
    originals they point at stay untouched."""
    shutil.rmtree(path, ignore_errors=True)


class LinkWatch:
    """Size and modification time of what the copies link to, before and after the runs,
    to tell the user when a script wrote into their tree through a link."""

    def __init__(self, originals: Sequence[Path], limit: int = WATCH_LIMIT) -> None:
        self.originals = list(originals)
        self.limit = limit
        self.complete = True
        self.before = self._scan()

    def _scan(self) -> Dict[str, Tuple[int, int]]:
        seen: Dict[str, Tuple[int, int]] = {}
        for original in self.originals:
            for path in self._walk(original):
                if len(seen) >= self.limit:
                    self.complete = False
                    return seen
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                seen[path] = (info.st_size, info.st_mtime_ns)
        return seen

    @staticmethod
    def _walk(top: Path):
        yield str(top)
        if top.is_dir() and not top.is_symlink():
            for folder, dirs, files in os.walk(top):
                for name in dirs + files:
                    yield os.path.join(folder, name)

    def changes(self) -> List[str]:
        """Paths created, changed or deleted since the watch began (capped like the scan)."""
        after = self._scan()
        changed = [p for p in after if p in self.before and after[p] != self.before[p]]
        created = [p for p in after if p not in self.before]
        deleted = [p for p in self.before if p not in after] if self.complete else []
        return sorted(changed + created + deleted)
