"""Second-stage pre-screens on Python's ``ast``, for rules whose trigger words are common.

``ast.parse`` is about 13 times cheaper than the LibCST parse, so a file that passed a
rule's text pre-screen is checked here for the rough shape of a finding before LibCST sees
it. Every screen over-approximates what its rule reports: the LibCST visitors stay the
detectors, these only spare them files that cannot hold a finding.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, List, Set, Union

from .training import is_eval_function_name

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

_NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode|set_grad_enabled|enable_grad", re.IGNORECASE)


def _own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function (or module) body, not those of nested functions/classes."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _mentions_no_grad(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Name) and _NO_GRAD_WORDS.search(n.id)
        or isinstance(n, ast.Attribute) and _NO_GRAD_WORDS.search(n.attr)
        for n in ast.walk(node)
    )


def _sets_eval_mode(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr == "eval" and not node.args and not node.keywords:
        return True
    if node.func.attr == "train":
        values = [*node.args, *(k.value for k in node.keywords)]
        return any(isinstance(v, ast.Constant) and v.value is False for v in values)
    return False


def _has_loop_outside_no_grad(root: ast.AST) -> bool:
    """A for/while loop in ``root``'s own body that no ``with`` no-grad block encloses."""
    stack: List[ast.AST] = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
            _mentions_no_grad(item.context_expr) for item in node.items
        ):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def could_evaluate_without_no_grad(tree: ast.Module) -> bool:
    """Somewhere a function (or the module) that evaluates — it sets eval mode or is named
    like evaluation — runs a loop outside any no-grad ``with`` and is not decorated no-grad."""
    scopes: List[ast.AST] = [tree]
    scopes.extend(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    for scope in scopes:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_mentions_no_grad(d) for d in scope.decorator_list):
                continue
            evaluates = is_eval_function_name(scope.name) or any(_sets_eval_mode(n) for n in _own_nodes(scope))
        else:
            evaluates = any(_sets_eval_mode(n) for n in _own_nodes(scope))
        if evaluates and _has_loop_outside_no_grad(scope):
            return True
    return False


_ARRAY_MODULES = ("numpy", "cv2", "pandas", "PIL", "imageio", "h5py", "scipy")
_ARRAY_ATTRIBUTES = frozenset({"numpy", "to_numpy", "values", "astype", "T", "copy", "reshape", "transpose"})
_CONSTRUCTOR = re.compile(r"^(?:tensor|Tensor|[A-Z][A-Za-z0-9]*Tensor)$")


def _array_roots(tree: ast.Module) -> Set[str]:
    """Local names bound to array-producing modules (``np``, ``numpy``, ``cv2``, ``pd``...)
    or to names imported from them."""
    roots: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _ARRAY_MODULES:
                    roots.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _ARRAY_MODULES:
            roots.update(alias.asname or alias.name for alias in node.names)
    return roots


def _root_name(node: ast.AST) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _could_be_array(node: ast.AST, roots: Set[str], names: Set[str]) -> bool:
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute) and node.attr in _ARRAY_ATTRIBUTES:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ARRAY_ATTRIBUTES:
        return True
    root = _root_name(node)
    return bool(root) and (root in roots or root in names)


def could_copy_numpy(tree: ast.Module) -> bool:
    """A tensor constructor whose first argument could be a NumPy array: an expression from
    numpy (or cv2, pandas...), ``.numpy()``, or a name assigned one anywhere in the file."""
    roots = _array_roots(tree)
    assignments = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))]
    names: Set[str] = set()
    changed = True
    while changed:  # a name assigned from another array name is an array name too
        changed = False
        for node in assignments:
            value = node.value
            if value is None or not _could_be_array(value, roots, names):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in names:
                        names.add(name.id)
                        changed = True
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if _CONSTRUCTOR.match(called) and _could_be_array(node.args[0], roots, names):
            return True
    return False
