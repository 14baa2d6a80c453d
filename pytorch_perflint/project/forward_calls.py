"""Whether calling a project function runs a torch module's forward with autograd on
(TPF203: an evaluation loop that reaches its model through a helper or an agent's method,
``policy.select_action(state)`` whose body runs ``self.actor(state)``, or
``get_boxes(box_model, img)`` whose body runs ``model(img)``).

Read from the function's ``ast`` (``bodies.locate``): a call outside every ``with`` of
``no_grad`` / ``inference_mode`` / ``set_grad_enabled`` whose callee the value engine knows
is a torch module (``ModuleValues.is_torch_module``: a torch layer or network, a wrapper, an
object of a project ``nn.Module`` class), or a project function or method that does so
itself (``call_values.dispatch``, up to ``MAX_DEPTH`` calls away). Never a function that
trains (backward, an optimizer step: it needs the graph), nor one decorated with a no-grad
decorator or that switches autograd itself. Memoised in the engine with its reads.
"""

from __future__ import annotations

import ast
import re
from typing import List, Tuple

from .bodies import locate
from .call_values import _definition_where, dispatch, trains
from .forms import Form, FormBuilder
from .kinds import Instance, OneOf, ProjectCallable, Unknown, present
from .resolution import Definition
from .scopes import DEEP
from .values import ValueEngine

MAX_DEPTH = 2
_NO_GRAD = re.compile(r"no_?grad|inference_mode|set_grad_enabled", re.IGNORECASE)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def runs_forward(engine: ValueEngine, definition: Definition, depth: int = 0) -> bool:
    """Whether a call of the project function runs a torch module forward outside no-grad."""
    function = definition.function
    if engine.index is None or function is None or definition.path is None or depth > MAX_DEPTH:
        return False
    key = ("forward-call", definition.path, definition.name, function.line)
    return engine._memoised(key, lambda: _runs_forward(engine, definition, depth)) is True  # type: ignore[arg-type]


def _runs_forward(engine: ValueEngine, definition: Definition, depth: int) -> object:
    function = definition.function
    if trains(function) or any(_NO_GRAD.search(str(d)) for d in function.decorators):  # type: ignore[union-attr]
        return False
    calls = _calls(engine, definition)
    if calls is None:
        return False
    for line, func in calls:
        where = _definition_where(engine, definition, line)
        if where is None:
            continue
        callee = present(engine._eval(func, where, 0))
        if engine.models.is_torch_module(callee) is True:
            return True
        if isinstance(callee, Unknown) or type(callee) in (Instance, OneOf, ProjectCallable):
            targets = dispatch(engine, func, where, objects=False) or ()
            if any(runs_forward(engine, target, depth + 1) for target in targets):
                return True
    return False


def _calls(engine: ValueEngine, definition: Definition):
    """(line, callee form) of the calls in the function's own body outside no-grad blocks;
    None when the body cannot be read, trains, or switches autograd off itself."""
    index = engine.index
    function = definition.function
    text = index.text(definition.path)  # type: ignore[union-attr,arg-type]
    node = None if text is None else locate(text, function.line, function.end_line, function.name, False)  # type: ignore[union-attr]
    if node is None:
        return None
    builder = FormBuilder(dict(index.summary(definition.path).aliases), DEEP)  # type: ignore[union-attr,arg-type]
    found: List[Tuple[int, Form]] = []
    stack = list(node.body)  # type: ignore[attr-defined]
    while stack:
        child = stack.pop()
        if isinstance(child, _SCOPES):
            continue
        if isinstance(child, (ast.With, ast.AsyncWith)) and any(_NO_GRAD.search(ast.unparse(i.context_expr)) for i in child.items):
            continue
        if isinstance(child, ast.Call):
            if isinstance(child.func, ast.Attribute) and child.func.attr in ("backward", "set_grad_enabled"):
                return None
            if isinstance(child.func, (ast.Name, ast.Attribute)):
                found.append((child.lineno, builder.form(child.func)))
        stack.extend(ast.iter_child_nodes(child))
    return sorted(found, key=lambda item: item[0])
