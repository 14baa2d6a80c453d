"""Which modules of a large project spell a word: an index of the identifiers each module's
text holds, built once per run, so that a scan for a function's callers, a class's subclasses
or a method's calls reads only the modules that name it.

A small project is scanned module by module (``ProjectIndex.text_naming`` reads each text
once per word, and that is cheap). Above ``MAX_SCANNED_MODULES`` modules every new word would
read every module again (VMamba's 1,359 per parameter question), so parameters were not read
from callers there at all. The index holds each module's maximal ``\\w+`` runs: a module whose
text holds a use of ``name`` (a call ``name(...)``, a chain ``x.name``, a string
``"name"``) holds it as a whole run, so a module without that run cannot be a caller and is
not read. A word that is not an identifier is not looked up (every module is a candidate).

Sound for the cache: the modules kept are read through ``text_naming`` as before (each one
that spells the word is a text dependency, ``TEXTS_NAMING`` + the word is noted even when
none does), and a module the index skipped does not spell the word as a whole run, so an
edit that makes it a caller makes it spell the word and invalidates the result.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Collection, Dict, FrozenSet, List, Optional, Set, Tuple

from ..tree_files import stat_key
from .reads import ALL_FILES, TEXTS_NAMING
from .sources import read_source

if TYPE_CHECKING:
    from .index import ProjectIndex

# Above this many modules a project is scanned through the word index (``ModuleWords``);
# at or below it, module by module.
MAX_SCANNED_MODULES = 400
_RUN = re.compile(r"\w+")


class ModuleWords:
    """The identifiers of every module, by word. Entries are kept with the ``stat`` key (or,
    for a text held in memory, the text's length and hash) they were read at, and checked
    again when the index's summaries change (``ProjectIndex.generation``)."""

    def __init__(self) -> None:
        self._entries: Dict[str, Tuple[object, FrozenSet[str]]] = {}
        self._by_word: Dict[str, Set[str]] = {}
        self._checked: Optional[Tuple[int, FrozenSet[str], Tuple[Tuple[str, int, int], ...]]] = None
        self._lock = threading.Lock()

    def spelling(self, index: "ProjectIndex", word: str, paths: Collection[str]) -> List[str]:
        """Those of ``paths`` (sorted) whose text may spell ``word``; all of them in a small
        project or for a word that is not an identifier."""
        if len(index.files) <= MAX_SCANNED_MODULES or not word.isidentifier():
            return sorted(paths)
        return sorted(p for p in self._spelling(index, word) if p in paths)

    def at_most(self, index: "ProjectIndex", word: str, limit: int) -> bool:
        """Whether at most ``limit`` modules of a large project spell the identifier
        ``word`` (a look-up). The first ``limit + 1`` of them (sorted) become the answer's
        text dependencies: for the verdict to change, one of them must change (when more
        spell it, at least one of those must stop), and a module that starts spelling it is
        a changed module that spells the word (``TEXTS_NAMING``)."""
        index.note_read(ALL_FILES)  # which modules there are
        found = self._spelling(index, word)
        for path in sorted(found)[: limit + 1]:
            index.note_text(path)
        return len(found) <= limit

    def _spelling(self, index: "ProjectIndex", word: str) -> FrozenSet[str]:
        index.note_read(TEXTS_NAMING + word)  # (as ``text_naming`` notes it, none found too)
        with self._lock:
            self._refresh(index)
            return frozenset(self._by_word.get(word, ()))

    def _refresh(self, index: "ProjectIndex") -> None:
        memory = index.texts_in_memory()
        state = (index.generation, index.files, tuple((p, len(t), hash(t)) for p, t in sorted(memory.items())))
        if self._checked == state:
            return
        paths = set(index.files) | set(memory)
        for path in [p for p in self._entries if p not in paths]:
            self._forget(path)
        for path in paths:
            if not path.endswith(".py"):
                continue
            text = memory.get(path)
            key: object = (len(text), hash(text)) if text is not None else stat_key(path)
            kept = self._entries.get(path)
            if kept is not None and kept[0] == key and key is not None:
                continue
            if text is None:
                text = read_source(path, index.max_bytes)[0] if key is not None else None
            self._forget(path)
            words = frozenset(_RUN.findall(text)) if text is not None else frozenset()
            self._entries[path] = (key, words)
            for word in words:
                self._by_word.setdefault(word, set()).add(path)
        self._checked = state

    def _forget(self, path: str) -> None:
        kept = self._entries.pop(path, None)
        if kept is not None:
            for word in kept[1]:
                self._by_word.get(word, set()).discard(path)
