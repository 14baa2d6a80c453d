"""``pytorch-perflint clean``: remove the lint caches (ruff's ``clean``): the one a run from
here writes (at the project root, see ``cache.project_root``) and any under this folder."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from .cache import CACHE_DIR, project_root
from .config import ConfigError, load_settings

EXIT_OK, EXIT_ERROR = 0, 2  # the CLI's codes (cli.py imports this module lazily)


@click.command("clean")
@click.option("-q", "--quiet", is_flag=True, help="Say nothing.")
def clean_command(quiet: bool) -> None:
    """Remove the lint caches of this folder, its subfolders and its project."""
    found = []
    try:
        root = project_root(load_settings(["."]), Path("."))  # where a run from here caches
        if root is not None:
            found.append(root / CACHE_DIR)
    except ConfigError as error:  # a broken config must not keep its cache from going
        click.echo(f"warning: {error}", err=True)
    for folder, subfolders, _ in os.walk("."):
        if CACHE_DIR in subfolders:
            found.append(Path(folder, CACHE_DIR))
            subfolders.remove(CACHE_DIR)
    failed = False
    for path in dict.fromkeys(Path(os.path.abspath(p)) for p in found):
        if not path.is_dir() or path.is_symlink():
            continue
        if not quiet:
            click.echo(f"Removing cache at: {os.path.relpath(path)}", err=True)
        try:
            shutil.rmtree(path)
        except OSError as error:
            click.echo(f"error: {path}: cannot remove: {error.strerror or error}", err=True)
            failed = True
    sys.exit(EXIT_ERROR if failed else EXIT_OK)
