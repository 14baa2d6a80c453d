"""Which files to lint: walk the paths, skip what is excluded or git-ignored.

Rules (ruff's, where it has one):
- Folders are walked for ``*.py`` and ``*.pyi``; symlinked folders met during the walk are
  not followed (as git and ruff do), so a symlink loop cannot trap the walk; symlinked
  files are linted.
- Default excludes (VCS, virtualenvs, caches, build output, any folder with ``pyvenv.cfg``)
  unless ``exclude`` replaces them; ``extend-exclude`` adds to them. A pattern without a
  ``/`` matches a file or folder name anywhere; one with a ``/`` matches the path relative
  to the project root (the config file's folder).
- Git-ignored files are skipped: ``.gitignore`` files, ``.git/info/exclude`` and the
  global excludes file are read and matched as git does (``gitignore``), and tracked files
  are never ignored. No git program is run: git would run commands the linted tree's own
  config names. Outside a work tree (no ``.git`` above), nothing is git-ignored.
- A path named on the command line is linted even if excluded, unless ``force-exclude``.
- Problems (a missing path, an unreadable folder) are collected, never raised: the rest of
  the tree is still linted.
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import gitignore
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


def _any_of(globs: Sequence[str]) -> Optional["re.Pattern[str]"]:
    """A regex matching what any of ``globs`` matches with ``fnmatchcase``; None for none."""
    if not globs:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs))


class _Matcher:
    """Exclusion by glob: names anywhere, or paths relative to the project root."""

    def __init__(self, settings: Settings) -> None:
        patterns = list(DEFAULT_EXCLUDES if settings.exclude is None else settings.exclude)
        patterns.extend(settings.extend_exclude)
        self.root = os.path.abspath(settings.project_root or os.getcwd())
        self.name_patterns = [p.rstrip("/") for p in patterns if "/" not in p.rstrip("/")]
        self.path_patterns = [p.rstrip("/").removeprefix("./") for p in patterns if "/" in p.rstrip("/")]
        # One regex for every name pattern: the walk asks about every file and folder.
        self.names = _any_of(self.name_patterns)

    def excluded(self, path: str) -> bool:
        """``path`` is absolute."""
        if self.names is not None and self.names.match(os.path.basename(path)):
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


class _Walker:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.matcher = _Matcher(settings)
        self.errors: List[str] = []
        self.warnings: List[str] = []
        self.found: Dict[str, Path] = {}  # real path -> path as shown

    # -- walking --------------------------------------------------------------------------
    def add(self, shown: Path, real: Optional[str] = None) -> None:
        """``real``: the file's real path when the caller knows it (see ``walk``)."""
        self.found.setdefault(real or os.path.realpath(shown), shown)

    def walk(self, top: Path, rules: Optional[gitignore.Rules]) -> None:
        """Walk ``top`` (a folder named on the command line or found below one); ``rules``:
        the .gitignore rules in force in it (None: nothing is git-ignored)."""
        # Plain strings until a file is found: a Path per entry costs more than the walk.
        # Symlinked folders are not followed, so a folder's real path is its parent's plus
        # its name, and a plain file's its folder's plus its name: one realpath in all.
        start = str(top)
        stack: List[Tuple[str, Optional[gitignore.Rules], str, str]] = [(start, rules, os.path.abspath(start), os.path.realpath(start))]
        while stack:
            folder, rules, absolute_folder, real_folder = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
            except OSError as error:
                self.errors.append(f"{folder}: cannot read folder: {error.strerror or error}")
                continue
            names = {entry.name for entry in listed}
            if "pyvenv.cfg" in names and folder != start:
                continue
            if ".git" in names and folder != start and self.settings.respect_gitignore:
                # A nested repository (submodule, or a checkout inside a plain folder) has
                # its own ignore rules.
                rules = gitignore.root_rules(absolute_folder) or rules
            # Joined by hand (``os.path.join`` is most of the walk's own time); ``folder`` is
            # left out below the current folder, as ``Path`` joins.
            prefix = "" if folder == os.curdir else folder.rstrip(os.sep) + os.sep
            absolute_prefix = absolute_folder.rstrip(os.sep) + os.sep
            real_prefix = real_folder.rstrip(os.sep) + os.sep
            for entry in listed:
                name = entry.name
                try:
                    is_link = entry.is_symlink()
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_link, is_dir = False, False
                # Most of a real tree is not Python (torch ships 12,000 headers): skip those
                # before building any path for them.
                if not is_dir and not name.endswith(PYTHON_SUFFIXES):
                    continue
                path, absolute, real = prefix + name, absolute_prefix + name, real_prefix + name
                if is_dir:
                    if self.matcher.excluded(absolute):
                        continue
                    if rules is not None and (name == ".git" or rules.ignored(name, is_dir=True)):
                        continue
                    stack.append((path, rules.enter(name, absolute) if rules is not None else None, absolute, real))
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
                if rules is not None and rules.ignored(name, is_dir=False):
                    continue
                self.add(Path(path), None if is_link else real)

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
            rules = gitignore.for_folder(absolute) if self.settings.respect_gitignore else None
            if rules is not None and rules.inside_ignored and not self.settings.force_exclude:
                # Named, a folder git ignores is linted (as ruff does): the rules from above
                # that ignore it no longer apply, its own .gitignore files still do.
                own = tuple((base, spec) for base, spec in rules.specs if base == rules.folder)
                rules = dataclasses.replace(rules, specs=own, inside_ignored=False)
            self.walk(path, rules)
        elif not stat.S_ISREG(info.st_mode):
            kind = "a named pipe" if stat.S_ISFIFO(info.st_mode) else "a device or special file"
            self.errors.append(f"{raw}: not a regular file ({kind}): not linted")
        elif self.settings.force_exclude and self.settings.respect_gitignore:
            if not gitignore.ignored_file(absolute):
                self.add(path)
        else:
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


def display_path(path: Path, cwd: Optional[str] = None) -> Path:
    """A path as users see it: relative to the current folder when under it."""
    if not path.is_absolute() and os.pardir not in path.parts:
        return path  # already relative to the current folder, and normalised by Path
    cwd = cwd or os.getcwd()
    absolute = os.path.abspath(path)
    prefix = cwd.rstrip(os.sep) + os.sep
    if absolute == cwd:
        return Path(".")
    if absolute.startswith(prefix):
        return Path(absolute[len(prefix):])  # what relpath gives below cwd, without its work
    return Path(absolute)


def discover(paths: Sequence[str], settings: Settings) -> Discovery:
    """The files to lint from the command line's paths (default ``.``)."""
    walker = _Walker(settings)
    for raw in paths or (".",):
        walker.explicit(str(raw))
    cwd = os.getcwd()
    shown = {display_path(p, cwd) for p in walker.found.values()}
    files = tuple(sorted(shown, key=lambda p: p.as_posix()))
    return Discovery(files, tuple(walker.errors), tuple(walker.warnings))


def is_excluded(path: Path, settings: Settings) -> bool:
    """Whether ``exclude``/``extend-exclude`` leave out this file (or a folder above it,
    below the project root), as ``force-exclude`` decides for a named path. Git is not
    asked: for an editor's buffer, which may not be saved yet."""
    return _Walker(settings)._force_excluded(os.path.abspath(path))
