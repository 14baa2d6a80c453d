"""Reading the arguments of a call, including ``**`` dicts whose keys are known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import libcst as cst

from .values import UNKNOWN, Lookup, dict_call_kwargs, literal_value


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Argument:
    """What a call passes for one parameter.

    ``value`` is the literal value, ``MISSING`` when the call certainly does not pass it, or
    ``UNKNOWN`` when it may (an unknown ``**kwargs`` or ``*args``) or passes a non-literal.
    ``node`` is the explicit argument when there is one.
    """

    value: Any
    node: Optional[cst.Arg] = None

    @property
    def missing(self) -> bool:
        return self.value is MISSING

    @property
    def unknown(self) -> bool:
        return self.value is UNKNOWN


def argument(
    call: cst.Call, keyword: str, position: Optional[int] = None, lookup: Optional[Lookup] = None
) -> Argument:
    """The value ``call`` passes for the parameter ``keyword`` (or positional ``position``)."""
    positional = 0
    star_args = False
    unknown_kwargs = False
    from_dict: Any = MISSING
    for arg in call.args:
        if arg.star == "*":
            star_args = True
            continue
        if arg.star == "**":
            mapping = dict_call_kwargs(arg.value, lookup)
            if mapping is UNKNOWN:
                unknown_kwargs = True
            elif keyword in mapping:
                from_dict = mapping[keyword]
            continue
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return Argument(literal_value(arg.value, lookup), arg)
            continue
        if position is not None and positional == position and not star_args:
            return Argument(literal_value(arg.value, lookup), arg)
        positional += 1
    if from_dict is not MISSING:
        return Argument(from_dict)
    if unknown_kwargs:
        return Argument(UNKNOWN)
    if star_args and position is not None and positional <= position:
        return Argument(UNKNOWN)
    return Argument(MISSING)


def has_unknown_star(call: cst.Call) -> bool:
    """Whether the call unpacks ``*args`` or ``**kwargs``."""
    return any(arg.star for arg in call.args)
