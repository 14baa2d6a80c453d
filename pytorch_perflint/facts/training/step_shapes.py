"""What a call into a step function, and the function itself, look like on the LibCST tree
(TPF202's step bodies: a helper handed the model's parameters, the class a method belongs
to, an early exit before a sync)."""

from __future__ import annotations

from typing import FrozenSet, List, Sequence

import libcst as cst

from ...project.resolution import Definition
from .loops import walk


def hands_parameters(node: cst.Call, definition: Definition, walked: FrozenSet[str]) -> bool:
    """The call passes ``m.parameters()`` / ``m.named_parameters()`` for one of the walked
    parameters of a module-level function (by position or keyword)."""
    function = definition.function
    if not walked or function is None or definition.kind != "function":
        return False
    params = [p.name for p in function.params if p.kind == "positional"]
    for position, arg in enumerate(node.args):
        if arg.star:
            return False
        name = arg.keyword.value if arg.keyword is not None else params[position] if position < len(params) else None
        if name in walked and _model_parameters(arg.value):
            return True
    return False


def _model_parameters(value: cst.BaseExpression) -> bool:
    return (
        isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("parameters", "named_parameters")
    )


def method_owner(ancestors: Sequence[cst.CSTNode], at: int):
    """The class a function at ``ancestors[at]`` is a method of (None: a module-level
    function; False: nested somewhere the index does not name)."""
    if at == 1:
        return None
    if at == 3 and isinstance(ancestors[1], cst.ClassDef):
        return ancestors[1].name.value
    return False


def exits_early(function: cst.FunctionDef, path: Sequence[cst.CSTNode]) -> bool:
    """A statement before the one holding the node may leave the function under a
    condition (``if not self.enabled: return``)."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock) or not path:
        return False
    holder = path[1] if len(path) > 1 and path[0] is body else None
    for statement in body.body:
        if statement is holder:
            return False
        if isinstance(statement, cst.BaseCompoundStatement):
            found: List[bool] = []

            def enter(child: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
                if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or found:
                    return False
                if isinstance(child, (cst.Return, cst.Raise)):
                    found.append(True)
                return True

            walk(statement, enter)
            if found:
                return True
    return False
