"""Losses a loop hands to a project helper that backpropagates them (TPF205).

``self.backward(loss)`` where the trainer's ``def backward(self, loss): loss.backward()``,
``agent.optimize(loss)`` whose body runs ``loss.backward()`` (or
``self.accelerator.backward(loss)``, ``scaler.scale(loss).backward()``): only a tensor with
a graph can be backpropagated, so the name the loop passes carries one, whatever made it.
The callee is what the value engine dispatches the call to (every target must
backpropagate that parameter); its body is read with ``ast`` once per summary
(``memoised_body``).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional, Set

import libcst as cst

from ...project.bodies import memoised_body

if TYPE_CHECKING:
    from ...context import FileContext
    from ...project.resolution import Definition

# Objects whose ``backward(loss)`` backpropagates the loss they are handed (Accelerate's
# accelerator, a DeepSpeed engine); a tensor's own ``backward(grad)`` takes a gradient.
BACKPROPAGATES = re.compile(r"accelerat|engine", re.IGNORECASE)


def handed_to_backward(context: "FileContext", call: cst.Call, statement: cst.CSTNode) -> Set[str]:
    """The names among the call's positional arguments that every project target of the
    call backpropagates (empty when none, or the targets are not known)."""
    positions = [(i, a.value.value) for i, a in enumerate(call.args) if a.keyword is None and not a.star and isinstance(a.value, cst.Name)]
    if not positions or any(a.star for a in call.args):
        return set()
    values = context.values()
    targets = values.callees(call, statement) if values is not None else None
    if not targets:
        return set()
    out = set()
    for position, name in positions:
        if all(position in _backpropagated_positions(values.engine, target, isinstance(call.func, cst.Attribute)) for target in targets):  # type: ignore[union-attr]
            out.add(name)
    return out


def _backpropagated_positions(engine, target: "Definition", bound: bool) -> frozenset:
    """The argument positions (as a call ``obj.m(...)`` passes them when ``bound``) whose
    parameter the function backpropagates in its own statements."""
    method = target.kind == "method"

    def read(node: ast.AST, summary) -> frozenset:
        args = getattr(node, "args", None)
        if args is None or args.vararg is not None:
            return frozenset()
        names = [a.arg for a in (*args.posonlyargs, *args.args)]
        if method and bound:
            names = names[1:]  # `self`
        found = _backpropagated_names(node)
        return frozenset(i for i, n in enumerate(names) if n in found)

    found = memoised_body(engine, target, "backpropagated-parameters", read)
    return found if found is not None else frozenset()


def _backpropagated_names(function: ast.AST) -> Set[str]:
    names: Set[str] = set()
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("backward", "manual_backward"):
            name = _backpropagated(node)
            if name is not None:
                names.add(name)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _backpropagated(call: ast.Call) -> Optional[str]:
    """``p.backward()``, ``accelerator.backward(p)``, ``self.manual_backward(p)``,
    ``scaler.scale(p).backward()``: the name backpropagated."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    receiver = func.value
    if func.attr == "backward" and isinstance(receiver, ast.Name) and not BACKPROPAGATES.search(receiver.id):
        return receiver.id if receiver.id != "self" else None
    first = call.args[0] if call.args else None
    last = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    if func.attr == "manual_backward" or (func.attr == "backward" and BACKPROPAGATES.search(last)):
        return first.id if isinstance(first, ast.Name) else None
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "scale" and len(receiver.args) == 1:
        scaled = receiver.args[0]
        owner = receiver.func.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
        if "scaler" in owner_name.lower() and isinstance(scaled, ast.Name):
            return scaled.id
    return None
