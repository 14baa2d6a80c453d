"""TPF401's last screen before LibCST: the rule's own question about each call the name
screens kept (``numpy_copy_candidates_without``): is the call's first argument a NumPy
array? The rule reports a call only when the value engine says so (``context.value_of``,
which maps the LibCST argument to its ``ast`` twin and asks the engine there), so asking
the engine the same question of the ``ast`` argument, with the same scopes
(``TreeWheres``), decides the file before LibCST parses it. On the torch package the name
screens keep calls such as ``torch.tensor(self.scale)`` in 13 files where the rule finds
nothing, and each such file was parsed and walked by LibCST to learn it.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Sequence

from ...analysis.ast_index import ast_children
from ...project.kinds import Array
from ...project.scopes import expression_form
from ...project.tree_wheres import TreeWheres
from ...project.values import ValueEngine


def _chains(tree: ast.Module, calls: Sequence[ast.Call]) -> Dict[int, List[ast.AST]]:
    """For each call (by id), its ancestors from the tree down: one walk, the path copied
    only at a wanted call."""
    wanted = {id(call) for call in calls}
    out: Dict[int, List[ast.AST]] = {}
    path: List[ast.AST] = []
    todo: List[object] = [tree]
    leave = object()
    while todo and len(out) < len(wanted):
        node = todo.pop()
        if node is leave:
            path.pop()
            continue
        assert isinstance(node, ast.AST)
        if id(node) in wanted:
            out[id(node)] = path.copy()
        children = ast_children(node)
        if children:
            path.append(node)
            todo.append(leave)
            todo.extend(reversed(children))
    return out


def some_argument_is_array(engine: ValueEngine, path: str, tree: ast.Module, calls: Sequence[ast.Call]) -> bool:
    """Whether the engine may take the first argument of one of ``calls`` (calls of
    ``tree``, the module at the absolute ``path``) for a NumPy array, asked as
    ``FileValues.answer`` asks it: read at the first line of the statement that holds it,
    in the scopes around it. A call whose place is not found keeps the file."""
    chains = _chains(tree, calls)
    wheres = TreeWheres.of(path, tree, engine)
    for call in calls:
        chain = chains.get(id(call))
        if chain is None or not call.args:
            return True
        expression = call.args[0]
        around = [*chain, call]
        line = next((n.lineno for n in reversed(around) if isinstance(n, ast.stmt)), expression.lineno)
        where = wheres.where([*around, expression], line)
        if where is None or where.scope is None:
            return True
        if type(engine.answer(expression_form(expression, where.scope), where).kind) is Array:
            return True
    return False
