"""Which bindings of a name bound more than once in its scope may reach a read: the
loader trail (``loader_sources``) follows each.

The one-binding case is ``reaching.reaching_binding`` (``loader = make(ds)``, then
``loader = Staged(loader)``, each read by the next). An entry script also rebinds a loader
on one arm of an ``if`` inside its epoch loop (``gen = DataLoader(...)`` before the loop;
``if epoch >= unfreeze and not done: gen = DataLoader(...)`` in it; ``fit(model, gen)``
after): going back from the read through the statements before it, out through the blocks
around it, every plain ``name = value`` on an ``if`` arm is collected and the walk goes on
(the arm may not run), until a plain ``name = value`` that always runs. Any other binding
on the way (an unpacking, ``+=``, a ``with``/``for`` target, a binding in a nested loop or
``try``), a binding in the loop after the read (it would reach round the loop), or the
start of the scope before a binding that always runs: not known.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import target_leaves
from ..training.reaching import binds, reaching_binding
from .loader_args import Path
from .loader_sites import _enclosing_function

def rebound_values(recorded, expr: cst.Name, scope, path: Path) -> Optional[List[Tuple[cst.BaseExpression, Path]]]:
    """A local of a function (or a name of the module) bound more than once in plain
    statements: the values that may reach the read ``expr`` (``reaching_values``), with
    their paths (``recorded``: the ``LoaderSiteRecorder``). Not a name changed in place,
    declared global, or bound in a loop or ``try`` the read leaves."""
    function = _enclosing_function(path)
    owner = function if function is not None else (path[0] if path else None)
    name = expr.value
    values = scope.bindings.get(name)
    if owner is None or scope.node is not owner or not values or len(values) < 2 or None in values:
        return None
    if name in scope.imports or name in scope.declared_outer or name in scope.changed_itself:
        return None
    found = reaching_values(owner, path + (expr,), name)
    paths = [recorded.value_paths.get(id(value)) for value in found or ()]
    if not found or any(p is None for p in paths):
        return None
    return list(zip(found, paths))  # type: ignore[arg-type]


_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_LOOPS = (cst.For, cst.While)
_PARTIAL = (cst.Try, cst.TryStar, cst.Match)


def reaching_values(scope_node: cst.CSTNode, path: Path, name: str) -> Optional[List[cst.BaseExpression]]:
    """The values of the ``name = value`` statements that may reach the read ``path``
    leads to, inside the scope ``scope_node`` (a function or the module); None when that
    is not this simple."""
    one = reaching_binding(scope_node, path, name)
    if one is not None:
        return [one[0]]
    start = next((i for i, node in enumerate(path) if node is scope_node), None)
    if start is None:
        return None
    found: List[cst.BaseExpression] = []
    for k in range(len(path) - 2, start - 1, -1):
        block, statement = path[k], path[k + 1]
        if isinstance(block, _SCOPES) and k > start:
            return None
        if isinstance(block, _PARTIAL) and binds(block, name):
            return None  # a handler or a case: the bindings before it ran only in part
        if isinstance(block, _LOOPS) and statement is block.body and k + 2 < len(path):  # type: ignore[attr-defined]
            if _binds_after(block.body, path[k + 2], name) or _target_binds(block, name):  # type: ignore[attr-defined]
                return None  # a binding in the loop reaches the read round it
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            continue
        for earlier in reversed(_before(block.body, statement)):
            if not binds(earlier, name):
                continue
            plain = _plain(earlier, name)
            if plain is not None:
                return [*found, plain]
            arms = _if_arms(earlier, name)
            if arms is None:
                return None
            found.extend(arms[0])
            if arms[1]:
                return found
    return None


def _before(body: Sequence[cst.CSTNode], statement: cst.CSTNode) -> List[cst.CSTNode]:
    for index, node in enumerate(body):
        if node is statement:
            return list(body[:index])
    return []


def _plain(statement: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """``name = value`` alone on its line: the value."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:  # type: ignore[attr-defined]
        return None
    small = statement.body[0]  # type: ignore[attr-defined]
    if type(small) is cst.Assign and len(small.targets) == 1:
        target = small.targets[0].target
        if type(target) is cst.Name and target.value == name:
            return small.value
    return None


def _if_arms(statement: cst.CSTNode, name: str) -> Optional[Tuple[List[cst.BaseExpression], bool]]:
    """An ``if`` whose arms bind ``name`` only by plain statements of their own blocks: the
    last such value of each arm, and whether every arm binds it (an ``else`` included)."""
    if type(statement) is not cst.If:
        return None
    found: List[cst.BaseExpression] = []
    always = True
    arm: Optional[cst.CSTNode] = statement
    while arm is not None:
        orelse = arm.orelse if type(arm) is cst.If else None  # type: ignore[attr-defined]
        if type(arm) is cst.If and binds(arm.test, name):  # type: ignore[attr-defined]
            return None
        body = arm.body  # type: ignore[attr-defined]
        if type(body) is not cst.IndentedBlock:
            return None
        lines = [s for s in body.body if binds(s, name)]
        if any(_plain(s, name) is None for s in lines):
            return None  # bound inside a nested statement of the arm, or not plainly
        if lines:
            found.append(_plain(lines[-1], name))  # type: ignore[arg-type]
        else:
            always = False
        if type(arm) is cst.If and orelse is None:
            always = False
        arm = orelse
    return found, always


def _binds_after(body: cst.CSTNode, inner: cst.CSTNode, name: str) -> bool:
    """Some statement of a loop's body after ``inner`` (the one the read stands in) binds
    ``name``."""
    statements = list(getattr(body, "body", ()))
    index = next((i for i, s in enumerate(statements) if s is inner), None)
    return index is None or any(binds(s, name) for s in statements[index + 1:])


def _target_binds(loop: cst.CSTNode, name: str) -> bool:
    return type(loop) is cst.For and any(
        type(leaf) is cst.Name and leaf.value == name for leaf, _ in target_leaves(loop.target)  # type: ignore[attr-defined]
    )


def entered_around(path: Path, name: str) -> Optional[cst.CSTNode]:
    """``with tqdm(loader) as bar:`` around the read ``path`` leads to, in the same scope,
    whose body binds ``bar`` nowhere else: what ``bar`` holds there (the bar the ``with``
    entered, ``bar`` bound by each of several such statements alike)."""
    for k in range(len(path) - 2, -1, -1):
        node = path[k]
        if isinstance(node, _SCOPES):
            return None
        if type(node) is not cst.With or path[k + 1] is not node.body:  # type: ignore[attr-defined]
            continue
        items = [i for i in node.items if i.asname is not None and binds(i.asname, name)]  # type: ignore[attr-defined]
        if items:
            return items[-1].item if len(items) == 1 and not binds(node.body, name) else None  # type: ignore[attr-defined]
    return None
