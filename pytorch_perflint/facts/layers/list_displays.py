"""The layers of a list expression in order, for TPF301's adjacency: a list or tuple display,
``a + b`` (the items of both, in order) and ``[...] * n`` (the display's items once, with
no neighbour on either side: ``n`` may be 0, and the copies' seam, last item then first, is
not read). Anything else is one unknown item."""

from __future__ import annotations

from typing import Callable, List, Optional, TypeVar

import libcst as cst

T = TypeVar("T")


def displayed(value: cst.BaseExpression, item: Callable[[cst.BaseExpression], Optional[T]]) -> List[Optional[T]]:
    """``item`` of each element of the list ``value`` builds, in order (None: not known)."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return [None if isinstance(e, cst.StarredElement) else item(e.value) for e in value.elements]
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return [*displayed(value.left, item), *displayed(value.right, item)]
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        shown = value.left if isinstance(value.left, (cst.List, cst.Tuple)) else value.right
        if isinstance(shown, (cst.List, cst.Tuple)):
            return [None, *displayed(shown, item), None]
    return [None]
