"""Small classifiers of training calls and names: backward, optimizer steps, no-grad."""

from __future__ import annotations

import re
from typing import Callable, FrozenSet, Optional, Tuple, Union

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.values import literal_value
from ...project.call_values import is_optimizer_name

Loop = Union[cst.For, cst.While]
FuncKey = Tuple[Optional[str], str]  # (class name or None, function name)

BACKWARD_ATTRS = frozenset({"backward", "manual_backward"})
_NO_GRAD_NAMES = frozenset({"torch.no_grad", "torch.inference_mode"})
_NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode", re.IGNORECASE)


# ---------------------------------------------------------------------------------------
# Small classifiers of calls and names
# ---------------------------------------------------------------------------------------
def last_name(expr: cst.BaseExpression) -> Optional[str]:
    """The last identifier of ``a.b.c`` / ``a[0].c`` / ``c``, else None."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def method_name(call: cst.Call) -> Optional[str]:
    """``m`` for a call ``x.m(...)``, else None."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else None


def call_receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    func = call.func
    return func.value if isinstance(func, cst.Attribute) else None


def is_backward_call(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``loss.backward()``, ``accelerator.backward(loss)``, ``torch.autograd.backward(t)``."""
    if method_name(call) in BACKWARD_ATTRS:
        return True
    if isinstance(call.func, cst.Name) and call.func.value == "backward":
        return qualname(call.func) == "torch.autograd.backward"
    return False


def is_optimizer_step(call: cst.Call, optimizer_names: FrozenSet[str] = frozenset()) -> bool:
    """``optimizer.step()``, ``opt_g.step(closure)``, ``scaler.step(optimizer)``."""
    if method_name(call) != "step":
        return False
    receiver = call_receiver(call)
    assert receiver is not None
    name = last_name(receiver)
    if name is None:
        return False
    dotted = dotted_name(receiver)
    if dotted is not None and dotted in optimizer_names:
        return True
    if "scaler" in name.lower():
        return bool(call.args)
    return is_optimizer_name(name)


def builds_from_parameters(call: cst.Call) -> bool:
    """``optimtype(model.parameters(), lr=lr)``: a call handed a model's ``parameters()``
    first, which builds an optimizer whatever its name (the class may be a parameter); also
    a list made of them (``[p for p in model.parameters() if p.requires_grad] + extra``,
    ``list(...)``, ``filter(f, ...)``)."""
    first = call.args[0] if call.args else None
    if first is None or first.keyword is not None or first.star:
        return False
    return _parameters_form(first.value, 0)


def _parameters_form(value: cst.BaseExpression, depth: int) -> bool:
    """``m.parameters()``, or a list built from it: a comprehension over it, ``list(it)``,
    ``filter(f, it)``, or ``it + other`` / ``other + it``."""
    if depth > 3:
        return False
    if type(value) is cst.Call:
        func = value.func
        if type(func) is cst.Attribute:
            return not value.args and func.attr.value == "parameters"
        if type(func) is cst.Name and func.value in ("list", "filter") and value.args and 1 <= len(value.args) <= 2:
            last = value.args[-1]
            return last.keyword is None and not last.star and _parameters_form(last.value, depth + 1)
        return False
    if type(value) in (cst.ListComp, cst.GeneratorExp):
        return value.for_in.inner_for_in is None and _parameters_form(value.for_in.iter, depth + 1)  # type: ignore[attr-defined]
    if type(value) is cst.BinaryOperation and type(value.operator) is cst.Add:
        return _parameters_form(value.left, depth + 1) or _parameters_form(value.right, depth + 1)  # type: ignore[attr-defined]
    return False


def options_like(name: str) -> bool:
    """``opt``, ``opts``, ``optG``: named like an optimizer and like the command-line options
    (``opt = parser.parse_args()``), which only the value engine tells apart."""
    lowered = name.lower()
    return lowered.startswith("opt") and "optim" not in lowered


def is_autograd_grad(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    return isinstance(call.func, (cst.Name, cst.Attribute)) and last_name(call.func) == "grad" and (
        qualname(call.func) == "torch.autograd.grad"
    )


def is_no_grad_expr(expr: cst.BaseExpression, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """A context manager or decorator that turns autograd recording off.

    ``torch.no_grad()``, ``torch.inference_mode()`` (not ``inference_mode(False)``),
    ``torch.set_grad_enabled(False)``; also ``set_grad_enabled(x)`` with a value that is not
    known (``phase == "val"``), and any name that says ``no_grad``/``inference_mode``
    (``smart_inference_mode()``): precision first, these may well turn grad off.
    """
    target = expr.func if isinstance(expr, cst.Call) else expr
    if not isinstance(target, (cst.Name, cst.Attribute)):
        return False
    name = qualname(target)
    if name in _NO_GRAD_NAMES:
        if isinstance(expr, cst.Call) and name == "torch.inference_mode" and expr.args:
            return literal_value(expr.args[0].value) is not False
        return True
    if name == "torch.set_grad_enabled":
        if isinstance(expr, cst.Call) and expr.args:
            return literal_value(expr.args[0].value) is not True
        return False
    dotted = dotted_name(target) or ""
    return bool(_NO_GRAD_WORDS.search(dotted))


def callee_key(call: cst.Call, class_name: Optional[str]) -> Optional[FuncKey]:
    """The same-module function a call may run: ``f(...)`` or ``self.f(...)``."""
    func = call.func
    if isinstance(func, cst.Name):
        return (None, func.value)
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value in ("self", "cls")
        and class_name is not None
    ):
        return (class_name, func.attr.value)
    return None
