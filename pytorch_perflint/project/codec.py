"""JSON for the project layer's values: frozen dataclasses, tuples and plain literals.

Summaries are kept in an on-disk cache that sits in the user's tree and is read back on
every run, so they are JSON (never pickle), and compact: a dataclass is written as
``{"ClassName": [field, ...]}`` with trailing fields that hold their defaults left out;
tuples become lists and come back as tuples; a plain dict (a summariser's value) is
wrapped as ``{"": {...}}``. Only classes registered with ``@serialisable`` are rebuilt,
so a cache file cannot name arbitrary classes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple, Type, TypeVar

T = TypeVar("T")

_CLASSES: Dict[str, Type[Any]] = {}
# Per class: field names and defaults (``_MISSING`` for required fields), in order.
_FIELDS: Dict[Type[Any], Tuple[Tuple[str, Any], ...]] = {}
_MISSING = object()
_PLAIN = ""


class DecodeError(ValueError):
    """The data is not a value this layer wrote (an old or damaged cache: treat as a miss)."""


def serialisable(cls: Type[T]) -> Type[T]:
    """Register a frozen dataclass for ``to_json``/``from_json``."""
    assert dataclasses.is_dataclass(cls), cls
    assert _CLASSES.get(cls.__name__, cls) is cls, f"two serialisable classes named {cls.__name__}"
    assert cls.__name__ != _PLAIN
    _CLASSES[cls.__name__] = cls
    _FIELDS[cls] = tuple(
        (f.name, f.default if f.default is not dataclasses.MISSING else _MISSING) for f in dataclasses.fields(cls)
    )
    return cls


def to_json(value: Any) -> Any:
    """A JSON-able copy of ``value``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    fields = _FIELDS.get(type(value))
    if fields is not None:
        values: List[Any] = [getattr(value, name) for name, _ in fields]
        while values and fields[len(values) - 1][1] is not _MISSING and _same(values[-1], fields[len(values) - 1][1]):
            values.pop()  # trailing defaults are implied
        return {type(value).__name__: [to_json(item) for item in values]}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"cannot write a dict with non-string keys: {value!r}")
        return {_PLAIN: {key: to_json(item) for key, item in value.items()}}
    raise TypeError(f"not serialisable: {type(value).__name__}")


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default


def from_json(data: Any) -> Any:
    """The value ``to_json`` wrote; ``DecodeError`` for anything else."""
    if data is None or isinstance(data, (str, bool, int, float)):
        return data
    if isinstance(data, list):
        return tuple(from_json(item) for item in data)
    if isinstance(data, dict) and len(data) == 1:
        (name, payload), = data.items()
        if name == _PLAIN and isinstance(payload, dict):
            return {key: from_json(item) for key, item in payload.items()}
        cls = _CLASSES.get(name)
        if cls is None or not isinstance(payload, list):
            raise DecodeError(f"unknown value type {name!r}")
        fields = _FIELDS[cls]
        if len(payload) > len(fields) or any(default is _MISSING for _, default in fields[len(payload) :]):
            raise DecodeError(f"{name}: expected fields {[n for n, _ in fields]}, got {len(payload)} values")
        try:
            return cls(*(from_json(item) for item in payload))
        except (TypeError, ValueError) as error:
            raise DecodeError(f"{name}: {error}") from None
    raise DecodeError(f"unexpected JSON value {data!r}")
