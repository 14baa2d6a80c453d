"""Dicts filled by item writes (split from ``scopes``/``values``): ``data = {}`` then
``data["x_" + split] = arrays[split]`` and ``data["loader"] = Loader(...)`` in the same scope,
read as ``data["x_test"]``. The read is the join of every entry whose key may be the one read:
a literal key equal to it, a ``"prefix" + name`` key it starts with, and any other key (not
known: it may be any). A dict changed any other way (``data.update(...)``, ``data[k] +=
v``, a ``**`` entry) is not read this way (``Scope.item_writes`` marks it)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Tuple

from .forms import BinOp, Dict as DictForm, Form, FormBuilder, Lit
from .kinds import UNKNOWN, Kind, join_all

MAX_WRITES = 32


@dataclass(frozen=True)
class Written:
    """A form: a dict display and the item writes of its name in the scope (key, value, line)."""

    display: DictForm
    writes: Tuple[Tuple[Form, Form, int], ...]


@dataclass(frozen=True, eq=False)
class Record:
    """A kind: a dict whose entries are known by key pattern (``=``: that literal key, ``^``:
    keys starting with it, ``*``: any key) and the kind each holds, read only when a key that
    may be it is read (``kind``: a memoised reader; two records are equal only if the same)."""

    entries: Tuple[Tuple[str, str, Callable[[], Kind]], ...]


def written(display: object, writes, aliases: Mapping[str, str]) -> Optional[Written]:
    """The form of a dict display its scope fills by item writes only (None: not one);
    ``writes``: (line, key node, value node), None nodes for a change of another kind."""
    if type(display) is not DictForm or display.truncated or not writes or len(writes) > MAX_WRITES:  # type: ignore[union-attr]
        return None
    if any(key is None for _, key, _ in writes) or any(key is None for key, _ in display.items):  # type: ignore[union-attr]
        return None  # changed otherwise, or a `**` entry
    builder = FormBuilder(aliases)
    return Written(display, tuple((builder.form(key), builder.form(value), line) for line, key, value in writes))  # type: ignore[arg-type]


def record(form: Written, evaluate: Callable[[Form, int], Kind], line: int) -> Kind:
    """The ``Record`` a ``Written`` form holds; ``evaluate`` reads a value at a line."""
    entries = [(*_pattern(key), _reader(evaluate, value, line)) for key, value in form.display.items]  # type: ignore[misc]
    entries += [(*_pattern(key), _reader(evaluate, value, at)) for key, value, at in form.writes]
    return Record(tuple(entries))  # type: ignore[arg-type]


def _reader(evaluate: Callable[[Form, int], Kind], value: Form, line: int) -> Callable[[], Kind]:
    return functools.lru_cache(maxsize=1)(lambda: evaluate(value, line))


def _pattern(key: Form) -> Tuple[str, str]:
    if type(key) is Lit and isinstance(key.value, str):
        return "=", key.value
    if type(key) is BinOp and key.op == "Add" and type(key.left) is Lit and isinstance(key.left.value, str):
        return "^", key.left.value
    return "*", ""


def record_item(receiver: Record, index: Form) -> Kind:
    """``receiver[index]`` for a literal string key: what every entry that may hold it agrees on."""
    if type(index) is not Lit or not isinstance(index.value, str):
        return UNKNOWN
    key = index.value
    found = [read() for op, text, read in receiver.entries if op == "*" or (op == "=" and text == key) or (op == "^" and key.startswith(text))]
    return join_all(found) if found else UNKNOWN
