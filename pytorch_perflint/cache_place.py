"""Where a run's cache lives: the project root of its first path; without one, the current
folder when every path is inside it (ruff's choice), else the folder that holds them all."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

from .config import Settings


def project_root(settings: Settings, start: Path) -> Optional[Path]:
    """The project's root above ``start`` (``config.project_root``), None without one."""
    from .config import project_root as root_of

    return root_of(settings, start)


def cache_root(settings: Settings, paths: Sequence[Path]) -> Optional[Path]:
    """Where the cache of a run over ``paths`` goes: the project root of the first path;
    without one, the current folder when every path is inside it (ruff's choice), else
    the deepest folder that holds them all (None: only the file system's root does)."""
    if not paths:
        return None
    root = project_root(settings, paths[0])
    if root is not None:
        return root
    here = os.getcwd()
    absolute = [os.path.abspath(p) for p in paths]
    try:
        common = os.path.commonpath([here, *absolute])
    except ValueError:  # different drives
        return None
    if common == here:
        return Path(here)
    folders = [p if os.path.isdir(p) else os.path.dirname(p) for p in absolute]
    common = os.path.commonpath(folders)
    return Path(common) if os.path.dirname(common) != common else None
