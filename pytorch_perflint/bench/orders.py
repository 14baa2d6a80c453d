"""An "orders" scenario: a correctness rule about data order (TPF105), checked, not timed.

Its program returns the order in which two epochs saw the data (two sequences of item
indices). The fix is right when "before" sees the same order twice, "after" sees two
different orders, and the first epoch is the same in both (the fix changes only the epochs
after the first). A second copy of "before" (the control) must agree with it, as for any
scenario: otherwise the orders say nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Tuple

import torch

REASON = "epoch orders, not timed"


@dataclass(frozen=True)
class Orders:
    """The epoch orders before and after the fix, and whether they show the fix works."""

    before: Tuple[Tuple[int, ...], ...]
    after: Tuple[Tuple[int, ...], ...]
    problems: Tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        """``before: same order both epochs; after: a new order in epoch 2``, or the problems."""
        if not self.ok:
            return "; ".join(self.problems)
        return "before: the same order every epoch; after: a new order each epoch, the first unchanged"


def _sequence(value: Any) -> Tuple[int, ...]:
    if isinstance(value, torch.Tensor):
        return tuple(int(v) for v in value.flatten().tolist())
    return tuple(int(v) for v in value)


def _epochs(result: Any, name: str, problems: List[str]) -> Tuple[Tuple[int, ...], ...]:
    if not isinstance(result, (tuple, list)) or len(result) < 2:
        problems.append(f"{name} did not return the orders of two epochs")
        return ()
    return tuple(_sequence(epoch) for epoch in result)


def check_orders(before: Any, after: Any) -> Orders:
    """Judge the orders ``run`` returned before and after the fix."""
    problems: List[str] = []
    first = _epochs(before, "before", problems)
    second = _epochs(after, "after", problems)
    if first and len(set(first)) != 1:
        problems.append("before: the epochs already differ in order")
    if second and len(set(second)) != len(second):
        problems.append("after: two epochs still share an order")
    if first and second and first[0] != second[0]:
        problems.append("after: the first epoch's order changed")
    if second and len({len(epoch) for epoch in second}) != 1:
        problems.append("after: the epochs differ in length")
    return Orders(first, second, tuple(problems))
