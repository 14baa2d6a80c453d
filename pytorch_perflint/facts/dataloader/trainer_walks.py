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

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from ...analysis.walk import child_nodes

from ...analysis.scope import dotted_name
from ...context import FileContext
from .loader_args import _LOOPS, _SCOPES, Path
from .trainer_classes import walks_every_epoch as _walks_every_epoch


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
        stack.extend(c for c in child_nodes(node) if not isinstance(c, _SCOPES))


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
        stack.extend(child_nodes(node))
