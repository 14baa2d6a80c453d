"""Settings: one frozen dataclass, loaded from pyproject.toml and merged with the flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

# The newest stable torch release: the default target-torch-version.
LATEST_TORCH = (2, 13)


@dataclass(frozen=True)
class Settings:
    """Everything that decides what a run reports and fixes.

    Selectors are kept as written (codes, prefixes, names or ``ALL``); ``selection`` turns
    them into rule classes.
    """

    select: Optional[Tuple[str, ...]] = None  # None: the default set
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    # (glob pattern, selectors) pairs.
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Optional[Tuple[str, ...]] = None  # None: the default excludes
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    target_torch_version: Tuple[int, int] = LATEST_TORCH
    preview: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    fixable: Optional[Tuple[str, ...]] = None  # None: all
    unfixable: Tuple[str, ...] = ()
    output_format: Optional[str] = None
    dataloader_num_workers: int = 4
    # Where the settings came from (the pyproject.toml), for messages and relative globs.
    project_root: Optional[str] = None
    extra: Tuple[Tuple[str, str], ...] = field(default=())
