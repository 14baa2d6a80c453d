"""Whether a loader handed to a project trainer class is walked every epoch by it (TPF103).

``train_loader = DataLoader(ds, num_workers=4)``, then once ``Trainer(model, train_loader=
train_loader).train()``, where the class keeps the loader (``self.train_loader =
train_loader`` in ``__init__``) and walks it in a method called inside a loop of another of
its methods (``train()``: ``for epoch in ...: self.train_epoch()``), or inside an outer loop
of the walking method itself. Each such pass starts the loader's workers again.

What must hold, or nothing is claimed:

* the DataLoader call is bound to a name once in its function (or module), and that name
  is passed (a keyword or a position) to a call of a project class that stands outside any
  loop there (a loader built anew each time round is TPF103's look-alike);
* the class's ``__init__`` (its own, or the first of its project bases) stores that
  parameter as ``self.<attr> = <param>``, the only assignment of ``<attr>`` along the class
  and its project bases, and the parameter is not rebound;
* a method of those classes walks ``self.<attr>`` (``for ... in``, through ``enumerate``,
  ``iter``, ``tqdm``) inside an outer loop of its own, or is called as ``self.<method>(...)``
  inside a loop of another of their methods.

The class's module is read with ``ast`` (through the index: the finding depends on it).
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...context import FileContext
from ...project import Definition
from ...project.forms import dotted
from ...project.summarizer import parse_tree
from .loader_args import _LOOPS, _SCOPES, Path
from .project_iterations import _PASS_THROUGH, _holds, _own_nodes

_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def walked_by_trainer(context: FileContext, call: cst.Call, ancestors: Path) -> bool:
    """The loader ``call`` builds is handed to a project class that walks it every epoch."""
    project = context.project
    if project is None:
        return False
    statement = ancestors[-1] if ancestors else None
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 or not isinstance(statement.targets[0].target, cst.Name):
        return False
    name = statement.targets[0].target.value
    scope = next((a for a in reversed(ancestors) if isinstance(a, _SCOPES)), context.module)
    if any(isinstance(a, _LOOPS) for a in ancestors) or not isinstance(scope, (cst.FunctionDef, cst.Module)):
        return False
    if _bindings(scope, name) != 1:
        return False
    for handed, keyword, position in _handed(scope, name):
        callee = dotted_name(handed.func)
        klass = project.resolve(str(context.path), callee) if callee else None
        if klass is not None and klass.kind == "class" and _walks_every_epoch(project, klass, keyword, position):
            return True
    return False


def _bindings(scope: cst.CSTNode, name: str) -> int:
    """How many times the scope binds ``name`` (assignments, loop targets, ``with`` names)."""
    count = 0
    for node in _own_cst(scope):
        if isinstance(node, (cst.AssignTarget, cst.For, cst.AugAssign, cst.AnnAssign, cst.WithItem)):
            target = node.target if not isinstance(node, cst.WithItem) else (node.asname.name if node.asname else None)
            count += sum(1 for n in _names(target) if n.value == name)
    return count


def _names(node: Optional[cst.CSTNode]) -> Iterator[cst.Name]:
    if isinstance(node, cst.Name):
        yield node
    elif isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            yield from _names(element.value)
    elif isinstance(node, cst.StarredElement):
        yield from _names(node.value)


def _own_cst(scope: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The scope's nodes, not those of nested functions or classes."""
    stack: List[cst.CSTNode] = list(scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body)  # type: ignore[union-attr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in node.children if not isinstance(c, _SCOPES))


def _handed(scope: cst.CSTNode, name: str) -> Iterator[Tuple[cst.Call, Optional[str], Optional[int]]]:
    """Calls outside loops that pass ``name`` itself: (call, keyword or None, position)."""
    stack: List[cst.CSTNode] = list(scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body)  # type: ignore[union-attr]
    while stack:
        node = stack.pop()
        if isinstance(node, _LOOPS + _SCOPES):
            continue
        if isinstance(node, cst.Call) and not any(a.star for a in node.args):
            position = 0
            for arg in node.args:
                if isinstance(arg.value, cst.Name) and arg.value.value == name:
                    yield node, (arg.keyword.value if arg.keyword is not None else None), (None if arg.keyword is not None else position)
                if arg.keyword is None:
                    position += 1
        stack.extend(node.children)


def _walks_every_epoch(project, klass: Definition, keyword: Optional[str], position: Optional[int]) -> bool:
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
