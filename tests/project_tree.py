"""Small on-disk projects for the project layer's tests."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping

from pytorch_perflint.project import ProjectIndex


def write_project(root: Path, files: Mapping[str, str], marker: str = "pyproject.toml") -> Path:
    """Write ``files`` (relative path -> source, dedented) under ``root`` with a root marker."""
    root.mkdir(parents=True, exist_ok=True)
    if marker == ".git":
        (root / marker).mkdir(exist_ok=True)
    elif marker:
        (root / marker).write_text("", encoding="utf-8")
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return root


def index_of(root: Path, files: Mapping[str, str], **options) -> ProjectIndex:
    """A project written under ``root`` and its index (files listed by discovery)."""
    write_project(root, files)
    return ProjectIndex(root, **options)
