"""Which paths of a git work tree are ignored, read the way git reads them, without git.

Discovery used to ask ``git ls-files``, and git runs programs named in the linted tree's own
``.git/config`` (``core.fsmonitor``, for one): linting an untrusted tree ran its command.
Here nothing is run. The rules come from the files git reads, matched with ``pathspec``'s
implementation of git's wildmatch:

- ``.gitignore`` in every folder from the work tree's root down (a deeper file overrides a
  shallower one; in a file, the last matching pattern decides; ``!`` re-includes;
  a leading or middle ``/`` anchors to the file's folder; a trailing ``/`` only matches
  folders), then ``$GIT_DIR/info/exclude``, then the user's global excludes file
  (``core.excludesFile`` of ``~/.gitconfig``, else ``$XDG_CONFIG_HOME/git/ignore``);
- a file in an ignored folder stays ignored (the walk does not enter the folder);
- files in git's index (tracked files) are never ignored, as in git; the index is read as
  data, on first need.

Every file is read only if it is a regular file, never through a symlink inside the tree
(git does not follow a symlinked ``.gitignore`` either) and never blocking (a FIFO named
``.gitignore`` cannot stall the walk). The tree's own ``.git/config`` is not read at all.
"""

from __future__ import annotations

import dataclasses
import os
import re
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, FrozenSet, List, Optional, Set, Tuple

from .tree_files import read_regular

if TYPE_CHECKING:  # imported when an ignore file is read: a tree without one never needs it
    import pathspec

# Ignore files larger than these are not read (no real one comes near).
MAX_IGNORE_FILE_BYTES = 8 * 1024 * 1024
MAX_INDEX_BYTES = 512 * 1024 * 1024


def _spec(data: Optional[bytes]) -> Optional[pathspec.GitIgnoreSpec]:
    if not data:
        return None
    import pathspec

    lines = data.decode("utf-8", errors="surrogateescape").splitlines()
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec) else None


# -- the git folder and its index --------------------------------------------------------


def git_dir(work_tree: str) -> Optional[str]:
    """The git folder of a work tree root: ``.git``, or where a ``.git`` file points
    (worktrees and submodules); None when ``work_tree`` is not a root."""
    dot_git = os.path.join(work_tree, ".git")
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        return dot_git
    data = read_regular(dot_git, 4096)
    if data is None:
        return None
    match = re.match(rb"gitdir:\s*(.+?)\s*$", data)
    if match is None:
        return None
    target = os.fsdecode(match.group(1))
    return os.path.normpath(os.path.join(work_tree, target))


def _common_dir(gitdir: str) -> str:
    """A linked worktree keeps info/exclude in the main repository's git folder."""
    data = read_regular(os.path.join(gitdir, "commondir"), 4096, follow=True)
    if data is None:
        return gitdir
    return os.path.normpath(os.path.join(gitdir, os.fsdecode(data.strip())))


_GITLINK = 0o160000


def read_index(gitdir: str) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(tracked paths, folders that hold tracked paths or are submodules), relative to the
    work tree, from git's index (versions 2 to 4); empty when it cannot be read."""
    data = read_regular(os.path.join(gitdir, "index"), MAX_INDEX_BYTES, follow=True)
    try:
        files = _index_entries(data or b"")
    except (struct.error, ValueError, IndexError):
        files = []
    paths: Set[str] = set()
    folders: Set[str] = set()
    for path, mode in files:
        if mode == _GITLINK or path.endswith("/"):  # a submodule, or a sparse-index folder
            folders.add(path.rstrip("/"))
        else:
            paths.add(path)
        parent = os.path.dirname(path.rstrip("/"))
        while parent and parent not in folders:
            folders.add(parent)
            parent = os.path.dirname(parent)
    return frozenset(paths), frozenset(folders)


def _index_entries(data: bytes) -> List[Tuple[str, int]]:
    if len(data) < 12 or data[:4] != b"DIRC":
        return []
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return []
    # SHA-1 repositories store 20-byte ids; SHA-256 ones 32. The first entry tells which:
    # its flags' name length must match the NUL that ends the name.
    for id_size in (20, 32):
        try:
            return _entries(data, version, count, id_size)
        except ValueError:
            continue
    return []


