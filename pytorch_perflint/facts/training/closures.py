"""Closures an evaluating function defines and calls in its loop (TPF203).

``model.eval()``, then ``def predict(b): return model(b)`` (or ``predict = lambda b:
model(b)``) and ``for b in loader: predict(b)``: the loop runs the model through a function
of the evaluating function's own, which reads the model from that function's frame. The
walk in ``no_grad`` records the nested functions and lambdas bound once in a frame; this
module says which callables their bodies call and whether they need gradients (then the
loop is not evaluation: silent).
"""

from __future__ import annotations

import ast
import re
from typing import AbstractSet, FrozenSet, List, Set, Tuple, Union

import libcst as cst

from ...analysis.ast_index import ast_children, ast_dotted
from ...analysis.scope import dotted_name
from .classifiers import BACKWARD_ATTRS, method_name
from .eval_names import needs_grad_name
from .loops import walk

Closure = Union[cst.FunctionDef, cst.Lambda]
_GRAD_SWITCH = re.compile(r"no_?grad|inference_mode|set_grad_enabled", re.IGNORECASE)


def lambda_binding(node: cst.Assign) -> tuple:
    """``name = lambda ...: ...``: (name, the lambda), else ()."""
    if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name and type(node.value) is cst.Lambda:
        return node.targets[0].target.value, node.value
    return ()


def closure_callees(closure: Closure) -> FrozenSet[str]:
    """The dotted names the closure calls (``classifier``, ``self.gen``) with autograd on,
    its nested scopes and no-grad blocks left out; empty when it needs gradients (a
    backward, a step, ``.grad``) or a decorator may turn autograd off."""
    called: List[str] = []
    grad: List[bool] = []
    if type(closure) is cst.FunctionDef and closure.decorators:
        return frozenset()

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if grad or (stack and type(node) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if type(node) is cst.With and any(_GRAD_SWITCH.search(cst.Module([]).code_for_node(item.item)) for item in node.items):
            return False  # `with torch.no_grad():` inside the closure
        if type(node) is cst.Call:
            name = method_name(node)
            if name in BACKWARD_ATTRS or name == "step":
                grad.append(True)
            elif type(node.func) in (cst.Name, cst.Attribute):
                dotted = dotted_name(node.func)
                if dotted is not None:
                    called.append(dotted)
        elif type(node) is cst.Attribute and needs_grad_name(node.attr.value):
            grad.append(True)
        elif type(node) is cst.Name and needs_grad_name(node.value):
            grad.append(True)
        return True

    walk(closure.body, enter)
    return frozenset() if grad else frozenset(called)


def closures_calling(frame: ast.AST, owners: AbstractSet[str]) -> FrozenSet[str]:
    """The screens' over-approximation (on ``ast``): the names of the functions and lambdas
    defined within the frame whose bodies call one of ``owners``. One walk, each node
    with the names of the closures around it: a walk of each closure's body (as this was)
    walked a nested one again for every closure around it."""
    if not owners:
        return frozenset()
    found: Set[str] = set()
    stack: List[Tuple[ast.AST, Tuple[str, ...]]] = [(child, ()) for child in ast_children(frame)]
    while stack:
        node, around = stack.pop()
        kind = type(node)
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            around = (*around, node.name)  # type: ignore[attr-defined]
        elif kind is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name and type(node.value) is ast.Lambda:  # type: ignore[attr-defined]
            around = (*around, node.targets[0].id)  # type: ignore[attr-defined]  # the target holds no call
        elif kind is ast.Call and around and ast_dotted(node.func) in owners:  # type: ignore[attr-defined]
            found.update(around)
        stack.extend((child, around) for child in ast_children(node))
    return frozenset(found)
