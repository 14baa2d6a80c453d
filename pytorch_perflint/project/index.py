"""The project index: module summaries on demand, and the facts that need several of them.

One index serves one project root. It reads a module only when asked about it or about
something that needs it (a linted file's imports, the import graph), never imports or runs
anything, and keeps each summary with the file's ``stat`` key (size, mtime in ns, inode),
so that a summary is rebuilt exactly when the file changed and an on-disk cache can hand
summaries in (``add``) and take them out (``entries``) without reading unchanged files.

The project's files are the ones discovery lists under the root (excludes and
``.gitignore`` respected); a module outside them is not a project module.
"""

from __future__ import annotations

import ast
import os
import re
import threading
from pathlib import Path
from typing import Callable, Collection, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ..config import Settings
from ..discovery import discover
from ..tree_files import StatKey, stat_key
from .accelerator import sharing_modules
from .details import ALL_TEXTS, TEXTS_NAMING, Details  # noqa: F401 - the recorded marks, exported here
from .reads import ALL_FILES, TEXT_OF  # noqa: F401 - exported here
from .recordings import Recordings
from .import_paths import resolve_through_added
from .resolution import Definition, Resolution
from .root import EXTERNAL_PACKAGES, ModuleMap, Target, find_project_root
from .sources import MAX_BYTES, RecentTexts, WordReads, collector_paused, read_source
from .word_index import ModuleWords
from .summarizer import Summarizer, registered_summarizers, summarize
from .summary import Evidence, ImportRecord, ModuleSummary, failed

_NN_MODULE = re.compile(r"^torch\.nn\.(?!(?:Parameter|UninitializedParameter|Buffer)$)[A-Z]\w*$")
_LIGHTNING = frozenset({"pytorch_lightning.LightningModule", "lightning.LightningModule", "lightning.pytorch.LightningModule"})
__all__ = ["ALL_FILES", "ALL_TEXTS", "MAX_BYTES", "TEXTS_NAMING", "TEXT_OF", "ProjectIndex", "collector_paused", "read_source", "stat_key", "StatKey"]


def _project_imports(summary: ModuleSummary) -> Tuple[ImportRecord, ...]:
    """The imports that may name project modules (a fix that adds ``import torch`` does
    not change the import graph)."""
    return tuple(r for r in summary.imports if r.level or r.module.split(".")[0] not in EXTERNAL_PACKAGES)


