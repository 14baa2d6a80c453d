"""The first phase of a run over a project: summarise its modules, screen its files.

Before linting, the workers summarise every module of the linted files' projects that the
indexes do not hold yet (one ``ast`` parse each), and the parent builds the import graphs
from the summaries: the lint workers, forked afterwards, inherit them. In a checking run
the same workers also run the rules' screens on each linted file from that same tree; a
file no rule can fire on (most of a large project) gets its whole result there, parsed once.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Hashable, List, Mapping, Optional, Sequence, Tuple, Type, Union

from .cache import Stamp
from .config import Settings
from .decoding import Undecodable, decode
from .project.index import MAX_BYTES, StatKey, collector_paused, stat_key
from .project.linted import RunProjects, summarise_file
from .project.summarizer import parse, summarize, take_built
from .project.summary import ModuleSummary, failed
from .run_cache import Done
from .tree_files import read_source
from .types import FileResult
from .workers import Failure, run_tasks

# Fewer modules than this to summarise: the index reads them when a rule asks.
MIN_MODULES = 8


def checked(path: Path, lint) -> FileResult:
    """A checked file's result from its lint (``engine.FileLint``)."""
    diagnostics = tuple(lint.diagnostics)
    return FileResult(path, diagnostics, errors=tuple(lint.errors), source=lint.source if diagnostics else None)


@dataclass(frozen=True)
class Screen:
    """How a checking run lints its files, for the workers that summarise the project."""

    settings: Settings
    with_edits: bool
    rules: Optional[Sequence[Type]]
    stamped: bool  # the run keeps a cache: stamp the results


@dataclass(frozen=True)
class Passed:
    """A checked file that some rules' screens let through: the lint phase runs those
    rules only (``engine.lint_source(passed=...)``), without screening the file again,
    when its text is still the one screened (``text_hash``: length and hash)."""

    text_hash: Tuple[int, int]
    codes: FrozenSet[str]
    # Each rule's ``project_question`` of the screened tree, for the rules that have one.
    questions: Tuple[Tuple[str, Hashable], ...] = ()

    def for_text(self, text: str) -> Optional[Mapping[str, Optional[Hashable]]]:
        """The codes with their project questions, for the text that was screened; None
        for another text."""
        if (len(text), hash(text)) != self.text_hash:
            return None
        asked = dict(self.questions)
        return {code: asked.get(code) for code in self.codes}


# (path, stat key, summary, text hash, its result or what passed the screens, how many
# summaries the task built)
Summarised = Tuple[str, Optional[StatKey], ModuleSummary, Optional[Tuple[int, int]], Union[Done, Passed, None], int]


def _summarise_task(path: str, root: str, linted: Mapping[str, Path], screen: Optional[Screen]) -> Summarised:
    """One module's summary (as ``summarise_file``) and, for a file the run checks, its
    result when no rule passes its screens: such a file (most of a large project) is then
    parsed once, for both, and the lint phase skips it. Otherwise the rules that passed
    (``Passed``), which the lint phase runs with the index; None: lint it, screens and all.

    With Python's cyclic collector paused (see ``collector_paused``): with it on, it
    scanned the trees and summaries being built over and over and doubled this phase's
    cost on the torch package.

    A worker forked while its parent had the collector paused (the parent reads the
    results in a paused block) would run every task with it off, and the cycles of each
    file's work were never freed: 1.3 GB in the one worker of ``-j 1`` on the torch
    package. The collector is on between tasks."""
    if not gc.isenabled():
        gc.enable()
    with collector_paused():
        return (*_summarised(path, root, linted, screen), take_built())


