"""Reading the linted tree's own files as untrusted data (ignore files, git's index, the
cache): a regular file only, never through a symlink the tree placed, never blocking (a
FIFO named ``.gitignore`` cannot stall a run), and never more than a limit."""

from __future__ import annotations

import os
import stat
from typing import Optional, Tuple

# (size, mtime in ns, inode): how the cache and the project index tell that a file changed
# without reading it (ruff's cache does the same).
StatKey = Tuple[int, int, int]


def stat_key(path: str) -> Optional[StatKey]:
    """(size, mtime_ns, inode) of a file, None when it cannot be stat'ed."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def read_regular(path: "os.PathLike[str] | str", limit: int, follow: bool = False) -> Optional[bytes]:
    """A regular file's bytes when it has at most ``limit`` of them; None for anything
    else or any error. ``follow``: a symlink at ``path`` itself may be followed (for files
    outside the tree, such as the user's global git config)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_source(path: "os.PathLike[str] | str", limit: int) -> "bytes | int":
    """A file to lint: its bytes, or its size when it has more than ``limit`` (0: no limit),
    so that a huge file is not read at all. Never blocks (a FIFO), and reads a regular file
    only (``/dev/zero`` would never end); anything else raises OSError."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        if limit and info.st_size > limit:
            return info.st_size
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)
