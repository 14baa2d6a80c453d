"""Diagnostics to and from the cache's JSON, every field checked on the way back: the
cache sits in the user's tree, so what it holds is untrusted (``_Invalid`` for anything of
another shape)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, Optional

from .types import Applicability, Diagnostic, Edit, Fix, Location


class _Invalid(ValueError):
    """A cache entry of another shape than this version writes."""


def _diagnostic_to_json(diagnostic: Diagnostic) -> Dict[str, Any]:
    data = asdict(diagnostic)
    data["path"] = str(diagnostic.path)
    if diagnostic.fix is not None:
        data["fix"]["applicability"] = diagnostic.fix.applicability.value
    return data


def _field(data: Any, key: str, kind: type, optional: bool = False) -> Any:
    if not isinstance(data, dict):
        raise _Invalid(key)
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Invalid(key)
    return value


def _location(data: Any, key: str) -> Location:
    value = _field(data, key, dict)
    return Location(_field(value, "row", int), _field(value, "column", int))


def _fix_from_json(data: Any) -> Optional[Fix]:
    raw = _field(data, "fix", dict, optional=True)
    if raw is None:
        return None
    try:
        applicability = Applicability(_field(raw, "applicability", str))
    except ValueError:
        raise _Invalid("applicability") from None
    edits = tuple(
        Edit(_field(e, "content", str), _location(e, "location"), _location(e, "end_location"))
        for e in _field(raw, "edits", list)
    )
    return Fix(applicability, _field(raw, "message", str), edits)


def _diagnostic_from_json(data: Any) -> Diagnostic:
    """A diagnostic from its JSON, every field checked (``_Invalid`` otherwise)."""
    return Diagnostic(
        code=_field(data, "code", str),
        name=_field(data, "name", str),
        message=_field(data, "message", str),
        path=Path(_field(data, "path", str)),
        location=_location(data, "location"),
        end_location=_location(data, "end_location"),
        fix=_fix_from_json(data),
        noqa_row=_field(data, "noqa_row", int, optional=True),
        cell=_field(data, "cell", int, optional=True),
    )
