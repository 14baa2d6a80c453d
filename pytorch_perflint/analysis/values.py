"""Static values: what a literal, or a name bound once to a literal, is known to be.

Anything that cannot be known (a call, an attribute, a name bound twice) is ``UNKNOWN``, and
rules stay silent on it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import libcst as cst


class _Unknown:
    """The value of an expression that cannot be known statically."""

    _instance: Optional["_Unknown"] = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()

Lookup = Callable[[str], Optional[cst.BaseExpression]]


def literal_value(expr: cst.BaseExpression, lookup: Optional[Lookup] = None, _depth: int = 0) -> Any:
    """Evaluate ``expr`` if it is a literal (or a name bound once to one), else UNKNOWN."""
    if _depth > 8:
        return UNKNOWN
    if isinstance(expr, cst.Integer):
        return int(expr.value.replace("_", ""), 0)
    if isinstance(expr, cst.Float):
        try:
            return float(expr.value.replace("_", ""))
        except ValueError:
            return UNKNOWN
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:  # pragma: no cover - malformed escapes
            return UNKNOWN
    if isinstance(expr, cst.ConcatenatedString):
        return UNKNOWN
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        if lookup is not None:
            bound = lookup(expr.value)
            if bound is not None:
                return literal_value(bound, lookup, _depth + 1)
        return UNKNOWN
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = literal_value(expr.expression, lookup, _depth + 1)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
        return UNKNOWN
    if isinstance(expr, cst.Dict):
        return literal_dict(expr, lookup, _depth + 1)
    return UNKNOWN


def literal_dict(expr: cst.Dict, lookup: Optional[Lookup] = None, _depth: int = 0) -> Any:
    """A ``{"key": value}`` literal as a dict of key -> value (values may be UNKNOWN).

    Returns UNKNOWN when a key is not a literal string or the dict unpacks another mapping,
    since then the set of keys itself is not known.
    """
    result: Dict[str, Any] = {}
    for element in expr.elements:
        if not isinstance(element, cst.DictElement):
            return UNKNOWN
        key = literal_value(element.key, None, _depth + 1)
        if not isinstance(key, str):
            return UNKNOWN
        result[key] = literal_value(element.value, lookup, _depth + 1)
    return result


def dict_call_kwargs(expr: cst.BaseExpression, lookup: Optional[Lookup] = None) -> Any:
    """A mapping that ``**expr`` unpacks, when it is known (a literal dict or ``dict(k=v)``)."""
    if isinstance(expr, cst.Name) and lookup is not None:
        bound = lookup(expr.value)
        if bound is None:
            return UNKNOWN
        expr = bound
    if isinstance(expr, cst.Dict):
        return literal_dict(expr, lookup)
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "dict"
        and all(arg.keyword is not None and arg.star == "" for arg in expr.args)
    ):
        return {arg.keyword.value: literal_value(arg.value, lookup) for arg in expr.args if arg.keyword}
    return UNKNOWN
