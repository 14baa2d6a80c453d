"""A loader built inside an epoch loop under a one-shot flag is built once, not each time
round (``if epoch >= unfreeze and not unfrozen: gen = DataLoader(...); unfrozen = True``):
the epochs after it walk the same loader, so that loop is still its epoch loop (TPF103,
TPF105).

The guard is an ``if`` standing directly in the loop's body whose test requires ``not
FLAG`` (alone or as a term of an ``and``), whose first arm builds the loader and sets
``FLAG = True`` in its own block, with ``FLAG`` bound nowhere else in the loop: once the
arm ran, it never runs again while the loop goes on.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..training.reaching import binds
from .loader_args import Path


def built_once_in(creator: Path, loop: cst.CSTNode) -> bool:
    """The node ``creator`` leads to (its ancestors, from the module) is built under a
    one-shot flag of ``loop``'s body (see the module)."""
    index = next((i for i, node in enumerate(creator) if node is loop), None)
    body = getattr(loop, "body", None)
    if index is None or index + 3 >= len(creator) or creator[index + 1] is not body or type(body) is not cst.IndentedBlock:
        return False
    guard = creator[index + 2]
    if type(guard) is not cst.If or creator[index + 3] is not guard.body or type(guard.body) is not cst.IndentedBlock:
        return False
    flag = _negated_flag(guard.test)
    if flag is None or binds(guard.test, flag) or (guard.orelse is not None and binds(guard.orelse, flag)):
        return False
    sets = [s for s in guard.body.body if _sets_true(s, flag)]
    others = [s for s in guard.body.body if not any(s is t for t in sets)]
    if len(sets) != 1 or any(binds(s, flag) for s in others):
        return False
    return not any(binds(s, flag) for s in body.body if s is not guard) and not _target_binds(loop, flag)


def _negated_flag(test: cst.BaseExpression) -> Optional[str]:
    """``not FLAG``, or an ``and`` with such a term: the flag's name."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Name:
        return test.expression.value
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _negated_flag(test.left) or _negated_flag(test.right)
    return None


def _sets_true(statement: cst.CSTNode, flag: str) -> bool:
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:  # type: ignore[attr-defined]
        return False
    small = statement.body[0]  # type: ignore[attr-defined]
    return (
        type(small) is cst.Assign
        and len(small.targets) == 1
        and type(small.targets[0].target) is cst.Name
        and small.targets[0].target.value == flag
        and type(small.value) is cst.Name
        and small.value.value == "True"
    )


def _target_binds(loop: cst.CSTNode, flag: str) -> bool:
    target = getattr(loop, "target", None)
    return target is not None and binds(cst.Assign(targets=[cst.AssignTarget(target)], value=cst.Name("_")), flag)
