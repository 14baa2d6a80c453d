"""A project helper that moves what its callers hand it (TPF402): ``def to_var(x): return
Variable(x).cuda()``, called with a fresh factory tensor (``to_var(torch.randn(n, d))``).
At such a call the tensor is made on the host and copied to the device by the helper: a
create-then-move split across the call. Reported at the helper's move (RULES.md's anchor),
naming the caller.

Only when the helper's body is nothing but that move of its parameter, returned: one
``return <move>``, or ``if <GPU flag>: return <move>`` with the other arm returning the
parameter as it came (where it moves, it moves every tensor handed to it; the flag is one
the rule reads as "runs on a GPU", as for a move in the same block). A helper that does
anything else first, moves under another flag, or keeps the tensor is not followed. The
callers are the value engine's (every project caller known: ``FileValues.passed``); a
caller counts when its argument is the factory call itself, written in the call (through
``Variable(...)`` and device-keeping steps), which the engine confirms is a host tensor
fresh from that factory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence

import libcst as cst

from ...context import FileContext
from ...project import kinds
from ...project.forms import Attr, Call, Ref
from ...project.tensor_values import FACTORIES, KEEP_DEVICE, LEGACY, RANDOM, RANDOM_FILLS, VARIABLES
from .host_tensors import _device_test

_MADE_BY = FACTORIES | RANDOM | LEGACY
_STEPS = KEEP_DEVICE | RANDOM_FILLS


@dataclass(frozen=True)
class PassedTensor:
    """A caller's fresh host tensor a helper moves: the helper's name, the factory, where
    the call is (module file name, line)."""

    helper: str
    factory: str
    path: str
    line: int


def passed_host_tensor(receiver: cst.BaseExpression, move: cst.Call, context: FileContext) -> Optional[PassedTensor]:
    """The first caller (by module and line) that hands the helper around ``move`` a fresh
    host tensor, when the helper only moves its parameter (see the module)."""
    name = _root_name(receiver)
    function = next((n for n in reversed(context.ancestors) if isinstance(n, cst.FunctionDef)), None)
    if name is None or function is None or not _only_moves(function, name, move, _in_class(function, context)):
        return None
    values = context.values()
    passed = None if values is None else values.passed(name)
    if not passed:
        return None
    found = []
    for path, line, form, kind in passed:
        factory = _inline_factory(form)
        if factory is not None and type(kind) is kinds.HostTensor and kind.factory == factory:
            found.append((path, line, factory))
    if not found:
        return None
    path, line, factory = min(found)
    return PassedTensor(function.name.value, factory, os.path.basename(path), line)


def _root_name(expr: cst.BaseExpression) -> Optional[cst.Name]:
    """The name under ``Variable(...)`` and device-keeping steps."""
    for _ in range(8):
        if isinstance(expr, cst.Name):
            return expr
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STEPS:
            expr = func.value
        elif isinstance(func, cst.Name) and func.value == "Variable" and len(expr.args) >= 1 and expr.args[0].keyword is None:
            expr = expr.args[0].value
        else:
            return None
    return None


def _only_moves(function: cst.FunctionDef, name: cst.Name, move: cst.Call, method: bool) -> bool:
    """The body is ``return <move>``, or ``if <GPU flag>: return <move>`` with the other arm
    (or the statement after it) returning the parameter as it came."""
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)]
    if name.value not in params or params.index(name.value) == 0 and method and not _static(function):
        return False
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    if body and _docstring(body[0]):
        body = body[1:]
    if len(body) == 1 and _returns(body[0]) is move:
        return True
    if not body or not isinstance(body[0], cst.If) or not _device_test(body[0].test, name.value):
        return False
    test = body[0]
    if len(test.body.body) != 1 or _returns(test.body.body[0]) is not move:
        return False
    if isinstance(test.orelse, cst.Else) and len(body) == 1:
        rest: Sequence[cst.BaseStatement] = test.orelse.body.body
    elif test.orelse is None and len(body) == 2:
        rest = body[1:]
    else:
        return False
    kept = _returns(rest[0]) if len(rest) == 1 else None
    return kept is not None and _root_name(kept) is not None and _root_name(kept).value == name.value  # type: ignore[union-attr]


def _in_class(function: cst.FunctionDef, context: FileContext) -> bool:
    ancestors = context.ancestors
    at = next((i for i in range(len(ancestors) - 1, -1, -1) if ancestors[i] is function), 0)
    return at >= 2 and isinstance(ancestors[at - 2], cst.ClassDef)


def _static(function: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)


def _docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _returns(statement: cst.BaseStatement) -> Optional[cst.BaseExpression]:
    """What ``return <value>`` (a line of its own) returns."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Return):
        return statement.body[0].value
    return None


def _inline_factory(form: object) -> Optional[str]:
    """The factory a caller's argument form calls in place, under ``Variable(...)`` and
    device-keeping steps (``torch.randn(n).float()``)."""
    for _ in range(8):
        if type(form) is not Call:
            return None
        func = form.func  # type: ignore[union-attr]
        if type(func) is Attr and func.attr in _STEPS:
            form = func.value
        elif type(func) is Ref and func.qualname in VARIABLES and form.args:  # type: ignore[union-attr]
            form = form.args[0]  # type: ignore[union-attr]
        elif type(func) is Ref and func.qualname in _MADE_BY:
            return func.qualname
        else:
            return None
    return None
