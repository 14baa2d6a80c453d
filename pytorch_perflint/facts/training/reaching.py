"""Which binding of a name reaches a read inside a loop body (TPF205).

A loop often binds a name more than once: ``total_loss = 0`` at the top of the iteration,
then ``total_loss = a + b`` before it is backpropagated; or ``loss`` inside a validation
pass (under ``no_grad``) and again in the training step. A read sees only the binding that
reaches it. Going back from the read through the statements before it in its block (and
out through the blocks around it, up to the loop body), the first statement that binds
the name decides: when it is ``name = value`` alone on its line, that binding is the only
one that reaches the read; any other binding statement (an unpacking, ``+=``, a compound
statement binding it somewhere inside) leaves it unknown, and so does reaching the top of
the loop body (the value may come from the last iteration), or leaving a nested loop, a
``try`` or a ``match`` that binds the name anywhere.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import target_leaves
from ...analysis.walk import child_nodes

Path = Tuple[cst.CSTNode, ...]
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_BLOCKS = (cst.IndentedBlock, cst.SimpleStatementSuite)


def reaching_binding(loop: cst.CSTNode, path: Path, name: str) -> Optional[Tuple[cst.BaseExpression, Path]]:
    """``(value, path)`` of the one ``name = value`` statement that reaches the statement
    ``path`` leads to (``path``: its ancestors from the module, running through ``loop``;
    the returned path ends with the binding's statement line), or None when it is not
    that simple."""
    start = next((i for i, node in enumerate(path) if node is loop), None)
    if start is None:
        return None
    for k in range(len(path) - 2, start, -1):
        block, statement = path[k], path[k + 1]
        if type(statement) in (cst.For, cst.While, cst.Try, cst.TryStar, cst.Match) and k + 2 < len(path):
            if binds(statement, name):
                return None  # left a nested loop (or try/match) that binds it: carried or partial
        if type(statement) is cst.With and any(
            item.asname is not None and _binds_target(item.asname.name, name) for item in statement.items
        ):
            return None
        if type(block) is cst.SimpleStatementLine:
            if any(binds(s, name) for s in _before(block.body, statement)):
                return None
            continue
        if not isinstance(block, _BLOCKS):
            continue
        for earlier in reversed(_before(block.body, statement)):
            if not binds(earlier, name):
                continue
            if type(earlier) is cst.SimpleStatementLine and len(earlier.body) == 1:
                small = earlier.body[0]
                if type(small) is cst.Assign and len(small.targets) == 1:
                    target = small.targets[0].target
                    if type(target) is cst.Name and target.value == name:
                        return small.value, path[: k + 1] + (earlier,)
            return None
    return None


def method_of(value: cst.BaseExpression, name: str) -> bool:
    """``name.mean()``: a value computed from the name itself, which defers to the name's
    earlier binding (as ``name + aux`` does, ``loss_parts.on_itself``)."""
    func = value.func if type(value) is cst.Call else None
    return type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == name


def _before(body: Sequence[cst.CSTNode], statement: cst.CSTNode) -> List[cst.CSTNode]:
    for index, node in enumerate(body):
        if node is statement:
            return list(body[:index])
    return []


def binds(root: cst.CSTNode, name: str) -> bool:
    """Some statement under ``root`` (nested scopes left out) binds ``name``."""
    stack: List[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _SCOPES:
            if kind is not cst.Lambda and node.name.value == name:  # type: ignore[attr-defined]
                return True  # a nested def or class of that name (a lambda has none)
            continue
        if kind is cst.Assign and any(_binds_target(t.target, name) for t in node.targets):  # type: ignore[attr-defined]
            return True
        if kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr) and _binds_target(node.target, name):  # type: ignore[attr-defined]
            return True
        if kind is cst.AsName and _binds_target(node.name, name):  # type: ignore[attr-defined]
            return True
        if kind in (cst.Global, cst.Nonlocal, cst.Del) and name in _names_under(node):
            return True
        if kind is cst.CompFor:
            continue  # a comprehension's own scope
        stack.extend(child_nodes(node))
    return False


def _binds_target(target: cst.CSTNode, name: str) -> bool:
    if not isinstance(target, cst.BaseExpression):
        return False
    return any(type(leaf) is cst.Name and leaf.value == name for leaf, _ in target_leaves(target))


def _names_under(node: cst.CSTNode) -> List[str]:
    found: List[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            found.append(current.value)  # type: ignore[attr-defined]
        stack.extend(child_nodes(current))
    return found


def runs_after_in_block(binding_path: Path, later_path: Path) -> bool:
    """The statement ``later_path`` leads into stands after the binding statement (the
    last node of ``binding_path``) in the binding's own block, or inside a statement that
    does: whenever it runs in an iteration, the binding ran before it."""
    if len(binding_path) < 2:
        return False
    block, statement = binding_path[-2], binding_path[-1]
    for i, node in enumerate(later_path[:-1]):
        if node is block:
            after = later_path[i + 1]
            body = [id(n) for n in block.body]  # type: ignore[attr-defined]
            if id(statement) in body and id(after) in body:
                return body.index(id(after)) > body.index(id(statement))
            return False
    return False
