"""The ``ast`` screen of TPF203's evaluation loops that reach their model through project
code (``eval_helpers``): it over-approximates both shapes, before LibCST parses the file."""

from __future__ import annotations

import ast
from typing import Callable, Collection, Iterator, List, Optional, Tuple

from ...analysis.ast_index import TreeIndex, ast_children, ast_dotted, tree_index
from .classifiers import options_like
from .no_grad import is_eval_function_name, needs_grad_name
from .screens import _eval_owner, _is_no_grad, _layer_attributes

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def could_evaluate_through_helpers(
    tree: ast.Module, method_evaluated: Optional[Callable[[str], bool]] = None, helpers: bool = True
) -> bool:
    """Over-approximates the shapes: a loop outside no-grad in a function named like
    evaluation calling a method of a parameter, or in a frame that puts a model in eval
    mode passing that model to a call or calling its method, or in a method of a module-level class calling the
    class's layers (``self.lstm``), whose callers put the object in eval mode (asked of
    ``method_evaluated("Class.method")`` when given); nothing in the loop named like a
    gradient; or a method named for evaluation handed data (``engine.eval(x, y)``). Only
    the frames holding a call in a loop that fits a shape are walked.
    Without ``helpers``, only the method shape (the others need a small project)."""
    index = tree_index(tree)
    layers = _layer_attributes(tree)
    layer_lines, helper_lines = _fitting_lines(index, layers)
    for klass in (node for node in tree.body if isinstance(node, ast.ClassDef)) if layer_lines else ():
        for method in klass.body if _holds(klass, layer_lines) else ():
            if not isinstance(method, ast.FunctionDef) or not _holds(method, layer_lines):
                continue
            if any(_is_no_grad(d) for d in method.decorator_list):
                continue
            if any(_loop_qualifies(loop, (), (), layers) for loop in _loops(method)):
                if method_evaluated is None or method_evaluated(f"{klass.name}.{method.name}"):
                    return True
    for frame in (tree, *index.functions) if helper_lines and helpers else ():
        if frame is tree:
            scopes = [node for node in tree.body if isinstance(node, _SCOPES)]
            if all(any(_holds(node, [line]) for node in scopes) for line in helper_lines):
                continue  # every fitting call is inside a def or class: not the module's own
        elif not _holds(frame, helper_lines):
            continue
        named = isinstance(frame, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_eval_function_name(frame.name)
        if named and any(_is_no_grad(d) for d in frame.decorator_list):  # type: ignore[union-attr]
            continue
        params = frozenset(a.arg for a in frame.args.args) if named else frozenset()  # type: ignore[union-attr]
        owners = frozenset(filter(None, map(_eval_owner, _own(frame))))
        if any(_loop_qualifies(loop, params, owners) for loop in _loops(frame)):
            return True
    return False


def _fitting_lines(index: TreeIndex, layers: Collection[str]) -> Tuple[List[int], List[int]]:
    """Lines of the calls in loops that fit a shape, whatever their frame: a layer on
    ``self`` called; a method of a parameter of a function named like evaluation, or a
    model some ``.eval()`` of the file names passed."""
    owners = set()
    if "eval" in index.identifiers or "train" in index.identifiers:
        owners = {o for call in index.calls if type(call.func) is ast.Attribute and call.func.attr in ("eval", "train") and (o := _eval_owner(call))}
    params = {a.arg for f in index.functions if is_eval_function_name(f.name) for a in f.args.args}
    layer_lines: List[int] = []
    helper_lines: List[int] = []
    for call in index.calls_in_loops:
        func = call.func
        if type(func) is ast.Attribute and layers and ast_dotted(func) in layers:
            layer_lines.append(call.lineno)
        if (type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id in params) or (
            owners and (any(ast_dotted(arg) in owners for arg in call.args) or (type(func) is ast.Attribute and ast_dotted(func.value) in owners))
        ) or evaluating_method(call):
            helper_lines.append(call.lineno)
    return layer_lines, helper_lines


def evaluating_method(call: ast.Call) -> bool:
    """``engine.eval(x, y)``: a method named for evaluation handed data, which may put its
    own object's model in eval mode (``eval_helpers``); not ``model.eval()``."""
    func = call.func
    return type(func) is ast.Attribute and bool(call.args) and is_eval_function_name(func.attr)


def _holds(node: ast.AST, lines: List[int]) -> bool:
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return any(first <= line <= last for line in lines)


def _own(frame: ast.AST) -> Iterator[ast.AST]:
    stack = list(ast_children(frame))
    while stack:
        node = stack.pop()
        if not isinstance(node, _SCOPES):
            yield node
            stack.extend(ast_children(node))


def _loops(frame: ast.AST) -> Iterator[ast.AST]:
    stack = list(ast_children(frame))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_no_grad(i.context_expr) for i in node.items):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield node
        stack.extend(ast_children(node))


def _loop_qualifies(loop: ast.AST, params: Collection[str], owners: Collection[str], layers: Collection[str] = ()) -> bool:
    found = False
    for node in _own(loop):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if name and needs_grad_name(name) and not options_like(name):
            return False
        if isinstance(node, ast.Call) and not found:
            func = node.func
            found = (
                (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in params)
                or any(ast_dotted(arg) in owners for arg in node.args)
                or (isinstance(func, ast.Attribute) and ast_dotted(func.value) in owners)
                or ast_dotted(func) in layers
                or evaluating_method(node)
            )
    return found