def _summarised(path: str, root: str, linted: Mapping[str, Path], screen: Optional[Screen]):
    given = linted.get(path) if screen is not None else None
    if screen is None or given is None:  # a module the run only reads
        return (*summarise_file(path), None)
    key = stat_key(path)
    if key is None or key[0] > MAX_BYTES:  # summarise_file says why
        return (*summarise_file(path), None)
    try:
        data = read_source(path, MAX_BYTES)  # never blocks, nor reads what is not a file
        if isinstance(data, int):
            return (*summarise_file(path), None)
        text = decode(data).text
    except (OSError, Undecodable):  # the lint phase says why
        return (*summarise_file(path), None)
    tree, error = parse(text, path)
    summary = summarize(tree, text) if tree is not None else failed(error or "cannot parse")
    text_hash = (len(text), hash(text))
    from . import engine
    from .selection import for_file

    try:
        chosen = for_file(given, screen.settings, screen.rules)
        lint = engine.lint_source(
            text, given, screen.settings, with_edits=screen.with_edits, selection=chosen, keep_module=False, tree=tree, screen_only=True
        )
    except Exception:  # noqa: BLE001 - the lint phase reports it
        return path, key, summary, text_hash, None
    if lint.deferred:
        questions = tuple(sorted((code, q) for code, q in lint.passed.items() if q is not None))
        return path, key, summary, text_hash, Passed(text_hash, frozenset(lint.passed), questions)
    result = checked(given, lint)
    stamp = None
    if screen.stamped and not result.errors and stat_key(path) == key:
        # Its result depends on its text alone: no rule asked the project anything.
        stamp = Stamp(key, hashlib.sha256(data).hexdigest())
    return path, key, summary, text_hash, Done(result, stamp)


def _missing(index, linted: Mapping[str, Path]) -> List[str]:
    """The modules to summarise: the linted ones, and those the index holds no summary of
    for the file's stat key (a cache's kept summaries are taken here, in the parent)."""
    held = index.entries()
    missing = []
    with collector_paused():
        for path in sorted(p for p in index.files if p.endswith(".py")):
            key = stat_key(path)
            if path in held and held[path][0] == key:
                continue
            if path not in linted and key is not None and index.stored is not None:
                summary = index.stored(path, key)
                if summary is not None and index.add(path, key, summary):
                    continue
            missing.append(path)
    return missing


def summarise_projects(
    projects: RunProjects, todo: Sequence[Path], jobs: int, time_limit: Optional[float], screen: Optional[Screen] = None
) -> Tuple[Dict[Path, Done], Dict[Path, Passed], int]:
    """Summarise, in the workers, every module of the linted files' projects that the
    indexes do not hold yet, and build the import graphs here: forked lint workers then
    inherit them, instead of each reading the whole project again for the first file that
    asks who runs on an accelerator.

    With ``screen`` (a checking run), the same workers screen the files being linted from
    the tree they summarised: the results of those no rule can fire on, by path, and
    for the others which rules passed the screens. And how many summaries the workers built."""
    built = 0
    screened: Dict[Path, Done] = {}
    passed: Dict[Path, Passed] = {}
    linted = {os.path.abspath(p): p for p in todo if p.suffix == ".py"}
    for root in sorted({r for r in (projects.root_of(p) for p in todo) if r is not None}):
        index = projects.for_file(Path(root) / "__init__.py")
        if index is None:
            continue
        if index.graph_state() is not None:  # a cache's checked graph: read only the linted files
            missing = sorted(p for p in linted if projects.root_of(linted[p]) == root)
        else:
            missing = _missing(index, linted)
        if len(missing) >= MIN_MODULES:
            task = functools.partial(_summarise_task, root=root, linted=linted, screen=screen)
            values = run_tasks(task, missing, jobs=jobs, time_limit=time_limit)
            try:
                with collector_paused():  # thousands of summaries arrive: see collector_paused
                    for value in values:
                        if not isinstance(value, Failure):
                            path, key, summary, text_hash, done, count = value
                            built += count
                            if key is not None:
                                index.add(path, key, summary, text_hash)
                            if isinstance(done, Done):
                                screened[linted[path]] = done
                            elif isinstance(done, Passed):
                                passed[linted[path]] = done
            finally:
                values.close()
        index.import_graph()
    return screened, passed, built
