"""A model's method that runs its inherited forward on each sample it is handed (TPF206).

``def _inference_path(self, input_ids, images): for i in range(input_ids.shape[0]):
out = super().forward(input_ids=input_ids[i:i + 1], ...)``: the method walks the samples of
a tensor its caller passes (a count of that parameter: ``x.shape[0]``, ``x.size(0)``,
``len(x)``) and runs the parent class's ``forward`` on each, one item per iteration, as an
inference loop over a batch does. A loop over anything else (``range(self.num_layers)``, a
count from a setting), a parameter the method rebinds, or a body that never calls
``super().forward(...)`` is not one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, FrozenSet, List, Optional, Sequence

import libcst as cst

from ...analysis.walk import child_nodes

if TYPE_CHECKING:
    from ...context import FileContext


def runs_inherited_forward(call: cst.Call) -> bool:
    """``super().forward(...)``: the parent class's forward, a model's own."""
    func = call.func
    return (
        type(func) is cst.Attribute
        and func.attr.value == "forward"
        and type(func.value) is cst.Call
        and type(func.value.func) is cst.Name
        and func.value.func.value == "super"
    )


def walks_own_samples(context: "FileContext", loop: cst.CSTNode, ancestors: Sequence[cst.CSTNode]) -> bool:
    """The loop (in a method, the node at the end of ``ancestors`` its parent) walks the
    samples of a parameter of that method (``range(x.shape[0])``, ``range(x.size(0))``,
    ``range(len(x))``) that the method never rebinds, and its own body runs
    ``super().forward(...)``."""
    if type(loop) is not cst.For or type(loop.iter) is not cst.Call:
        return False
    iterable = loop.iter
    if type(iterable.func) is not cst.Name or iterable.func.value != "range" or len(iterable.args) != 1:
        return False
    method = _method(ancestors)
    if method is None:
        return False
    params = _parameters(method)
    counted = _counted_parameter(iterable.args[0].value)
    if counted is None or counted not in params:
        return False
    bindings = context.scope_for(loop, ancestors).bindings.get(counted, [])
    if len(bindings) != 1:  # the parameter alone: never rebound in the method
        return False
    return _calls_inherited_forward(loop.body)


def _method(ancestors: Sequence[cst.CSTNode]) -> Optional[cst.FunctionDef]:
    """The function around the loop, when it is a method of a class (its nearest def)."""
    for index in range(len(ancestors) - 1, -1, -1):
        node = ancestors[index]
        if type(node) is cst.FunctionDef:
            return node if index >= 2 and type(ancestors[index - 2]) is cst.ClassDef else None
        if type(node) in (cst.ClassDef, cst.Lambda):
            return None
    return None


def _parameters(method: cst.FunctionDef) -> FrozenSet[str]:
    params = method.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return frozenset(names - {"self", "cls"})


def _counted_parameter(expr: cst.BaseExpression) -> Optional[str]:
    """``x`` for ``x.shape[0]``, ``x.size(0)``, ``len(x)``: how many samples ``x`` holds."""
    if type(expr) is cst.Subscript and type(expr.value) is cst.Attribute and expr.value.attr.value == "shape":
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        first = type(index) is cst.Index and type(index.value) is cst.Integer and index.value.value == "0"
        owner = expr.value.value
        return owner.value if first and type(owner) is cst.Name else None
    if type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "size":
        args = expr.args
        first = len(args) == 1 and type(args[0].value) is cst.Integer and args[0].value.value == "0"
        owner = expr.func.value
        return owner.value if first and type(owner) is cst.Name else None
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "len" and len(expr.args) == 1:
        owner = expr.args[0].value
        return owner.value if type(owner) is cst.Name else None
    return None


def _calls_inherited_forward(body: cst.CSTNode) -> bool:
    stack: List[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Call and runs_inherited_forward(node):
            return True
        stack.extend(child_nodes(node))
    return False
