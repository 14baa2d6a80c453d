"""Gradient tensors in the module: which expressions are ``.grad``, and whether the module
relies on gradients being allocated (TPF201 stays silent then).

Setting gradients to ``None`` instead of zeroing them is only safe when nothing writes into
the *existing* gradient tensor before the next backward allocates it. Writes that need an
allocated gradient, and make TPF201 silent for the whole module:

- augmented assignment: ``p.grad += g``, ``p.grad.data -= g``, ``p.grad[idx] *= m``;
- assignment into it: ``p.grad.data = g``, ``p.grad[idx] = g``;
- in-place methods that accumulate or copy values in: ``add_``, ``sub_``, ``copy_``,
  ``addcmul_``, ``addcdiv_``, ``index_add_``, ``index_copy_``, ``index_put_``, ``scatter_``,
  ``scatter_add_``, ``scatter_reduce_``, ``masked_scatter_``, ``put_``, ``set_``, ``lerp_``
  on ``p.grad`` / ``p.grad.data``;
- a gradient passed as ``out=`` or to a collective that works in place
  (``dist.all_reduce(p.grad)``, ``broadcast``, ``reduce``, horovod's ``allreduce_``);
- the ``torch._foreach_`` forms of those methods on lists of gradients (``_foreach_add_``).

Scaling in place after backward (``p.grad.mul_(s)``, ``div_``, ``clamp_``) is not counted:
backward has allocated the gradients by then.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .loops import walk

_ACCUMULATING = frozenset(
    {
        "add_",
        "sub_",
        "copy_",
        "addcmul_",
        "addcdiv_",
        "index_add_",
        "index_copy_",
        "index_put_",
        "scatter_",
        "scatter_add_",
        "scatter_reduce_",
        "masked_scatter_",
        "put_",
        "set_",
        "lerp_",
    }
)
_COLLECTIVE_WORDS = ("reduce", "broadcast", "all_gather")


def grad_attribute(expr: cst.BaseExpression) -> Optional[cst.Attribute]:
    """The ``X.grad`` node of ``X.grad`` or ``X.grad.data``, else None."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    if isinstance(expr, cst.Attribute) and expr.attr.value == "grad":
        return expr
    return None


def _grad_or_item(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return grad_attribute(expr) is not None


def _mentions_grad(node: cst.CSTNode) -> bool:
    found = []

    def enter(child: cst.CSTNode, stack) -> bool:
        if found:
            return False
        if isinstance(child, cst.Attribute) and child.attr.value == "grad":
            found.append(True)
        return True

    walk(node, enter)
    return bool(found)


def _is_write(node: cst.CSTNode) -> bool:
    if type(node) is cst.AugAssign:
        return _grad_or_item(node.target)
    if type(node) is cst.Assign:
        for target in node.targets:
            expr = target.target
            if type(expr) is cst.Subscript and _grad_or_item(expr):
                return True
            if type(expr) is cst.Attribute and expr.attr.value == "data" and grad_attribute(expr) is not None:
                return True
        return False
    if type(node) is not cst.Call:
        return False
    func = node.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    if name is None:
        return False
    if type(func) is cst.Attribute and name in _ACCUMULATING and _grad_or_item(func.value):
        return True
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "out" and _grad_or_item(arg.value):
            return True
    if any(word in name for word in _COLLECTIVE_WORDS):
        return any(_grad_or_item(arg.value) for arg in node.args if arg.keyword is None)
    if name.startswith("_foreach_") and name[len("_foreach_"):] in _ACCUMULATING:
        return bool(node.args) and _mentions_grad(node.args[0].value)
    return False


def writes_into_grads(context) -> bool:
    """Whether the module writes into existing gradients (use ``context.fact``)."""
    if ".grad" not in context.source:
        return False
    found = []

    def enter(node: cst.CSTNode, stack) -> bool:
        if found:
            return False
        if _is_write(node):
            found.append(True)
        return True

    walk(context.module, enter)
    return bool(found)
