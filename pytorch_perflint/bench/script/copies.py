"""The copies a user's script runs in: the project's files copied, links only where a copy costs.

``bench SCRIPT`` never runs or fixes the user's own files. Each program (before, after, the
A/A control, one "after" per rule) gets a mirror of the project root in a temporary folder:

- every folder is a real folder and every file a copy (the code files ``check`` would lint,
  configs, ``log.txt``, ``data/keep.txt``...), so what the script writes lands in the copy;
- linked, not copied (the report says which): folders git ignores and that hold no code
  (datasets, virtualenvs, outputs: pointed at, never walked), ``.git``, the project's own
  symlinks, and files over ``--link-above-mb``. A Python write to a linked entry copies it
  first (``guard.py``, copy on write), so a link is only ever read through;
- the script runs from the mirror of the folder bench was started in, so relative paths keep
  their meaning.

A writer outside Python (a shell child, C code) could still write through a link;
``LinkWatch`` notices that and the report says so.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

# Code to copy per program, in MB; more is almost always a dataset or vendored tree that
# git does not ignore.
DEFAULT_MAX_COPY_MB = 100.0
# Files larger than this are linked (copied on a write), not copied for every program.
DEFAULT_LINK_ABOVE_MB = 16.0
# Other files copied per program, in MB, and entries mirrored: beyond them the project
# holds a dataset git does not ignore.
MAX_DATA_COPY_MB = 1000.0
MAX_ENTRIES = 20_000
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
    # The mirror (relative to root): real folders, copied files, linked entries. Planned
    # once by ``find_project``; a Project made without a plan mirrors as ``plan`` would.
    folders: Tuple[Path, ...] = ()
    files: Tuple[Path, ...] = ()
    linked: Tuple[Path, ...] = ()
    planned: bool = False

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


def find_project(
    script: Path,
    root: Path,
    cwd: Path,
    code: Sequence[Path],
    max_mb: float,
    link_above_mb: float = DEFAULT_LINK_ABOVE_MB,
    skip: Sequence[Path] = (),
) -> Project:
    """The project to mirror; ``code`` are the files ``discover`` found under ``root``.
    ``skip``: folders never to mirror (bench's own temporary folder)."""
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
    project = Project(root, script, workdir, tuple(sorted(relative)), total, tuple(notes))
    mirror = plan(project, link_above_mb, skip)
    return dataclasses.replace(mirror, notes=mirror.notes + _linked_note(mirror, link_above_mb))


def plan(project: Project, link_above_mb: float = DEFAULT_LINK_ABOVE_MB, skip: Sequence[Path] = ()) -> Project:
    """Decide, once, what each program's mirror copies and what it links (see the module
    docstring); raises CopyError when that is more than a copy should hold."""
    from ... import gitignore

    root = project.root
    code = set(project.code)
    needed = {Path(".")}
    for rel in list(code) + [project.workdir / "_"]:
        needed.update(rel.parents)
    skipped = {os.path.abspath(p) for p in skip}
    limit = link_above_mb * 1e6
    folders: List[Path] = []
    files: List[Path] = []
    linked: List[Path] = []
    data_bytes = 0
    stack = [(Path("."), gitignore.for_folder(str(root)))]
    while stack:
        folder, rules = stack.pop()
        folders.append(folder)
        try:
            entries = sorted(os.scandir(root / folder), key=lambda e: e.name)
        except OSError as error:
            raise CopyError(f"{root / folder}: cannot read folder: {error.strerror or error}") from None
        for entry in entries:
            rel = folder / entry.name if folder != Path(".") else Path(entry.name)
            if os.path.abspath(entry.path) in skipped:
                continue
            if len(folders) + len(files) + len(linked) > MAX_ENTRIES:
                raise CopyError(_too_many(root))
            try:
                if rel in needed and entry.is_dir():  # holds code to copy (through a link too)
                    stack.append((rel, rules.enter(entry.name, entry.path) if rules is not None else None))
                elif entry.is_symlink():
                    linked.append(rel)
                elif entry.is_dir():
                    ignored = rules is not None and rules.ignored(entry.name, is_dir=True)
                    if entry.name == ".git" or ignored:
                        linked.append(rel)
                    else:
                        stack.append((rel, rules.enter(entry.name, entry.path) if rules is not None else None))
                elif rel in code:
                    files.append(rel)
                elif entry.is_file() and entry.stat().st_size <= limit:
                    files.append(rel)
                    data_bytes += entry.stat().st_size
                else:
                    linked.append(rel)
            except OSError as error:
                raise CopyError(f"{entry.path}: cannot mirror: {error.strerror or error}") from None
        if data_bytes > MAX_DATA_COPY_MB * 1e6:
            raise CopyError(_too_much_data(root, data_bytes, link_above_mb))
    for rel in code:  # code the walk did not meet (a symlinked file): still copied
        if rel not in files:
            files.append(rel)
            linked = [l for l in linked if l != rel]
    return dataclasses.replace(
        project, folders=tuple(sorted(folders, key=lambda p: len(p.parts))), files=tuple(sorted(files)), linked=tuple(sorted(linked)), planned=True
    )


def _linked_note(project: Project, link_above_mb: float) -> Tuple[str, ...]:
    if not project.linked:
        return ()
    shown = []
    for rel in project.linked[:6]:
        path = project.root / rel
        if path.is_symlink():
            shown.append(f"{rel} (a link in your project)")
        elif path.is_dir():
            shown.append(f"{rel}/" + ("" if rel.name == ".git" else " (ignored by git)"))
        else:
            shown.append(f"{rel} ({_size(path) / 1e6:.0f} MB, over --link-above-mb {link_above_mb:g})")
    more = f" and {len(project.linked) - 6} more" if len(project.linked) > 6 else ""
    return (
        f"linked into the copies, not copied: {', '.join(shown)}{more}; the script reads your files through "
        f"these links, and a write to one from Python copies it first, so your files are not changed",
    )


def _too_many(root: Path) -> str:
    return (
        f"{root} holds more than {MAX_ENTRIES} files and folders to copy for each run: add the folders the "
        f"script does not need (datasets, outputs) to .gitignore, and bench links them instead of copying"
    )


def _too_much_data(root: Path, data_bytes: int, link_above_mb: float) -> str:
    return (
        f"{root} holds over {data_bytes / 1e6:.0f} MB of files (each under --link-above-mb {link_above_mb:g}) to copy "
        f"for each run, more than {MAX_DATA_COPY_MB:g} MB: add the data folders to .gitignore (bench then links them "
        f"and copies only what the script writes) or lower --link-above-mb"
    )


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
    """Mirror the project into ``destination`` (which must not exist) as ``plan`` decided:
    real folders, copied files, links for the rest. ``skip`` holds folders never to mirror
    (the temporary folder itself)."""
    mirror = project if project.planned else plan(project, skip=skip)
    skipped = [Path(os.path.abspath(p)) for p in skip]

    def kept(rel: Path) -> bool:
        path = project.root / rel
        return not any(path == s or s in path.parents for s in skipped)

    destination.mkdir(parents=True)
    try:
        for folder in filter(kept, mirror.folders):
            (destination / folder).mkdir(exist_ok=True)
        for rel in filter(kept, mirror.files):
            shutil.copy2(project.root / rel, destination / rel)
        for rel in filter(kept, mirror.linked):
            source = project.root / rel
            os.symlink(source, destination / rel, target_is_directory=source.is_dir())
    except OSError as error:
        raise CopyError(f"{getattr(error, 'filename', None) or project.root}: cannot mirror: {error.strerror or error}") from None
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
