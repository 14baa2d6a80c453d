"""Writing a fixed file back: whole or not at all, only inside the linted roots, keeping
what the file is (mode, owner, hard links).

- Only when the file on disk still holds the bytes that were read: an editor may have
  saved it meanwhile, and its change must win.
- Never through a symlink that leads out of the linted roots: a tree must not be able to
  make the tool write elsewhere (``tree/link.py -> ../outside/target.py``). Such a fix is
  skipped, with a warning; the finding stays reported.
- A read-only file (no write bit, or no write permission) is not rewritten: the rename
  that makes writes atomic would otherwise replace it regardless of its mode. That is an
  error, as every write that fails is: the user asked for a fix that was not made.
- Atomic: the new bytes go to a temporary file in the same folder, which then replaces the
  file (``os.replace``), so a reader, a crash or Ctrl-C never sees half a file. The
  temporary file gets the file's mode and owner first. A worker told to stop (Ctrl-C, the
  time limit) finishes a write it has begun (``workers.uninterruptible``), so no temporary
  file is left behind either.
- Where replacing would change what the file is, the bytes are written into the file
  itself instead: when it has other hard links (a new inode would split them: the other
  names would keep the old text) or when its owner cannot be given to a new file (not
  permitted for this user). Such a write cannot be atomic; it is made as safe as it can
  be: nothing is truncated before the new bytes are known to fit (a temporary copy is
  written first, so a full disk fails before the file is touched), stops wait for it to
  end, and if it fails half-way the old bytes are put back.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .workers import uninterruptible

TEMP_SUFFIX = ".tpf-tmp"


@dataclass(frozen=True)
class NotWritten:
    """Why a fix was not written. ``error``: a failure (exit 2); otherwise a fix skipped
    on purpose (a warning)."""

    message: str
    error: bool = True


def _inside(real: str, roots: Sequence[str]) -> bool:
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def real_roots(paths: Sequence[str]) -> tuple:
    """The linted roots as real paths, for ``write_fixed``: a folder's symlinks resolved;
    a named file's folder resolved but not the file itself, so that a named symlink to a
    file elsewhere is not written through (as for one met in a folder)."""
    return tuple(_real_root(p) for p in paths)


def _real_root(path: str) -> str:
    if os.path.isdir(path):
        return os.path.realpath(path)
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(folder), name)


def write_fixed(path: Path, original: bytes, new: bytes, roots: Optional[Sequence[str]] = None) -> Optional[NotWritten]:
    """Replace the file's bytes ``original`` with ``new``; None when written, else why not.

    ``roots`` are the real paths the run was asked to lint (``real_roots``); a file whose
    real path is outside all of them (reached through a symlink) is not written. None:
    the file itself is the root (it was named explicitly).
    """
    target = os.path.realpath(path)  # a symlink inside the roots is written through
    if roots is not None and not _inside(target, roots):
        return NotWritten(f"{path}: fix not written: it is a symlink to {target}, outside the paths being linted", error=False)
    try:
        info = os.stat(target)
    except OSError as error:
        return NotWritten(f"{path}: fix not written: {error.strerror or error}")
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        return NotWritten(f"{path}: fix not written: the file is read-only")
    try:
        current = _read(target)
    except OSError as error:
        return NotWritten(f"{path}: fix not written: {error.strerror or error}")
    if current != original:
        return NotWritten(f"{path}: fix not written: the file changed on disk since it was read")
    try:
        _write(target, info, original, new)
    except OSError as error:
        return NotWritten(f"{path}: fix not written: {error.strerror or error}")
    return None


def _read(target: str) -> bytes:
    with open(target, "rb") as handle:
        return handle.read()


def _write(target: str, info: os.stat_result, original: bytes, new: bytes) -> None:
    # From the temporary file's creation to its removal: a stop waits, so that neither a
    # half-written file nor a stray temporary file is left behind.
    with uninterruptible():
        folder, name = os.path.split(target)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(new)
                handle.flush()
                os.fsync(handle.fileno())
            in_place = info.st_nlink > 1 or not _give_owner(temp, info)
            if not in_place:
                os.chmod(temp, stat.S_IMODE(info.st_mode))  # after chown, which clears set-id bits
            if _read(target) != original:
                raise OSError(0, "the file changed on disk since it was read")
            if in_place:
                _write_in_place(target, original, new)
            else:
                os.replace(temp, target)
        finally:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass


def _give_owner(temp: str, info: os.stat_result) -> bool:
    """Give the temporary file the target's owner and group; False when not permitted."""
    if not hasattr(os, "chown"):
        return True
    temp_info = os.stat(temp)
    if (temp_info.st_uid, temp_info.st_gid) == (info.st_uid, info.st_gid):
        return True
    try:
        os.chown(temp, info.st_uid, info.st_gid)
    except PermissionError:
        return False
    return True


def _write_in_place(target: str, original: bytes, new: bytes) -> None:
    """Overwrite the file's own bytes (same inode: hard links, owner, ACLs all kept)."""
    with open(target, "r+b") as handle:
        try:
            handle.write(new)
            handle.truncate(len(new))
            handle.flush()
            os.fsync(handle.fileno())
        except OSError:
            handle.seek(0)
            handle.write(original)
            handle.truncate(len(original))
            handle.flush()
            raise
