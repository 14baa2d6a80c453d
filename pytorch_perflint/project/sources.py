"""Reading a module's text as Python does, and pausing the cyclic collector while trees
and summaries are built (the index's helpers, used across the run as well)."""

from __future__ import annotations

import gc
import io
import os
import threading
import tokenize
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Set, Tuple

from ..tree_files import StatKey, stat_key

# A module reached through an import larger than this is not read (a generated data file
# must not stall a run); its facts are unknown. Linted files hand their own tree in.
MAX_BYTES = 4 * 1024 * 1024


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic collector for the block: parse trees (``ast`` and LibCST, a
    LibCST tree is hundreds of thousands of objects) and summaries hold no cycles, and
    while they are allocated the collector scans them again and again and frees nothing
    that reference counting would not (a fifth of the lint time on the torch tree; with
    thousands of summaries kept, it doubled the cost of summarising the torch package)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def read_source(path: str, max_bytes: int = MAX_BYTES) -> Tuple[Optional[str], Optional[str]]:
    """A module's text decoded as Python does (PEP 263 cookie, BOM), or why not."""
    try:
        if os.path.getsize(path) > max_bytes:
            return None, f"larger than {max_bytes} bytes: not read"
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        return None, f"cannot read: {error.strerror or error}"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), None
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        return None, f"cannot decode: {error}"


class RecentTexts:
    """The last few module texts read from disk, each with the ``stat`` key it was read
    at: the engine reads one module's text again and again (every function of it that a
    question locates, every body it reads), which cost thousands of reads and decodes per
    run on the torch package. A file whose ``stat`` key changed is read again."""

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._kept: Dict[str, Tuple[StatKey, str]] = {}
        self._lock = threading.Lock()

    def read(self, path: str, max_bytes: int = MAX_BYTES) -> Optional[str]:
        """``read_source(path)``'s text, the same string while the file is unchanged."""
        key = stat_key(path)
        with self._lock:
            kept = self._kept.get(path)
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        text = read_source(path, max_bytes)[0]
        if key is not None and text is not None:
            with self._lock:
                self._kept.pop(path, None)
                self._kept[path] = (key, text)
                while len(self._kept) > self._size:
                    del self._kept[next(iter(self._kept))]
        return text


class WordReads:
    """Texts read for a word (``ProjectIndex.text_naming``), remembering which words each
    file, unchanged since (its ``stat`` key), did not spell: a word asked again of such a
    file (every scan of the project for it: callers, subclasses) is answered unread."""

    def __init__(self) -> None:
        self._unspelled: Dict[str, Tuple[StatKey, Set[str]]] = {}

    def text(self, path: str, word: str, max_bytes: int = MAX_BYTES) -> Optional[str]:
        """The file's text when it spells ``word`` (else None), as ``read_source`` reads it."""
        key = stat_key(path)
        known = self._unspelled.get(path)
        if key is not None and known is not None and known[0] == key and word in known[1]:
            return None
        text = read_source(path, max_bytes)[0]
        if text is None or word in text:
            return text
        if key is not None:
            if known is None or known[0] != key:
                known = self._unspelled[path] = (key, set())
            known[1].add(word)
        return None
