"""Loader options chosen by the accelerator: ``kw = {"num_workers": 4, "pin_memory": True}
if cuda else {}`` then ``DataLoader(ds, **kw)``.

RULES.md reads a ``**`` dict on the accelerator path (TPF104: a literal ``update`` under an
``if`` that tests for the accelerator pins the loader there), because the copies the rules
look at run on that path. A conditional dict display bound once to a name is read the same
way: when its test names the accelerator (``cuda``, ``gpu``, ... : a name, an attribute or
a call, optionally under ``not``), the arm taken on the accelerator is the dict (unless it is changed in place later). A test that
may say the opposite (``no_cuda``, ``use_cpu``, ``disable_gpu``) or anything else is not
read, and the dict stays unknown.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Optional

from .forms import Dict as DictForm, Either

_ACCELERATOR = re.compile(r"cuda|gpu|accelerator|mps|xpu", re.IGNORECASE)
_NEGATED = re.compile(r"(?:^|[^a-z])(?:no|not|without|disable|disabled|cpu|off)(?:[^a-z]|$)", re.IGNORECASE)


def accelerator_arm(scope: Any, name: str) -> Optional[DictForm]:
    """The dict display ``name`` holds on the accelerator path, when it is bound once in
    ``scope`` to ``<dict> if <accelerator test> else <dict>``; None otherwise."""
    entries = scope.entries.get(name) if scope is not None else None
    if not entries or len(entries) != 1 or name in scope.params or name in scope.mutated or scope.node is None:
        return None
    form = entries[0].form
    if type(form) is not Either or type(form.body) is not DictForm or type(form.orelse) is not DictForm:
        return None
    test = _test_at(scope.node, name, entries[0].line)
    if test is None:
        return None
    negated = type(test) is ast.UnaryOp and type(test.op) is ast.Not
    if negated:
        test = test.operand
    if type(test) not in (ast.Name, ast.Attribute, ast.Call):
        return None
    text = ast.unparse(test).replace("_", " ").replace(".", " ")
    if not _ACCELERATOR.search(text) or _NEGATED.search(text):
        return None
    return form.orelse if negated else form.body


def _test_at(node: ast.AST, name: str, line: int) -> Optional[ast.expr]:
    """The test of the ``name = a if test else b`` statement at ``line``."""
    for statement in ast.walk(node):
        if type(statement) is ast.Assign and statement.lineno == line and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is ast.Name and target.id == name and type(statement.value) is ast.IfExp:
                return statement.value.test
    return None
