"""The returns of a function that one call can reach: a ``return`` under ``if flag:`` (or
``if not flag:``, or its ``else``), where ``flag`` is a parameter never rebound in the
function, is dead for a call that passes ``flag`` a literal making the test false (or
leaves a default that does); so is a ``return`` after an ``if flag:`` whose live arm ends in
``return`` or ``raise``. ``get_model(args, train=True)`` then gives the ``return model,
optimizer`` of its ``if train:`` arm, not the join with ``return model`` below it.

Only a literal ``True``/``False``/``None`` written in the call (or the default it leaves) is
read, nothing is evaluated: anything else leaves every return live.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Tuple

from .forms import Call, Lit
from .summary import FunctionSummary

if TYPE_CHECKING:
    from .scopes import Scope

Blocks = Tuple[Tuple[int, str], ...]


def live_returns(scope: "Scope", function: FunctionSummary, call: Call) -> Optional[FrozenSet[int]]:
    """The lines of the returns of ``scope`` (the function ``function``) that ``call`` can
    reach; None when every return is reachable."""
    if not scope.tests or call.star or call.dstar:
        return None
    arms = _known_arms(scope, lambda name: _literal_truth(function, call, name))
    if not arms:
        return None
    ifs = _if_nodes(scope.node, {key for key, _ in arms.items()})
    dead: List[int] = []
    for line, blocks, _ in scope.returns:
        if any(arms.get(key) not in (None, part) for key, part in blocks):
            dead.append(line)  # in the arm the call never takes
        elif any(_after_exit(scope, ifs[key], arm, line, blocks) for key, arm in arms.items() if key in ifs):
            dead.append(line)  # after an `if flag: ... return` the call takes
    return frozenset(line for line, _, _ in scope.returns if line not in dead) if dead else None


def _literal_truth(function: FunctionSummary, call: Call, name: str) -> Optional[bool]:
    """The truth of what ``call`` passes for parameter ``name``: a literal ``True``,
    ``False`` or ``None`` in the call, else its default when the call passes nothing."""
    params = function.params
    param = next((p for p in params if p.name == name), None)
    if param is None or param.kind in ("vararg", "kwarg"):
        return None
    value = call.keyword(name)
    if value is None and param.kind == "positional":
        positional = [p for p in params if p.kind == "positional"]
        position = positional.index(param)
        value = call.args[position] if position < len(call.args) else None
    if value is None:
        value = param.default
    if type(value) is Lit and (value.value is None or type(value.value) is bool):
        return bool(value.value)
    return None


def _known_arms(scope: "Scope", truth: Callable[[str], Optional[bool]]) -> Dict[int, str]:
    """The ``if`` statements whose test is a (negated) unrebound parameter the call decides:
    id -> the arm it takes (``"body"`` or ``"orelse"``)."""
    out: Dict[int, str] = {}
    for key, (line, test) in scope.tests.items():
        negated = False
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, not negated
        if not isinstance(test, ast.Name) or test.id not in scope.params or test.id in scope.entries:
            continue  # not a parameter, or one rebound somewhere in the function
        value = truth(test.id)
        if value is not None:
            out[key] = "body" if value != negated else "orelse"
    return out


def _if_nodes(node: Optional[ast.AST], keys: set) -> Dict[int, ast.If]:
    found: Dict[int, ast.If] = {}
    if node is None:
        return found
    for child in ast.walk(node):
        if isinstance(child, ast.If) and id(child) in keys:
            found[id(child)] = child
    return found


def _after_exit(scope: "Scope", node: ast.If, arm: str, line: int, blocks: Blocks) -> bool:
    """A return at ``line`` (in ``blocks``) comes after ``node`` in the block that holds it,
    and the arm the call takes always leaves the function (ends in ``return``/``raise``)."""
    taken = node.body if arm == "body" else node.orelse
    if not taken or not isinstance(taken[-1], (ast.Return, ast.Raise)):
        return False
    around = scope.blocks_at(node.lineno)
    return line > (node.end_lineno or node.lineno) and blocks[: len(around)] == around
