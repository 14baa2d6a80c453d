"""What the language server lints: an editor's buffer (a file's unsaved text, or a
notebook's cells joined as the CLI joins them), with the settings the CLI would use for it.

``lint_buffer`` is the one place the server calls the engine, so the project-wide facts of
a later analysis can be handed in there without touching the protocol code.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

from ..config import ConfigError, Settings, load_settings, project_root
from ..discovery import is_excluded
from ..project.linted import index_for
from ..types import Diagnostic
from .project import Answer, ProjectCaches

if TYPE_CHECKING:  # the engine and LibCST are imported when a buffer is linted, not before
    from .. import notebook
    from ..engine import FileLint

# The on-disk caches of the projects the server's buffers are in.
PROJECTS = ProjectCaches()


@dataclass(frozen=True)
class Cell:
    """One Python code cell of an open notebook: its text document."""

    uri: str
    version: Optional[int]
    text: str


@dataclass(frozen=True)
class Buffer:
    """The text the engine reads for one open document or notebook.

    For a notebook, ``text`` is its code cells joined (magics masked, cell markers between)
    and ``book`` says which row of it belongs to which cell.
    """

    uri: str
    path: Path
    text: str
    version: Optional[int] = None
    cells: Tuple[Cell, ...] = ()
    book: Optional[notebook.Notebook] = field(default=None, compare=False)

    @property
    def is_notebook(self) -> bool:
        return self.book is not None


@dataclass(frozen=True)
class Linted:
    """One lint of a buffer's text; ``settings`` is None when the config is invalid
    (``error`` says why) and nothing was linted."""

    text: str
    lint: Union["FileLint", Answer]
    settings: Optional[Settings] = None
    error: Optional[str] = None
    from_cache: bool = False  # answered by the on-disk cache, not linted


def settings_for(path: Path) -> Settings:
    """The settings ``check`` uses for ``path`` when run from its project's root: without
    a config file, paths in the settings are relative to the project's root marker, not
    to wherever the editor started the server (and ``check``'s cache is then shared)."""
    settings = load_settings([path])
    if settings.config_path is None:
        root = project_root(settings, path)
        if root is not None:
            settings = dataclasses.replace(settings, project_root=str(root))
    return settings


def lint_buffer(buffer: Buffer, *, for_fixes: bool) -> Linted:
    """Lint the buffer's text as ``check`` would lint its file: the config found by walking
    up from its path, per-file-ignores, and excludes (an excluded file gets no findings).

    ``for_fixes`` keeps the parsed tree and each fix in tree form, for code actions (which
    turn only the fixes asked about into text edits); without it a large file may be
    parsed only in part.
    """
    path = buffer.path
    try:
        settings = settings_for(path)
    except ConfigError as error:
        return Linted(buffer.text, Answer(path, buffer.text), error=str(error))
    if is_excluded(path, settings):
        return Linted(buffer.text, Answer(path, buffer.text), settings)
    if not for_fixes and not buffer.is_notebook:
        answer = PROJECTS.answer(path, buffer.text, settings)
        if answer is not None:
            return Linted(buffer.text, answer, settings, from_cache=True)
    from .. import engine

    project = index_for(path, settings)
    PROJECTS.prepare(project, path, settings)
    lint = engine.lint_source(buffer.text, path, settings, with_edits=False, keep_module=for_fixes, project=project)
    return Linted(buffer.text, lint, settings)


# --------------------------------------------------------------------------------------
# Notebooks: the client sends cells; the engine reads them joined, as the CLI joins them.


def join_cells(texts: Sequence[str]) -> notebook.Notebook:
    """The code cells' texts as the CLI reads a notebook file with those cells."""
    from .. import notebook

    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": text} for text in texts]
    data = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return notebook.load(json.dumps(data))


def split_cells(book: notebook.Notebook, source: str) -> List[str]:
    """Each code cell's text once the joined source is ``source`` (a fix's result); raises
    ``notebook.NotebookError`` when a cell marker was lost."""
    from .. import notebook

    cells = json.loads(notebook.dump(book, source))["cells"]
    return [cells[index]["source"] for index in book.code_cells]


def by_cell(book: notebook.Notebook, diagnostics: Sequence[Diagnostic]) -> Dict[int, List[Diagnostic]]:
    """Cell number (1-based) -> its diagnostics, rows relative to the cell."""
    from .. import notebook

    out: Dict[int, List[Diagnostic]] = {}
    for diagnostic in diagnostics:
        mapped = notebook.map_diagnostic(book, diagnostic)
        if mapped is not None and mapped.cell is not None:
            out.setdefault(mapped.cell, []).append(mapped)
    return out
