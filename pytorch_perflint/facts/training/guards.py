"""Is a node run on every iteration of the loop around it? The guards TPF2xx rules share
(``guarded_between``), and the tests that are no guard: flags that cannot change from one
iteration to the next, and device-availability tests (``if torch.cuda.is_available():``,
``if len(opt.gpu_ids) > 0:``, ``if preds.is_cuda:``)."""

from __future__ import annotations

from typing import FrozenSet, Optional, Sequence

import libcst as cst

from ...analysis.scope import dotted_name

# ---------------------------------------------------------------------------------------
def _is_main_guard(node: cst.If) -> bool:
    test = node.test
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )


def guarded_between(path: Sequence[cst.CSTNode], loop_names: Optional[FrozenSet[str]] = None) -> bool:
    """Whether the last node of ``path`` (a chain of nodes, each the parent of the next)
    runs only under a condition relative to the first: inside an ``if``/``elif``/``else``
    branch (not its test), a conditional expression's branches, the right operand of
    ``and``/``or``, an ``except`` handler or a ``match`` case.

    With ``loop_names`` (the names a loop binds, see ``loop_bound_names``), an ``if`` whose
    test cannot change from one iteration to the next (``if not args.distributed:``,
    ``if writer is not None:``, ``if rank == 0:``) is no guard: whatever it selects runs on
    every iteration. A test that uses a name the loop binds, ``%``, an ordering comparison
    or any call is taken as a per-iteration guard (``if step % 10 == 0``, ``if i == 0``,
    ``if torch.isnan(loss)``).
    """
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, cst.If):
            if child is not parent.test and not _is_main_guard(parent):
                if loop_names is None or not loop_invariant(parent.test, loop_names):
                    return True
        elif isinstance(parent, cst.IfExp):
            if child is not parent.test:
                if loop_names is None or not loop_invariant(parent.test, loop_names):
                    return True
        elif isinstance(parent, cst.BooleanOperation):
            if child is parent.right:
                return True
        elif isinstance(parent, cst.ExceptHandler):
            return True
        elif type(parent).__name__ in ("MatchCase", "ExceptStarHandler"):
            return True
    return False


_DEVICE_LISTS = frozenset(("gpu_ids", "gpus", "device_ids", "devices"))
_DEVICE_TESTS = ("cuda.is_available", "mps.is_available", "accelerator.is_available")


def _length(expr: cst.BaseExpression, loop_names: FrozenSet[str]) -> bool:
    """``len(opt.gpu_ids)`` of a device list the loop does not change: how many GPUs there are."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" and len(expr.args) == 1):
        return False
    value = expr.args[0].value
    return (dotted_name(value) or "").rsplit(".", 1)[-1] in _DEVICE_LISTS and loop_invariant(value, loop_names)


_INVARIANT_COMPARISONS = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual, cst.In, cst.NotIn)


def loop_invariant(test: cst.BaseExpression, loop_names: FrozenSet[str]) -> bool:
    """Whether a condition is a flag that stays the same on every iteration: names the
    loop does not bind, their attributes, literals, ``not``/``and``/``or``, and
    ``is``/``==``/``in`` comparisons of those."""
    if isinstance(test, cst.Name):
        return test.value not in loop_names
    if _length(test, loop_names):
        return True
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return True  # `if preds.is_cuda:`: where the program runs on the GPU, on every iteration
    if isinstance(test, cst.Attribute):
        return loop_invariant(test.value, loop_names)
    if isinstance(test, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return loop_invariant(test.expression, loop_names)
    if isinstance(test, cst.BooleanOperation):
        return loop_invariant(test.left, loop_names) and loop_invariant(test.right, loop_names)
    if isinstance(test, cst.Comparison):
        counted = _length(test.left, loop_names) and all(isinstance(c.comparator, cst.Integer) for c in test.comparisons)
        return (
            (counted or all(isinstance(c.operator, _INVARIANT_COMPARISONS) for c in test.comparisons))
            and loop_invariant(test.left, loop_names)
            and all(loop_invariant(c.comparator, loop_names) for c in test.comparisons)
        )
    if isinstance(test, cst.Call):  # `torch.cuda.is_available()`: there is a GPU or not
        return not test.args and (dotted_name(test.func) or "").endswith(_DEVICE_TESTS)
    if isinstance(test, (cst.List, cst.Tuple, cst.Set)):
        return all(loop_invariant(e.value, loop_names) for e in test.elements)
    return False
