"""A project trainer class that walks what its constructor was handed every epoch.

``Trainer(model, train_loader)`` where the class's ``__init__`` (its own, or the first of
its project bases) stores that parameter as ``self.<attr> = <param>`` (the only assignment
of ``<attr>`` along the class and its project bases, the parameter not rebound) and one of
its methods walks ``self.<attr>`` (``for ... in``, through ``enumerate``, ``iter``,
``tqdm``) inside an outer loop of its own, or is called as ``self.<method>(...)`` inside a
loop of another of its methods. Read with ``ast`` through the index: the caller's loader
in this module (``trainer_walks``, TPF103) and a loader a helper returns to a caller in
another module (``project_iterations``, TPF103 and TPF105, whose evaluation methods,
``unless_name``, do not count).
"""

from __future__ import annotations

import ast
import re
from typing import Optional, Sequence

from ...project import Definition
from ...project.forms import dotted
from ...project.summarizer import parse_tree
from .endless_walks import _holds, _own_nodes

_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_PASS_THROUGH = frozenset({"enumerate", "iter", "tqdm"})


def walks_every_epoch(
    project, klass: Definition, keyword: Optional[str], position: Optional[int], unless_name: Optional["re.Pattern[str]"] = None
) -> bool:
    """The class keeps the constructor's argument (by ``keyword`` or ``position``) and one
    of its methods (not one ``unless_name`` matches) walks it every epoch."""
    classes = [c for c in project.resolution.lineage(klass) if c.klass is not None and c.path is not None]
    nodes = [found for c in classes if (found := _class_node(project, c)) is not None]
    if len(nodes) != len(classes) or not nodes:
        return False
    init = next((m for node in nodes for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    if init is None or init.args.vararg is not None or init.args.posonlyargs or len(init.args.args) < 2:
        return False
    this = init.args.args[0].arg
    params = [a.arg for a in init.args.args[1:]]
    parameter = keyword if keyword is not None else (params[position] if position is not None and position < len(params) else None)
    if parameter is None or parameter not in params + [a.arg for a in init.args.kwonlyargs]:
        return False
    if any(isinstance(n, ast.Name) and n.id == parameter and not isinstance(n.ctx, ast.Load) for n in _own_nodes(init.body)):
        return False  # rebound before it is stored
    stored = [_stored(n, this) for n in _own_nodes(init.body) if isinstance(n, ast.Assign) and type(n.value) is ast.Name and n.value.id == parameter]
    attrs = [a for a in stored if a is not None]
    if len(attrs) != 1:
        return False
    attr = attrs[0]
    methods = [m for node in nodes for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if sum(_assigns(m, attr) for m in methods) != 1:
        return False
    for method in methods:
        if unless_name is not None and unless_name.search(method.name):
            continue
        own = list(_own_nodes(method.body))
        walks = [n for n in own if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) and _walked(n.iter, _first(method), attr)]
        if not walks:
            continue
        loops = [n for n in own if isinstance(n, _AST_LOOPS)]
        if any(loop is not walk and _holds(loop, walk) for walk in walks for loop in loops):
            return True
        if any(_calls_in_loop(other, method.name) for other in methods if other is not method):
            return True
    return False


def _class_node(project, klass: Definition) -> Optional[ast.ClassDef]:
    text = project.text(klass.path)
    tree = parse_tree(text) if text is not None else None
    if tree is None:
        return None
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == klass.klass.name and n.lineno == klass.klass.line]
    return found[0] if len(found) == 1 else None


def _stored(node: ast.Assign, this: str) -> Optional[str]:
    """``attr`` for ``self.attr = value`` (one target)."""
    if len(node.targets) != 1:
        return None
    target = node.targets[0]
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == this:
        return target.attr
    return None


def _assigns(method: ast.AST, attr: str) -> int:
    """How many statements of the method bind ``<first parameter>.<attr>``."""
    this = _first(method)
    count = 0
    for node in ast.walk(method):
        targets: Sequence[ast.AST] = ()
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = (node.target,)
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Attribute) and leaf.attr == attr and isinstance(leaf.value, ast.Name) and leaf.value.id == this:
                    count += 1
    if any(isinstance(n, ast.Call) and dotted(n.func) in ("setattr", "delattr") for n in ast.walk(method)):
        count += 2  # written by name: not known
    return count


def _first(method: ast.AST) -> Optional[str]:
    args = getattr(method, "args", None)
    return args.args[0].arg if args is not None and args.args else None


def _walked(expr: ast.AST, this: Optional[str], attr: str) -> bool:
    """``self.attr``, or it through ``enumerate``/``iter``/``tqdm``."""
    while type(expr) is ast.Call and expr.args and not any(type(a) is ast.Starred for a in expr.args):  # type: ignore[attr-defined]
        if (dotted(expr.func) or "").split(".")[-1] not in _PASS_THROUGH:  # type: ignore[attr-defined]
            return False
        expr = expr.args[0]  # type: ignore[attr-defined]
    return this is not None and dotted(expr) == f"{this}.{attr}"


def _calls_in_loop(method: ast.AST, name: str) -> bool:
    """``self.<name>(...)`` inside a loop of ``method``."""
    this = _first(method)
    own = list(_own_nodes(method.body))  # type: ignore[attr-defined]
    loops = [n for n in own if isinstance(n, _AST_LOOPS)]
    calls = [n for n in own if isinstance(n, ast.Call) and dotted(n.func) == f"{this}.{name}"]
    return any(_holds(loop, call) for call in calls for loop in loops)
