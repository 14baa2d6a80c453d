"""JSON for the project layer's values: frozen dataclasses, tuples and plain literals.

Summaries are kept in an on-disk cache that sits in the user's tree and is read back on
every run, so they are JSON (never pickle). A dataclass is written as an object with its
class name under ``"_"``; tuples become lists and come back as tuples. Only classes
registered with ``@serialisable`` are rebuilt, so a cache file cannot name arbitrary
classes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Type, TypeVar

T = TypeVar("T")

_CLASSES: Dict[str, Type[Any]] = {}
TAG = "_"


class DecodeError(ValueError):
    """The data is not a value this layer wrote (an old or damaged cache: treat as a miss)."""


def serialisable(cls: Type[T]) -> Type[T]:
    """Register a frozen dataclass for ``to_json``/``from_json``."""
    assert dataclasses.is_dataclass(cls), cls
    assert _CLASSES.get(cls.__name__, cls) is cls, f"two serialisable classes named {cls.__name__}"
    _CLASSES[cls.__name__] = cls
    return cls


def to_json(value: Any) -> Any:
    """A JSON-able copy of ``value``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (tuple, list)):
        return [to_json(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {TAG: type(value).__name__}
        for field in dataclasses.fields(value):
            data[field.name] = to_json(getattr(value, field.name))
        return data
    if isinstance(value, dict):
        if TAG in value or not all(isinstance(key, str) for key in value):
            raise TypeError(f"cannot write a dict with key {TAG!r} or non-string keys: {value!r}")
        return {key: to_json(item) for key, item in value.items()}
    raise TypeError(f"not serialisable: {type(value).__name__}")


def from_json(data: Any) -> Any:
    """The value ``to_json`` wrote; ``DecodeError`` for anything else."""
    if data is None or isinstance(data, (str, bool, int, float)):
        return data
    if isinstance(data, list):
        return tuple(from_json(item) for item in data)
    if isinstance(data, dict):
        name = data.get(TAG)
        if name is None:
            return {key: from_json(item) for key, item in data.items()}
        cls = _CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            raise DecodeError(f"unknown value type {name!r}")
        names = {field.name for field in dataclasses.fields(cls)}
        values = {key: from_json(item) for key, item in data.items() if key != TAG}
        if set(values) != names:
            raise DecodeError(f"{name}: expected fields {sorted(names)}, got {sorted(values)}")
        try:
            return cls(**values)
        except (TypeError, ValueError) as error:
            raise DecodeError(f"{name}: {error}") from None
    raise DecodeError(f"unexpected JSON value {data!r}")
