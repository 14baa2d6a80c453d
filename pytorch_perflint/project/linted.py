"""What a run asks the project layer about the file it lints: which index, and whether the
file runs on an accelerator.

One index per project root. The root is the config file's folder, else the nearest folder
above the file with a root marker (``pyproject.toml``, ``.git``...): the same folder the
cache uses. A file with no root at all (a lone script in a folder with no marker) gets no
index: it is its own project, and only its own code decides (``ctx.project`` is None).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Dict, Optional, Tuple

from ..config import Settings, project_root
from .index import ProjectIndex, StatKey, read_source, stat_key
from .summarizer import summarize
from .summary import ModuleSummary, failed


# One index per (root, settings) in this process, with the snapshot of the project it was
# read from: the language server and the flake8 plugin lint file after file; the runner
# makes its own (``RunProjects``) and hands it to its workers.
_INDEXES: Dict[Tuple[str, Settings], Tuple[ProjectIndex, Optional[Dict[str, Optional[StatKey]]]]] = {}


def index_for(path: Path, settings: Settings) -> Optional[ProjectIndex]:
    """The index of the project holding ``path``, kept for this process while no project
    file or folder changes on disk (a long-lived editor session sees saved edits, added and
    removed modules); None without a project root."""
    root = project_root(settings, path)
    if root is None:
        return None
    key = (str(root), settings)
    kept = _INDEXES.get(key)
    if kept is not None:
        index, seen = kept
        if seen is None and index.has_files():
            seen = snapshot(index)  # the files were listed during the last lint
            _INDEXES[key] = (index, seen)
        if seen is None or snapshot(index) == seen:
            return index
    if len(_INDEXES) > 8:  # a long-lived server that moved between projects
        _INDEXES.clear()
    index = ProjectIndex(root, settings)
    _INDEXES[key] = (index, None)
    return index


def runs_on_accelerator(
    path: Path, source: str, tree: Optional[ast.Module], settings: Settings, project: Optional[ProjectIndex]
) -> bool:
    """RULES.md's "runs on an accelerator" for the text being linted at ``path``.

    ``accelerator = "always" | "never"`` decides alone. With a project, the text is handed
    to the index as the module at ``path`` (so an unsaved buffer counts as it is) and the
    entry scripts that import it decide too; without one, the file's own code decides.
    """
    mode = settings.accelerator
    if mode != "auto":
        return mode == "always"
    if project is None:
        return summarize(tree, source).accelerator is not None
    project.summary(path, source, tree)
    return project.runs_on_accelerator(path)


def snapshot(index: ProjectIndex) -> Dict[str, Optional[StatKey]]:
    """The stat keys of the project's files, the folders that hold them (a module added or
    removed changes its folder's mtime) and their ``.gitignore`` files: what a result
    that read the whole import graph depends on."""
    paths = set(index.files)
    root = index.root
    for path in index.files:
        folder = os.path.dirname(path)
        while folder not in paths and folder.startswith(root):
            paths.add(folder)
            paths.add(os.path.join(folder, ".gitignore"))
            if folder == root:
                break
            folder = os.path.dirname(folder)
    paths.add(root)
    paths.add(os.path.join(root, ".gitignore"))
    return {path: stat_key(path) for path in sorted(paths)}


class RunProjects:
    """The indexes of one run, one per project root, made in the parent process before the
    workers start (forked workers inherit them and what was loaded into them)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._roots: Dict[str, Optional[str]] = {}  # folder -> root
        self.indexes: Dict[str, ProjectIndex] = {}
        # What each index holds from the parent (a summary cache, the summaries made up
        # front): not sent back again. And where each index's new entries start.
        self.known: Dict[str, Dict[str, StatKey]] = {}
        self._marks: Dict[str, int] = {}
        # For a run with a cache, per root: the stat keys of the project's files taken
        # before any was read, and the digest of those a texts result depends on.
        self.stats: Dict[str, Dict[str, Optional[StatKey]]] = {}
        self.texts: Dict[str, str] = {}

    def root_of(self, path: Path) -> Optional[str]:
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in self._roots:
            root = project_root(self.settings, Path(folder))
            self._roots[folder] = None if root is None else os.path.abspath(root)
        return self._roots[folder]

    def for_file(self, path: Path) -> Optional[ProjectIndex]:
        root = self.root_of(path)
        if root is None:
            return None
        index = self.indexes.get(root)
        if index is None:
            index = self.indexes[root] = ProjectIndex(root, self.settings)
            self.known[root] = {}
        return index

    def hand_over(self) -> None:
        """Before the workers are forked: what the indexes hold now, the workers hold too."""
        for root, index in self.indexes.items():
            known = self.known.setdefault(root, {})
            self._marks[root], entries = index.entries_since(self._marks.get(root, 0))
            known.update((p, k) for p, (k, _) in entries.items())

    def new_entries(self, index: ProjectIndex) -> Dict[str, Tuple[StatKey, object]]:
        """The summaries this process read since it last asked (to send to the parent)."""
        known = self.known.setdefault(index.root, {})
        self._marks[index.root], entries = index.entries_since(self._marks.get(index.root, 0))
        fresh = {p: (k, s) for p, (k, s) in entries.items() if known.get(p) != k}
        known.update((p, k) for p, (k, _) in fresh.items())
        return fresh


def summarise_file(path: str) -> Tuple[str, Optional[StatKey], ModuleSummary, Optional[Tuple[int, int]]]:
    """One module's summary, read from disk, with what ``ProjectIndex.add`` takes: the work
    of a worker when a run summarises a whole project up front."""
    key = stat_key(path)
    text, error = read_source(path)
    if text is None:
        return path, key, failed(error or "cannot read"), None
    return path, key, summarize(None, text), (len(text), hash(text))
