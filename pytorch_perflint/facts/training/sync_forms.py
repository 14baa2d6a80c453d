"""What TPF202 reads of a training loop's text: the terms of a loss (tensors too), and text
formatted from values (``%``, f-strings, ``str.format``), which turns a tensor into text on
the host."""

from __future__ import annotations

from typing import Dict, Iterator, List, Set, Tuple

import libcst as cst

from .classifiers import method_name

_HOST_CALLS = frozenset(("float", "int", "bool", "len", "round", "str", "item", "tolist", "numpy"))


def add_terms(names: Set[str], made: Dict[str, List[Tuple[cst.BaseExpression, bool]]]) -> None:
    """The terms of a loss are tensors too: ``loss = cls_loss + reg_loss`` where each term is
    bound in the loop to what a call returns (``cls_loss, reg_loss = model(x)``, then
    ``cls_loss = cls_loss.mean()``), not to a host number (``float(...)``, ``.item()``)."""
    todo = list(names)
    while todo:
        for value, element in made.get(todo.pop(), ()):
            for term in [] if element else _terms(value):
                if term not in names and made.get(term) and all(_tensor_call(v) for v, _ in made[term]):
                    names.add(term)
                    todo.append(term)


def _terms(value: cst.BaseExpression) -> List[str]:
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
        return _terms(value.left) + _terms(value.right)
    return [value.value] if isinstance(value, cst.Name) else []


def _tensor_call(value: cst.BaseExpression) -> bool:
    """What a call returns (or an element of it, unpacked), unless it makes a host value."""
    if not isinstance(value, cst.Call):
        return False
    callee = method_name(value) or (value.func.value if isinstance(value.func, cst.Name) else None)
    return callee not in _HOST_CALLS


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def formats(arg: cst.BaseExpression) -> bool:
    """Text formatted with ``%``, an f-string or a literal's ``.format(...)``."""
    return isinstance(arg, cst.FormattedString) or (
        isinstance(arg, cst.BinaryOperation) and isinstance(arg.operator, cst.Modulo) and isinstance(arg.left, _STRINGS)
    ) or (
        isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "format" and isinstance(arg.func.value, _STRINGS)
    )


def formatted_values(arg: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """What a ``print`` argument shows: the argument itself, the expressions of an
    f-string, the values of ``"..." % (a, b)`` and of ``"...".format(a, b)`` (each turns a
    tensor into text, which copies it to the host)."""
    yield arg
    if isinstance(arg, cst.FormattedString):
        for part in arg.parts:
            if isinstance(part, cst.FormattedStringExpression):
                yield part.expression
    elif isinstance(arg, cst.BinaryOperation) and isinstance(arg.operator, cst.Modulo):
        if isinstance(arg.left, _STRINGS):
            right = arg.right
            if isinstance(right, cst.Tuple):
                yield from (e.value for e in right.elements if not isinstance(e, cst.StarredElement))
            else:
                yield right
    elif isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "format":
        if isinstance(arg.func.value, _STRINGS):
            yield from (a.value for a in arg.args if not a.star)


def reduces_to_truth(call: cst.Call) -> bool:
    """``t.any()`` / ``t.all()``: a one-element tensor whose truth an ``if`` reads."""
    return not call.args and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("any", "all")
