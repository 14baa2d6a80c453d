"""Which files to lint: walk the paths, skip what is excluded or git-ignored.

Rules (ruff's, where it has one):
- Folders are walked for ``*.py`` and ``*.pyi``; symlinked folders met during the walk are
  not followed (as git and ruff do), so a symlink loop cannot trap the walk; symlinked
  files are linted.
- Default excludes (VCS, virtualenvs, caches, build output, any folder with ``pyvenv.cfg``)
  unless ``exclude`` replaces them; ``extend-exclude`` adds to them. A pattern without a
  ``/`` matches a file or folder name anywhere; one with a ``/`` matches the path relative
  to the project root (the config file's folder).
- Git-ignored files are skipped (asked of git once per repository: ``git ls-files``);
  without git, or outside a work tree, nothing is git-ignored.
- A path named on the command line is linted even if excluded, unless ``force-exclude``.
- Problems (a missing path, an unreadable folder) are collected, never raised: the rest of
  the tree is still linted.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .config import Settings

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")

DEFAULT_EXCLUDES: Tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".env",
    "env",
    "__pycache__",
    "build",
    "dist",
    ".eggs",
    "*.egg-info",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".pytorch_perflint_cache",
    ".ipynb_checkpoints",
    "node_modules",
    "site-packages",
    "__pypackages__",
)


@dataclass(frozen=True)
class Discovery:
    """The files to lint, sorted, and what went wrong on the way.

    ``errors`` make the exit code 2 (a path named on the command line that does not exist,
    a folder that cannot be read); ``warnings`` are only shown (a broken symlink met in the
    walk).
    """

    files: Tuple[Path, ...]
    errors: Tuple[str, ...] = ()
    warnings: Tuple[str, ...] = ()


class _Matcher:
    """Exclusion by glob: names anywhere, or paths relative to the project root."""

    def __init__(self, settings: Settings) -> None:
        patterns = list(DEFAULT_EXCLUDES if settings.exclude is None else settings.exclude)
        patterns.extend(settings.extend_exclude)
        self.root = os.path.abspath(settings.project_root or os.getcwd())
        self.name_patterns = [p.rstrip("/") for p in patterns if "/" not in p.rstrip("/")]
        self.path_patterns = [p.rstrip("/").removeprefix("./") for p in patterns if "/" in p.rstrip("/")]

    def excluded(self, path: str) -> bool:
        """``path`` is absolute."""
        name = os.path.basename(path)
        if any(fnmatch.fnmatchcase(name, p) for p in self.name_patterns):
            return True
        if not self.path_patterns:
            return False
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        for pattern in self.path_patterns:
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(path.replace(os.sep, "/"), pattern):
                return True
            # "**/x" also matches "x" at the root.
            if pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]):
                return True
        return False


@dataclass(frozen=True)
class _GitView:
    """What git says about one work-tree folder: the files it does not ignore."""

    base: str  # absolute folder git was asked from
    files: FrozenSet[str]  # paths relative to base
    dirs: FrozenSet[str]  # folders holding at least one of them (relative; "" = base)
    open_dirs: FrozenSet[str]  # untracked nested repositories / submodules: ask them

    def allows_file(self, rel: str) -> bool:
        return rel in self.files or self._under_open(rel)

    def allows_dir(self, rel: str) -> bool:
        return rel in self.dirs or rel in self.open_dirs or self._under_open(rel)

    def _under_open(self, rel: str) -> bool:
        return any(rel.startswith(d + "/") for d in self.open_dirs)


def _git_view(folder: str) -> Optional[_GitView]:
    """Ask git (once) which files under ``folder`` are tracked or untracked-but-not-ignored;
    None when ``folder`` is not in a work tree or git is not there."""
    try:
        completed = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    files: Set[str] = set()
    dirs: Set[str] = {""}
    open_dirs: Set[str] = set()
    for raw in completed.stdout.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        if rel.endswith("/"):  # an untracked nested repository
            open_dirs.add(rel.rstrip("/"))
            rel = rel.rstrip("/")
        else:
            files.add(rel)
        parent = os.path.dirname(rel)
        while parent not in dirs:
            dirs.add(parent)
            parent = os.path.dirname(parent)
    # Submodules are listed as a single (folder) entry.
    for rel in list(files):
        if os.path.isdir(os.path.join(folder, rel)):
            open_dirs.add(rel)
    return _GitView(os.path.abspath(folder), frozenset(files), frozenset(dirs), frozenset(open_dirs))


class _Walker:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.matcher = _Matcher(settings)
        self.errors: List[str] = []
        self.warnings: List[str] = []
        self.found: Dict[str, Path] = {}  # real path -> path as shown
        self.pending: List[Path] = []

    # -- walking --------------------------------------------------------------------------
    def add(self, shown: Path) -> None:
        real = os.path.realpath(shown)
        self.found.setdefault(real, shown)

    def walk(self, top: Path, view: Optional[_GitView]) -> None:
        """Walk ``top`` (a folder named on the command line or found below one)."""
        stack: List[Tuple[Path, Optional[_GitView]]] = [(top, view)]
        while stack:
            folder, view = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
            except OSError as error:
                self.errors.append(f"{folder}: cannot read folder: {error.strerror or error}")
                continue
            names = {entry.name for entry in listed}
            if "pyvenv.cfg" in names and folder != top:
                continue
            if ".git" in names and folder != top and self.settings.respect_gitignore:
                # A nested repository (submodule, or a checkout inside a plain folder) has
                # its own ignore rules: ask its git.
                view = _git_view(os.path.abspath(folder)) or view
            for entry in listed:
                path = folder / entry.name
                absolute = os.path.abspath(path)
                try:
                    is_link = entry.is_symlink()
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_link, is_dir = False, False
                if is_dir:
                    if self.matcher.excluded(absolute):
                        continue
                    if view is not None:
                        rel = os.path.relpath(absolute, view.base).replace(os.sep, "/")
                        if not view.allows_dir(rel):
                            continue
                    stack.append((path, view))
                    continue
                if not entry.name.endswith(PYTHON_SUFFIXES):
                    continue
                if is_link:
                    try:
                        target = os.stat(path)
                    except OSError as error:
                        reason = "a symlink loop" if error.errno == errno.ELOOP else "a broken symlink"
                        self.warnings.append(f"{path}: skipped: {reason}")
                        continue
                    if stat.S_ISDIR(target.st_mode):
                        continue  # a symlinked folder: not followed
                    if not stat.S_ISREG(target.st_mode):
                        continue
                elif not entry.is_file(follow_symlinks=False):
                    continue
                if self.matcher.excluded(absolute):
                    continue
                if view is not None:
                    rel = os.path.relpath(absolute, view.base).replace(os.sep, "/")
                    if not view.allows_file(rel):
                        continue
                self.add(path)

    def explicit(self, raw: str) -> None:
        path = Path(raw)
        try:
            info = os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                self.errors.append(f"{raw}: symlink loop")
            elif error.errno == errno.ENOENT:
                self.errors.append(f"{raw}: no such file or folder")
            else:
                self.errors.append(f"{raw}: {error.strerror or error}")
            return
        absolute = os.path.abspath(path)
        if self.settings.force_exclude and self._force_excluded(absolute):
            return
        if stat.S_ISDIR(info.st_mode):
            view = _git_view(absolute) if self.settings.respect_gitignore else None
            self.walk(path, view)
        elif self.settings.force_exclude and self.settings.respect_gitignore:
            self.pending.append(path)  # asked of git in one batch by finish()
        else:
            self.add(path)

    def finish(self) -> None:
        """Add the named files that git does not ignore (force-exclude only)."""
        ignored = _git_ignored([os.path.abspath(p) for p in self.pending]) if self.pending else set()
        for path in self.pending:
            if os.path.abspath(path) not in ignored:
                self.add(path)

    def _force_excluded(self, absolute: str) -> bool:
        """With force-exclude: whether a named path, or a folder above it below the project
        root, is excluded, or git ignores it."""
        root = self.matcher.root
        rel = os.path.relpath(absolute, root)
        if rel == os.curdir or rel.startswith(os.pardir):
            probes = [absolute]
        else:
            parts = Path(rel).parts
            probes = [os.path.join(root, *parts[: i + 1]) for i in range(len(parts))]
        if any(self.matcher.excluded(probe) for probe in probes):
            return True
        return False


def _git_ignored(paths: Sequence[str]) -> Set[str]:
    """Which of these absolute paths git ignores, in one call (empty without git)."""
    try:
        completed = subprocess.run(
            ["git", "check-ignore", "-z", "--stdin"],
            input=b"\0".join(os.fsencode(p) for p in paths) + b"\0",
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if completed.returncode not in (0, 1):  # 1: nothing ignored; 128: not a repository
        return set()
    return {os.path.abspath(os.fsdecode(raw)) for raw in completed.stdout.split(b"\0") if raw}


def display_path(path: Path, cwd: Optional[str] = None) -> Path:
    """A path as users see it: relative to the current folder when under it."""
    cwd = cwd or os.getcwd()
    absolute = os.path.abspath(path)
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return Path(os.path.relpath(absolute, cwd))
    return Path(absolute)


def discover(paths: Sequence[str], settings: Settings) -> Discovery:
    """The files to lint from the command line's paths (default ``.``)."""
    walker = _Walker(settings)
    for raw in paths or (".",):
        walker.explicit(str(raw))
    walker.finish()
    cwd = os.getcwd()
    shown = {display_path(p, cwd) for p in walker.found.values()}
    files = tuple(sorted(shown, key=lambda p: p.as_posix()))
    return Discovery(files, tuple(walker.errors), tuple(walker.warnings))


def is_excluded(path: Path, settings: Settings) -> bool:
    """Whether ``exclude``/``extend-exclude`` leave out this file (or a folder above it,
    below the project root), as ``force-exclude`` decides for a named path. Git is not
    asked: for an editor's buffer, which may not be saved yet."""
    return _Walker(settings)._force_excluded(os.path.abspath(path))