class ProjectIndex(Recordings, Details):
    """Facts about the Python modules under one project root.

    ``files``: the project's files when the caller already knows them (tests, a runner that
    discovered the whole root); otherwise discovery lists them on first need.
    """

    def __init__(
        self,
        root: Union[str, Path],
        settings: Optional[Settings] = None,
        *,
        files: Optional[Iterable[Union[str, Path]]] = None,
        summarizers: Optional[Sequence[Tuple[str, Summarizer]]] = None,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.root = os.path.abspath(root)
        self.settings = settings if settings is not None else Settings(project_root=self.root)
        self.summarizers = summarizers
        self.max_bytes = max_bytes
        self.lone = False  # one file linted alone: a parameter it never passes is not known
        self._files: Optional[FrozenSet[str]] = None if files is None else frozenset(os.path.abspath(f) for f in files)
        self._modules: Optional[ModuleMap] = None
        self._on_disk: Dict[str, Tuple[StatKey, ModuleSummary]] = {}
        self._in_memory: Dict[str, Tuple[str, ModuleSummary]] = {}
        # (path, what) -> (the summary it was read with, the value): bodies and uses
        self._details: Dict[Tuple[str, str], Tuple[ModuleSummary, object]] = {}
        self._graph: Optional[Dict[str, FrozenSet[str]]] = None
        self._sharing: Optional[FrozenSet[str]] = None
        self.resolution = Resolution(self)
        self._local = threading.local()  # this thread's recordings (``Recordings``)
        # path -> (length, hash) of the text an on-disk summary was built from, so that a
        # linted file whose text is that one reuses it (hashes stay within one process
        # and the workers forked from it).
        self._texts: Dict[str, Tuple[int, int]] = {}
        self._word_reads = WordReads()  # text_naming's reads
        self._recent = RecentTexts()  # text's reads of unchanged files
        self._words = ModuleWords()  # which modules spell a word, in a large project
        # Every path whose on-disk entry was set, in order (``entries_since``).
        self._order: List[str] = []
        # Summaries kept by a cache, asked for a module only when it is needed:
        # (path, stat key now) -> the summary of that file, or None.
        self.stored: Optional[Callable[[str, StatKey], Optional[ModuleSummary]]] = None
        # The modules whose summary selects an accelerator, kept with the graph.
        self._selecting: Optional[FrozenSet[str]] = None
        # The modules that put folders on sys.path (path -> ``added_paths``), kept with the graph.
        self._adding: Dict[str, Tuple[Tuple[int, str], ...]] = {}
        # ``generation`` moves whenever a summary is replaced (the value engine's memos are
        # stale); ``_graph_generation`` when the graph is dropped (a graph built meanwhile,
        # on another of the language server's threads, is not kept).
        self.generation = self._graph_generation = 0

    @classmethod
    def for_path(cls, path: Union[str, Path], settings: Optional[Settings] = None, **options) -> "ProjectIndex":
        """The index of the project that holds ``path``."""
        return cls(find_project_root(Path(path)), settings, **options)

    # -- the project's files ------------------------------------------------------------------
    @property
    def files(self) -> FrozenSet[str]:
        """Absolute paths of the project's ``.py``/``.pyi`` files."""
        if self._files is None:
            found = discover([self.root], self.settings)
            self._files = frozenset(os.path.abspath(p) for p in found.files if str(p).endswith((".py", ".pyi")))
        return self._files

    def has_files(self) -> bool:
        """Whether the project's files were listed already (``files`` costs a walk)."""
        return self._files is not None

    @property
    def modules(self) -> ModuleMap:
        if self._modules is None:
            self._modules = ModuleMap(Path(self.root), self.files)
        return self._modules

    def module_name(self, path: Union[str, Path]) -> Optional[str]:
        return self.modules.name_of(os.path.abspath(path))

    # -- summaries ---------------------------------------------------------------------------
    def summary(self, path: Union[str, Path], source: Optional[str] = None, tree: Optional[ast.Module] = None) -> ModuleSummary:
        """The summary of the module at ``path``.

        With ``source`` (and, when the caller has it, its ``tree``), the summary describes
        that text, which is what the index then uses for ``path`` (a file being linted or
        fixed in memory); otherwise the file is read when its stat key changed.
        """
        path = os.path.abspath(path)
        self.note_read(path)
        if source is not None:
            kept = self._in_memory.get(path)
            if kept is not None and kept[0] == source:
                return kept[1]
            on_disk = self._on_disk.get(path)
            if kept is None and on_disk is not None and self._texts.get(path) == (len(source), hash(source)):
                return on_disk[1]  # the file's own text, summarised already (the import graph)
            summary = summarize(tree, source, self.summarizers)
            previous = kept[1] if kept is not None else self._on_disk.get(path, (None, None))[1]
            self._in_memory[path] = (source, summary)
            self._replaced(path, previous, summary)
            return summary
        kept_text = self._in_memory.get(path)
        if kept_text is not None:
            return kept_text[1]
        key = stat_key(path)
        kept_disk = self._on_disk.get(path)
        if kept_disk is not None and kept_disk[0] == key:
            return kept_disk[1]
        stored = self.stored(path, key) if self.stored is not None and key is not None else None
        if stored is not None:
            summary = stored
        elif key is None:
            summary = failed("cannot stat")
        else:
            text, error = read_source(path, self.max_bytes)
            summary = failed(error or "cannot read") if text is None else summarize(None, text, self.summarizers)
            if text is not None:
                self._texts[path] = (len(text), hash(text))
        if key is not None:
            self._on_disk[path] = (key, summary)
            self._order.append(path)
        if kept_disk is not None:
            self._replaced(path, kept_disk[1], summary)
        return summary

    def add(self, path: Union[str, Path], key: StatKey, summary: ModuleSummary, text_hash: Optional[Tuple[int, int]] = None) -> bool:
        """Hand in a summary kept elsewhere (a cache) for the file with stat ``key``. A
        summary built with other summarisers than this index's is refused (False).
        ``text_hash``: ``(len(text), hash(text))`` of the text it was built from, when it
        was built in this process or one forked from the same parent."""
        summarizers = registered_summarizers() if self.summarizers is None else self.summarizers
        if summary.ok and tuple(k for k, _ in summary.extras) != tuple(k for k, _ in summarizers):
            return False
        previous = self._on_disk.get(os.path.abspath(path), (None, None))[1]
        self._on_disk[os.path.abspath(path)] = (tuple(key), summary)  # type: ignore[assignment]
        self._order.append(os.path.abspath(path))
        if text_hash is not None:
            self._texts[os.path.abspath(path)] = text_hash
        else:
            self._texts.pop(os.path.abspath(path), None)
        self._replaced(os.path.abspath(path), previous, summary)
        return True

    def settle(self, path: Union[str, Path], key: Optional[StatKey]) -> None:
        """The text handed to ``summary`` for ``path`` was the file's content at stat
        ``key`` (a runner that read the file to lint it): keep its summary as the file's,
        and not the text. With ``key`` None (the file was rewritten), forget both."""
        path = os.path.abspath(path)
        kept = self._in_memory.pop(path, None)
        if kept is None:
            return
        if key is not None:
            self._on_disk[path] = (tuple(key), kept[1])  # type: ignore[assignment]
            self._order.append(path)
            self._texts[path] = (len(kept[0]), hash(kept[0]))
        else:
            self._on_disk.pop(path, None)
            self._replaced(path, kept[1], failed("rewritten"))

    def stat_key_read(self, path: str) -> Optional[StatKey]:
        """The stat key the summary of ``path`` was read with (else the file's now)."""
        kept = self._on_disk.get(os.path.abspath(path))
        return kept[0] if kept is not None else stat_key(path)

    def mark(self) -> int:
        """Where the entries set from now on start (for ``entries_since``)."""
        return len(self._order)

    def entries_since(self, mark: int) -> Tuple[int, Dict[str, Tuple[StatKey, ModuleSummary]]]:
        """The on-disk entries set since ``mark`` (0: all), and the mark to pass next time:
        what a worker read that its parent does not hold yet, without a pass over all."""
        paths = self._order[mark:]
        return len(self._order), {p: self._on_disk[p] for p in paths if p in self._on_disk}

    def entries(self) -> Dict[str, Tuple[StatKey, ModuleSummary]]:
        """Every summary read from disk, with its stat key (for a cache to keep)."""
        return dict(self._on_disk)

    def _replaced(self, path: str, previous: Optional[ModuleSummary], summary: ModuleSummary) -> None:
        """Forget what the old summary of a module may have decided: only a module whose
        project imports or accelerator fact differ from the graph's rebuilds the graph."""
        if previous == summary:
            return
        self.generation += 1
        self.resolution.forget()
        if self._graph is None:
            return
        if previous is not None and previous.added_paths != summary.added_paths:
            same_edges = False  # other modules' imports may resolve differently
        elif previous is not None and _project_imports(previous) == _project_imports(summary):
            same_edges = True
        else:
            same_edges = path in self._graph and self._edges(path, summary) == self._graph[path]
        selects = self._selecting is not None and path in self._selecting
        if not same_edges or selects != (summary.accelerator is not None):
            self._graph_generation += 1
            self._graph = None
            self._sharing = None
            self._selecting = None

    def text_naming(self, path: Union[str, Path], word: str) -> Optional[str]:
        """The module's text when it spells ``word``, else None. A scan of every module's
        text for a word depends on the texts that spell it, and on no other module's until
        one does (``TEXTS_NAMING``): an edit elsewhere leaves the answer valid."""
        self.note_read(TEXTS_NAMING + word)
        path = os.path.abspath(path)
        kept = self._in_memory.get(path)
        text = kept[0] if kept is not None else self._word_reads.text(path, word, self.max_bytes)
        if text is None or word not in text:
            return None
        self.note_text(path)
        return text

    def spelling(self, word: str, paths: Collection[str]) -> List[str]:
        """Those of ``paths`` (sorted) that may spell ``word``: a large project's scans read
        only those (``word_index``); a small project's, all."""
        return self._words.spelling(self, word, paths)

    def few_spell(self, word: str, limit: int) -> bool:
        """Whether at most ``limit`` modules of a large project spell the identifier ``word``."""
        return self._words.at_most(self, word, limit)

    def texts_in_memory(self) -> Dict[str, str]:
        """The texts handed to ``summary`` (linted files, editor buffers), by path."""
        return {path: kept[0] for path, kept in self._in_memory.items()}

    def text(self, path: Union[str, Path]) -> Optional[str]:
        """The module's text: the one handed to ``summary``, else the file's (None when it
        cannot be read)."""
        path = os.path.abspath(path)
        self.note_text(path)
        kept = self._in_memory.get(path)
        return kept[0] if kept is not None else self._recent.read(path, self.max_bytes)

    # -- imports -------------------------------------------------------------------------------
    def import_target(self, path: str, record: ImportRecord, summary: Optional[ModuleSummary] = None) -> Optional[Target]:
        """The module an import record names, seen from ``path`` (None: a relative import
        above the project root); ``summary``: ``path``'s, when not the index's."""
        if record.level:
            return self.modules.resolve_relative(record.level, record.module, path)
        target = self.modules.resolve_absolute(record.module, path)
        if target.external is not None:  # a folder the script put on sys.path?
            return resolve_through_added(self, os.path.abspath(path), record, summary) or target
        return target

    def imported_modules(self, path: Union[str, Path]) -> FrozenSet[str]:
        """The project module files ``path`` imports, at any scope (``from pkg import mod``
        counts ``pkg/mod.py`` as well as ``pkg/__init__.py``)."""
        path = os.path.abspath(path)
        summary = self.summary(path)  # (first: a summary that changes the edges drops the graph)
        graph = self._graph
        return graph[path] if graph is not None and path in graph else self._edges(path, summary)

    def _edges(self, path: str, summary: ModuleSummary) -> FrozenSet[str]:
        """``imported_modules`` of ``path`` when its summary is ``summary``."""
        out: Set[str] = set()
        for record in summary.imports:
            target = self.import_target(path, record, summary)
            if target is None or not target.in_project:
                continue
            if target.path is not None:
                out.add(target.path)
            if record.name is not None and not record.star:
                member = self.modules.submodule(target, record.name)
                if member is not None and member.path is not None:
                    out.add(member.path)
        out.discard(path)
        return frozenset(p for p in out if p.endswith(".py"))

    def module_paths(self) -> FrozenSet[str]:
        """The import graph's nodes, none summarised: project modules, modules from memory."""
        self.note_read(ALL_FILES)
        return frozenset(p for p in self.files if p.endswith(".py")) | frozenset(self._in_memory)

    def import_graph(self) -> Mapping[str, FrozenSet[str]]:
        """Each of ``module_paths`` -> the project modules it imports (reads the whole project once)."""
        return self._built()[0]

    def _built(self) -> Tuple[Mapping[str, FrozenSet[str]], FrozenSet[str]]:
        """The import graph and the modules that select an accelerator, built together."""
        with self._graph_reads():
            graph, selecting = self._graph, self._selecting
            if graph is None or selecting is None:
                generation = self._graph_generation
                with collector_paused():
                    graph = {path: self.imported_modules(path) for path in sorted(self.module_paths())}
                    selecting = frozenset(p for p in graph if self.summary(p).accelerator is not None)
                    adding = {p: self.summary(p).added_paths for p in graph if self.summary(p).added_paths}
                if generation == self._graph_generation:
                    self._graph, self._selecting, self._adding = graph, selecting, adding
            return graph, selecting

    def graph_state(self) -> Optional[Tuple[Mapping[str, FrozenSet[str]], FrozenSet[str]]]:
        """The import graph and the modules that select an accelerator, when built: all
        that an ``ALL_FILES`` answer read (a cache keeps them, see ``seed_graph``)."""
        if self._graph is None or self._selecting is None:
            return None
        return self._graph, self._selecting

    def adding_paths(self) -> Dict[str, Tuple[Tuple[int, str], ...]]:
        """The graph's modules that put folders on ``sys.path`` (a cache keeps them: an edit
        of one changes other modules' edges)."""
        return dict(self._adding)

    def seed_files(self, files: Iterable[str]) -> None:
        """Take the project's files from a cache that checked them (no walk of the tree)."""
        if self._files is None:
            self._files = frozenset(files)
            self._modules = None

    def edges_of(self, path: str, summary: ModuleSummary) -> FrozenSet[str]:
        """The project modules ``path`` imports when its summary is ``summary``."""
        return self._edges(os.path.abspath(path), summary)

    def seed_graph(
        self, files: Iterable[str], graph: Mapping[str, FrozenSet[str]], selecting: Iterable[str], adding: Optional[Mapping[str, Tuple[Tuple[int, str], ...]]] = None
    ) -> None:
        """Take the project's files, import graph and accelerator modules from a cache that
        checked them against the files on disk: no module is read to answer a graph question.
        The module map of the same files is kept (tens of ms to build on the torch package)."""
        files = frozenset(files)
        if files != self._files:
            self._files, self._modules = files, None
        self._graph = dict(graph)
        self._selecting = frozenset(selecting)
        self._adding = dict(adding or {})
        self._sharing = None

    def importers(self, path: Union[str, Path]) -> FrozenSet[str]:
        """The project modules that import ``path``, directly or through other modules."""
        path = os.path.abspath(path)
        graph = dict(self.import_graph())
        if path not in graph:
            graph[path] = self.imported_modules(path)
        reverse: Dict[str, List[str]] = {}
        for module, targets in graph.items():
            for target in targets:
                reverse.setdefault(target, []).append(module)
        seen: Set[str] = set()
        stack = list(reverse.get(path, ()))
        while stack:
            module = stack.pop()
            if module not in seen:
                seen.add(module)
                stack.extend(reverse.get(module, ()))
        seen.discard(path)
        return frozenset(seen)

    # -- the accelerator -------------------------------------------------------------------
    def runs_on_accelerator(self, path: Union[str, Path]) -> bool:
        """RULES.md's "runs on an accelerator" for the module at ``path``, under the
        ``accelerator`` setting (``always``/``never`` decide alone)."""
        mode = getattr(self.settings, "accelerator", "auto")
        if mode != "auto":
            return mode == "always"
        path = os.path.abspath(path)
        if self.summary(path).accelerator is not None:
            return True
        return path in self._sharing_set(path)

    def selects_through_imports(self, path: Union[str, Path]) -> bool:
        """``path`` or a project module it imports (directly or through others) selects an
        accelerator: what the module runs on when it runs as a script (its ``__main__``
        block), since the modules that import it do not run then."""
        path = os.path.abspath(path)
        if self.summary(path).accelerator is not None:
            return True
        graph, selecting = self._built()
        with self._graph_reads():
            stack = list(graph[path] if path in graph else self.imported_modules(path))
            seen = set(stack)
            while stack:
                module = stack.pop()
                if module in selecting:
                    return True
                fresh = graph.get(module, frozenset()) - seen
                seen |= fresh
                stack.extend(fresh)
        return False

    def accelerator_evidence(self, path: Union[str, Path]) -> Optional[Tuple[str, Evidence]]:
        """A module that makes ``path`` run on an accelerator and where it selects one (for
        messages); None when ``path`` does not run on one by the project's code."""
        path = os.path.abspath(path)
        own = self.summary(path).accelerator
        if own is not None:
            return path, own
        if path not in self._sharing_set(path):
            return None
        graph = self.import_graph()
        for entry in sorted({path} | self.importers(path)):
            stack, seen = [entry], set()
            while stack:
                module = stack.pop()
                if module in seen:
                    continue
                seen.add(module)
                evidence = self.summary(module).accelerator
                if evidence is not None:
                    return module, evidence
                stack.extend(sorted(graph.get(module, ())))
        return None

    def _sharing_set(self, path: str) -> FrozenSet[str]:
        """The modules that run on an accelerator, ``path`` included in the graph (a file
        outside the discovered ones, linted by name, is added for this answer only)."""
        graph, selecting = self._built()
        with self._graph_reads():
            if path not in graph:
                extended = {**graph, path: self.imported_modules(path)}
                own = [path] if self.summary(path).accelerator is not None else []
                return sharing_modules([*selecting, *own], extended)
            sharing = self._sharing
            if sharing is None or graph is not self._graph:
                sharing = sharing_modules(sorted(selecting), graph)
                if graph is self._graph:
                    self._sharing = sharing
            return sharing

    # -- names -------------------------------------------------------------------------------
    def resolve(self, path: Union[str, Path], name: str) -> Optional[Definition]:
        """What the dotted ``name`` means at module level in ``path``: a project function,
        class, binding or module (following imports and ``__init__`` re-exports), or an
        external name with its qualified name; None when it cannot be known."""
        return self.resolution.resolve(os.path.abspath(path), name)

    def callers(self, definition: Definition):
        """Every project call of a function or class (see ``Resolution.callers``)."""
        return self.resolution.callers(definition)

    def never_passed(self, definition: Definition, parameter: str) -> bool:
        """Whether no caller in the project passes ``parameter`` (so its default holds)."""
        return self.resolution.never_passed(definition, parameter)

    def argument_values(self, definition: Definition, parameter: str):
        """The forms ``parameter`` gets from every caller in the project, the default where
        one passes nothing; None when that cannot be known (``Resolution.argument_values``)."""
        return self.resolution.argument_values(definition, parameter)

    def external_bases(self, definition: Definition) -> FrozenSet[str]:
        """Qualified names of the non-project classes a project class derives from,
        through its project bases."""
        return self.resolution.external_bases(definition)

    def is_nn_module(self, definition: Definition) -> bool:
        """A project class that is a ``torch.nn.Module`` through its bases (``nn.Module``,
        ``nn.Sequential``..., a Lightning module)."""
        return any(_NN_MODULE.match(base) or base in _LIGHTNING for base in self.external_bases(definition))
