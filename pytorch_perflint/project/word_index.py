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
from sys import intern
from typing import TYPE_CHECKING, Collection, Dict, FrozenSet, List, Optional, Set, Tuple, Union

Word = Union[str, bytes]  # an ASCII word as bytes (``_words``), any other as text

from ..tree_files import stat_key
from .reads import ALL_FILES, TEXTS_NAMING
from .sources import read_source

if TYPE_CHECKING:
    from .index import ProjectIndex

# Above this many modules a project is scanned through the word index (``ModuleWords``);
# at or below it, module by module.
MAX_SCANNED_MODULES = 400
_RUN = re.compile(r"\w+")
# ASCII text: every byte that ``\w`` does not match becomes a space (``_words``).
_NOT_WORD = bytes(c if chr(c).isalnum() or c == 0x5F else 0x20 for c in range(128)) + b" " * 128


def _words(text: str) -> Set[Word]:
    """The distinct maximal ``\\w+`` runs of a text, an ASCII one as bytes: on ASCII text
    ``\\w`` is ``[A-Za-z0-9_]``, and a byte translation and a split find the same runs as
    the regular expression in a third of its time (the torch package's texts, 46 MB: 1.1
    -> 0.4 CPU-s, most of what building the index costs). Other texts (178 of torch's
    2,285 modules) through the expression, their ASCII words as bytes too."""
    if text.isascii():
        return set(text.encode("ascii").translate(_NOT_WORD).split())
    return {word.encode("ascii") if word.isascii() else intern(word) for word in _RUN.findall(text)}


def _key(word: str) -> Word:
    """How ``_words`` holds ``word``."""
    return word.encode("ascii") if word.isascii() else word


class ModuleWords:
    """The modules of a large project that spell each word. Entries are kept with the ``stat``
    key (or, for a text held in memory, the text's length and hash) they were read at, and
    checked again when the index's summaries change (``ProjectIndex.generation``).

    Compact because it lives as long as the run: each word is held once, a word one module spells
    maps to that path, one several spell to a tuple of paths, and no module keeps its own set
    of words (the torch tree's 2,285 modules spell 132,598 words, 839,322 pairs: about 24 MB
    this way, 169 MB as per-module sets and per-word sets; an ASCII word is held as bytes,
    one object per word as an interned text was). Forgetting a changed module scans
    the words once for all the modules that changed."""

    def __init__(self) -> None:
        self._entries: Dict[str, object] = {}
        self._by_word: Dict[Word, Union[str, Tuple[str, ...]]] = {}
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
            found = self._by_word.get(_key(word))
        if found is None:
            return frozenset()
        return frozenset((found,)) if type(found) is str else frozenset(found)

    def _refresh(self, index: "ProjectIndex") -> None:
        memory = index.texts_in_memory()
        state = (index.generation, index.files, tuple((p, len(t), hash(t)) for p, t in sorted(memory.items())))
        if self._checked == state:
            return
        paths = set(index.files) | set(memory)
        gone = {p for p in self._entries if p not in paths}
        added: Dict[Word, List[str]] = {}
        for path in paths:
            if not path.endswith(".py"):
                continue
            text = memory.get(path)
            key: object = (len(text), hash(text)) if text is not None else stat_key(path)
            if path in self._entries:
                if self._entries[path] == key and key is not None:
                    continue
                gone.add(path)
            if text is None:
                text = read_source(path, index.max_bytes)[0] if key is not None else None
            self._entries[path] = key
            for word in _words(text) if text is not None else ():
                added.setdefault(word, []).append(path)
        if gone:
            self._forget(gone)
            for path in gone:
                if path not in paths:
                    self._entries.pop(path, None)
        by_word = self._by_word
        for word, spelled in added.items():
            kept = by_word.get(word)
            if kept is not None:
                spelled = ([kept] if type(kept) is str else list(kept)) + spelled  # type: ignore[list-item]
            by_word[word] = spelled[0] if len(spelled) == 1 else tuple(spelled)
        self._checked = state

    def _forget(self, gone: Set[str]) -> None:
        """Take the modules in ``gone`` out of every word's entry (one scan of the words)."""
        by_word = self._by_word
        for word, kept in list(by_word.items()):
            if type(kept) is str:
                if kept in gone:
                    del by_word[word]
            elif any(path in gone for path in kept):
                left = tuple(path for path in kept if path not in gone)
                if not left:
                    del by_word[word]
                else:
                    by_word[word] = left[0] if len(left) == 1 else left