def _entries(data: bytes, version: int, count: int, id_size: int) -> List[Tuple[str, int]]:
    entries: List[Tuple[str, int]] = []
    offset = 12
    previous = b""
    for _ in range(count):
        start = offset
        mode = struct.unpack(">I", data[offset + 24 : offset + 28])[0]
        offset += 40 + id_size
        flags = struct.unpack(">H", data[offset : offset + 2])[0]
        offset += 2
        if version >= 3 and flags & 0x4000:
            offset += 2
        if version == 4:
            strip, offset = _varint(data, offset)
            end = data.index(b"\0", offset)
            if strip > len(previous):
                raise ValueError("bad prefix length")
            name = previous[: len(previous) - strip] + data[offset:end]
            offset = end + 1
        else:
            end = data.index(b"\0", offset)
            name = data[offset:end]
            length = flags & 0x0FFF
            if length != 0x0FFF and length != len(name):
                raise ValueError("name length does not match")
            offset = start + ((end - start) // 8 + 1) * 8  # 1 to 8 NULs up to a multiple of 8
        previous = name
        entries.append((os.fsdecode(name), mode))
    return entries


def _varint(data: bytes, offset: int) -> Tuple[int, int]:
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        value += 1
        byte = data[offset]
        offset += 1
        value = (value << 7) + (byte & 0x7F)
    return value, offset


# -- the user's global excludes ----------------------------------------------------------


def _global_excludes() -> Optional[pathspec.GitIgnoreSpec]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    path = os.path.join(xdg, "git", "ignore")
    for config in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")):
        named = _core_excludes_file(read_regular(config, 1024 * 1024, follow=True))
        if named:
            path = os.path.expanduser(named)
    return _spec(read_regular(path, MAX_IGNORE_FILE_BYTES, follow=True))


def _core_excludes_file(config: Optional[bytes]) -> Optional[str]:
    """``core.excludesFile`` from a git config file (the plain spellings of it)."""
    if not config:
        return None
    section, found = None, None
    for raw in config.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[] ").lower()
        elif section == "core" and "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            if key.lower() == "excludesfile":
                found = value.strip('"')
    return found


# -- the rules of one folder -------------------------------------------------------------


@dataclass
class Repository:
    """One work tree: its root and what it tracks (the index, read on first need)."""

    root: str
    gitdir: str
    _tracked: Optional[Tuple[FrozenSet[str], FrozenSet[str]]] = field(default=None, repr=False)

    def tracked(self, rel: str, is_dir: bool) -> bool:
        if self._tracked is None:
            self._tracked = read_index(self.gitdir)
        files, folders = self._tracked
        return rel in (folders if is_dir else files)


@dataclass(frozen=True)
class Rules:
    """The ignore rules in force in one folder of a work tree."""

    repo: Repository
    folder: str  # relative to the work tree root, "" for the root
    specs: Tuple[Tuple[str, pathspec.GitIgnoreSpec], ...]  # (base folder, spec), weakest first
    # The folder itself is ignored (a path named below an ignored folder): only tracked
    # files count.
    inside_ignored: bool = False

    def ignored(self, name: str, is_dir: bool) -> bool:
        """Whether ``name``, an entry of this folder, is ignored."""
        rel = f"{self.folder}/{name}" if self.folder else name
        if not self.inside_ignored and not self._matches(rel, is_dir):
            return False
        return not self.repo.tracked(rel, is_dir)

    def _matches(self, rel: str, is_dir: bool) -> bool:
        decision = False
        for base, spec in self.specs:
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub + "/" if is_dir else sub).include
            if result is not None:
                decision = result
        return decision

    def enter(self, name: str, absolute: str) -> "Rules":
        """The rules inside the sub-folder ``name`` (absolute path ``absolute``) of the same
        work tree (a sub-folder holding ``.git`` is another one: ``root_rules``)."""
        rel = f"{self.folder}/{name}" if self.folder else name
        spec = _spec(read_regular(os.path.join(absolute, ".gitignore"), MAX_IGNORE_FILE_BYTES))
        specs = self.specs + ((rel, spec),) if spec is not None else self.specs
        return Rules(self.repo, rel, specs, self.inside_ignored)


def root_rules(root: str) -> Optional[Rules]:
    """The rules at the root of the work tree at ``root`` (a folder holding ``.git``);
    None when its ``.git`` is not a git folder."""
    gitdir = git_dir(root)
    if gitdir is None:
        return None
    specs: List[Tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = read_regular(os.path.join(_common_dir(gitdir), "info", "exclude"), MAX_IGNORE_FILE_BYTES, follow=True)
    for base, spec in (("", _global_excludes()), ("", _spec(exclude)), ("", _spec(read_regular(os.path.join(root, ".gitignore"), MAX_IGNORE_FILE_BYTES)))):
        if spec is not None:
            specs.append((base, spec))
    return Rules(Repository(root, gitdir), "", tuple(specs))


def for_folder(folder: str) -> Optional[Rules]:
    """The rules in force in ``folder`` (absolute): found by walking up to the nearest
    work tree root and down again through each ``.gitignore``; None outside a work tree."""
    folder = os.path.abspath(folder)
    root = folder
    while not os.path.lexists(os.path.join(root, ".git")):
        parent = os.path.dirname(root)
        if parent == root:
            return None
        root = parent
    rules = root_rules(root)
    if rules is None or folder == root:
        return rules
    current = root
    for name in os.path.relpath(folder, root).split(os.sep):  # no .git on the way down
        if rules.ignored(name, is_dir=True):
            rules = dataclasses.replace(rules, inside_ignored=True)
        current = os.path.join(current, name)
        rules = rules.enter(name, current)
    return rules


def ignored_file(path: str) -> bool:
    """Whether git would ignore the file at ``path`` (absolute)."""
    rules = for_folder(os.path.dirname(path))
    return rules is not None and rules.ignored(os.path.basename(path), is_dir=False)
