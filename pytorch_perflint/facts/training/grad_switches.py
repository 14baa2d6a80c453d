"""Bare ``torch.set_grad_enabled(...)`` statements: where they switch autograd off and on.

``set_grad_enabled(False)`` (or a value that is not known) as a statement turns autograd off
until a later ``set_grad_enabled(True)`` in the same statement list; one in another block (an
``if``) may not run, so grad stays off as far as TPF203 knows (precision first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional

import libcst as cst

from ...analysis.values import literal_value
from .classifiers import is_no_grad_expr


@dataclass
class GradOff:
    """Autograd off in ``frame`` (a function's walk frame, or the module's) from walk order
    ``start`` until ``end`` (None: never switched back on)."""

    start: int
    frame: object
    block: Optional[cst.CSTNode]
    end: Optional[int] = None


def switch_grad(
    call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]], frame: object, block: Optional[cst.CSTNode], offs: List[GradOff], order: int
) -> Optional[bool]:
    """Record what the bare ``set_grad_enabled`` statement ``call`` does in ``offs``; give
    back whether grad is off in ``frame`` after it (None: the statement changes nothing)."""
    if is_no_grad_expr(call, qualname):
        offs.append(GradOff(order, frame, block))
        return True
    if call.args and literal_value(call.args[0].value) is True and qualname(call.func) == "torch.set_grad_enabled":
        for off in offs:
            if off.frame is frame and off.end is None and off.block is block:
                off.end = order
        return any(off.frame is frame and off.end is None for off in offs)
    return None


def covers(off: GradOff, start: int, end: int) -> bool:
    """Whether grad is off for some of the walk orders ``start``..``end`` (a loop: its later
    rounds run after a switch inside it)."""
    return off.start < end and (off.end is None or off.end > start)
