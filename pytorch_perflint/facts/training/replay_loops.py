"""A batch loop around an inner replay loop (TPF202): ``for x, y in loader:`` whose body
replays each batch ``for _ in range(k):`` with backward and an optimizer step ("free"
adversarial training, several updates per batch, inner optimisation). The inner loop is
the step loop, but the outer one still runs once per batch: what it does after the
replay (``train_loss += loss.item()``) runs every few steps, as often as the data comes.

An epoch loop around a batch loop is the opposite shape (the outer loop counts, the inner
one walks the data): its body runs once per epoch. So the outer loop must walk batches of
a DataLoader (the value engine's ``Loader``, or ``enumerate``/``tqdm``/``iter`` of one),
and every training loop nested in it must count (``for _ in range(...)``), not walk data.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from ...context import FileContext
from ...project.kinds import Batch, Items, Iterator, Loader
from .loops import LoopFacts, training_facts, walk


def replay_loop_around(context: FileContext, ancestors: Sequence[cst.CSTNode]) -> Optional[Tuple[int, LoopFacts]]:
    """The batch loop around a node when the nearest training loop around it (within its
    function) walks a DataLoader's batches and trains only through inner counted loops:
    (index of the loop in ``ancestors``, its facts); None otherwise."""
    facts = context.fact(training_facts)
    for index in range(len(ancestors) - 1, 0, -1):
        node = ancestors[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if not isinstance(node, (cst.For, cst.While)):
            continue
        loop = facts.loop(node)
        if loop is None or not loop.is_training:
            continue
        child = ancestors[index + 1] if index + 1 < len(ancestors) else None
        if loop.is_step_loop or not isinstance(node, cst.For) or child is not node.body:
            return None
        verdicts = context.fact(_replays)  # asked for every call in the loop: once per loop
        if id(node) not in verdicts:
            verdicts[id(node)] = _inner_loops_count(context, node) and _walks_batches(context, node, ancestors)
        return (index, loop) if verdicts[id(node)] else None
    return None


def _replays(context: FileContext) -> Dict[int, bool]:
    """Per file: each loop asked about (by id), whether it is a batch loop around replays."""
    return {}


def _inner_loops_count(context: FileContext, loop: cst.For) -> bool:
    """Every training loop nested in ``loop`` counts (``for _ in range(k)``), and one is there."""
    facts = context.fact(training_facts)
    inner: List[cst.CSTNode] = []

    def enter(child: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
        if isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if child is not loop and isinstance(child, (cst.For, cst.While)):
            found = facts.loop(child)
            if found is not None and found.is_training:
                inner.append(child)
        return True

    walk(loop.body, enter)
    return bool(inner) and all(_counts(context, node) for node in inner)


def _counts(context: FileContext, loop: cst.CSTNode) -> bool:
    if not isinstance(loop, cst.For):
        return False
    it = loop.iter
    return (
        isinstance(it, cst.Call)
        and isinstance(it.func, cst.Name)
        and it.func.value == "range"
        and context.lookup("range") is None
        and context.qualname(it.func) is None
    )


def _walks_batches(context: FileContext, loop: cst.For, ancestors: Sequence[cst.CSTNode]) -> bool:
    """The loop's iterable yields a DataLoader's batches (engine's answer)."""
    statement = ancestors[1] if len(ancestors) > 1 else None
    kind = context.value_of(loop.iter, statement)
    if type(kind) is Loader:
        return True
    if type(kind) is not Iterator:
        return False
    element = kind.element
    if type(element) is Items and element.items:  # `enumerate(loader)`: (index, batch)
        element = element.items[-1]
    return type(element) is Batch
