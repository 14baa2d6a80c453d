"""Arms of an ``if`` that never run: code under ``if flag:`` (or ``if not flag:``, an
``else``, either side of ``a if flag else b``) where ``flag`` is a parameter of the
function around it, never rebound there, whose value the engine knows from its callers
(every project caller passes the same literal, or none passes it and its default stands).
Such code builds no sampler and pairs no layers, so no rule reports anything it holds.

The value is the engine's answer for the parameter (``ParameterFlow``): a caller that
passes a variable, ``*args``/``**kwargs``, or a command-line option made to turn a feature
on leaves it unknown, and the arm is then taken to run.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..analysis.calls import MISSING, argument
from ..analysis.scope import comprehension_binds
from ..analysis.values import UNKNOWN, literal_value
from ..analysis.walk import child_nodes
from ..context import FileContext
from ..project.kinds import Flag, NoneValue

# A test that is a bare name or ``not`` a name: only such files are walked.
_NAME_TEST = re.compile(r"\bif\s+(?:not\s+)?[A-Za-z_]\w*\s*(?::|\belse\b)")
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def could_hold_dead_arms(source: str) -> bool:
    """Cheap text screen: some ``if`` tests a bare (or negated) name."""
    return _NAME_TEST.search(source) is not None


def dead_nodes(context: FileContext, nodes: Iterable[cst.CSTNode], known: Optional[Dict[int, Tuple[cst.CSTNode, ...]]] = None) -> Set[int]:
    """The ids of those of ``nodes`` that sit in an arm that never runs. ``known``: the
    path from the module down to some of them (each node last), kept by the rules' pass;
    the others are found by a walk of the module."""
    wanted = {id(n): n for n in nodes}
    if not wanted or not could_hold_dead_arms(context.source):
        return set()
    known = known or {}
    paths: Dict[int, Sequence[cst.CSTNode]] = {key: known[key] for key in wanted if key in known}
    if len(paths) < len(wanted):
        paths.update(_paths(context.module, {key: n for key, n in wanted.items() if key not in paths}))
    memo: Dict[int, bool] = {}
    return {key for key, path in paths.items() if in_dead_arm(context, path, memo)}


def in_dead_arm(context: FileContext, path: Sequence[cst.CSTNode], memo: Optional[Dict[int, bool]] = None) -> bool:
    """Whether the last node of ``path`` (the module down to it) is in an arm that never
    runs. ``memo``: answers per ``if`` and arm already asked."""
    memo = {} if memo is None else memo
    for i in range(len(path) - 1):
        node, child = path[i], path[i + 1]
        arm = _arm(node, child)
        if arm is None:
            continue
        key = id(child)
        if key not in memo:
            memo[key] = _never_runs(context, path[: i + 1], node.test, arm)
        if memo[key]:
            return True
    return False


def _never_runs(context: FileContext, path: Sequence[cst.CSTNode], test: cst.BaseExpression, arm: bool) -> bool:
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if not isinstance(test, cst.Name) or len(path) < 2:
        return False
    function = next((n for n in reversed(path) if isinstance(n, _SCOPES)), None)
    if not isinstance(function, cst.FunctionDef):
        return False
    if _unrebound_param(context, function, test, path) is None:
        return False
    kind = context.value_of(test, path[1])
    if type(kind) is Flag:
        truth = kind.value
    elif type(kind) is NoneValue:
        truth = False
    else:
        return False
    return (truth != negated) != arm


def _arm(node: cst.CSTNode, child: cst.CSTNode) -> Optional[bool]:
    """Which arm of ``node`` (an ``if`` or a conditional expression) ``child`` is: True the
    body, False the ``else``; None for the test, or another kind of node."""
    if type(node) not in (cst.If, cst.IfExp):
        return None
    return True if child is node.body else False if child is node.orelse else None  # type: ignore[attr-defined]


def _unrebound_param(context: FileContext, function: cst.FunctionDef, name: cst.Name, path: Sequence[cst.CSTNode]) -> Optional[cst.Param]:
    """The parameter of ``function`` that ``name`` (read under ``path``) is, when nothing in
    the function rebinds or changes it (a comprehension's own variable of that name is not
    it: ``[a if p else b for p in ps]``); else None."""
    scope = context.scope_for(name, path)
    bindings = scope.bindings.get(name.value)
    if scope.node is not function or bindings is None or len(bindings) != 1 or bindings[0] is not None:
        return None
    if name.value in scope.declared_outer or name.value in scope.mutated or comprehension_binds((*path, name), name.value):
        return None
    params = function.params
    return next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value == name.value), None)


def _paths(module: cst.Module, wanted: Dict[int, cst.CSTNode]) -> Dict[int, List[cst.CSTNode]]:
    """The path from the module down to each wanted node (one walk)."""
    found: Dict[int, List[cst.CSTNode]] = {}
    stack: List[cst.CSTNode] = []
    work: List[object] = [module]
    end = object()
    while work and len(found) < len(wanted):
        item = work.pop()
        if item is end:
            stack.pop()
            continue
        node = item  # type: cst.CSTNode  # type: ignore[assignment]
        stack.append(node)  # type: ignore[arg-type]
        if id(node) in wanted:
            found[id(node)] = list(stack)
        work.append(end)
        work.extend(reversed(child_nodes(node)))  # type: ignore[arg-type]
    return found


def dead_blocks(context: FileContext, statement: cst.BaseCompoundStatement) -> Set[int]:
    """The ids of the statement lists (``IndentedBlock.body``) of an ``if``/``elif``/``else``
    chain that never run: a layer list built in straight-line code skips them."""
    if type(statement) is not cst.If or not could_hold_dead_arms(context.source):
        return set()
    path = _paths(context.module, {id(statement): statement}).get(id(statement))
    if path is None:
        return set()
    dead: Set[int] = set()
    memo: Dict[int, bool] = {}
    node: object = statement
    while type(node) is cst.If:
        here = path + [node]  # type: ignore[list-item]
        if in_dead_arm(context, here + [node.body], memo):  # type: ignore[attr-defined]
            dead |= _lists(node.body)  # type: ignore[attr-defined]
        orelse = node.orelse  # type: ignore[attr-defined]
        if orelse is not None and in_dead_arm(context, here + [orelse], memo):
            dead |= _lists(orelse)
        path, node = here, orelse
    return dead


def _lists(arm: cst.CSTNode) -> Set[int]:
    """The ids of every statement list of an arm (an ``elif``'s own arms too)."""
    if isinstance(arm, cst.If):
        return _lists(arm.body) | (_lists(arm.orelse) if arm.orelse is not None else set())
    body = getattr(arm, "body", None)
    if isinstance(arm, cst.Else):
        return _lists(arm.body)
    return {id(body)} if isinstance(arm, cst.IndentedBlock) and body is not None else set()


def unreached_by(context: FileContext, function: cst.FunctionDef, call: cst.Call, path: Sequence[cst.CSTNode]) -> bool:
    """Whether ``call`` of ``function`` never reaches the last node of ``path`` (the module
    down to it, through ``function``): it sits in an arm of an ``if`` of ``function`` whose
    test reads a parameter, never rebound there, for which ``call`` passes a literal (or
    nothing: its literal default) that sends the run to the other arm (``mode == "test"``
    when the call passes ``"train"``; ``if flag:`` when it passes ``False``). Anything the
    call's text does not tell (a variable, ``*args``) leaves the arm reached."""
    start = next((i for i, node in enumerate(path) if node is function), None)
    if start is None or any(arg.star for arg in call.args):
        return False
    for i in range(start + 1, len(path) - 1):
        node, child = path[i], path[i + 1]
        if isinstance(node, _SCOPES):
            return False  # a nested function's arms run when it is called
        arm = _arm(node, child)
        if arm is not None:
            truth = _truth_for_call(context, function, call, node.test, path[: i + 1])  # type: ignore[attr-defined]
            if truth is not None and truth != arm:
                return True
    return False


_NOT_GIVEN = object()


def _truth_for_call(context: FileContext, function: cst.FunctionDef, call: cst.Call, test: cst.BaseExpression, path: Sequence[cst.CSTNode]) -> Optional[bool]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _truth_for_call(context, function, call, test.expression, path)
        return None if inner is None else not inner
    if isinstance(test, cst.Name):
        value = _passed(context, function, call, test, path)
        return None if value is _NOT_GIVEN else bool(value)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return None
        left, right = test.left, target.comparator
        if not isinstance(left, cst.Name):
            left, right = right, left
        other = literal_value(right)
        if not isinstance(left, cst.Name) or not _plain_literal(other):
            return None
        value = _passed(context, function, call, left, path)
        if value is _NOT_GIVEN:
            return None
        same = type(value) is type(other) and value == other
        return same if isinstance(target.operator, cst.Equal) else not same
    return None


def _plain_literal(value: object) -> bool:
    return value is None or type(value) in (bool, int, float, str)


def _passed(context: FileContext, function: cst.FunctionDef, call: cst.Call, name: cst.Name, path: Sequence[cst.CSTNode]) -> object:
    """The literal ``call`` gives parameter ``name`` of ``function`` (its default when it
    passes none), else ``_NOT_GIVEN``."""
    param = _unrebound_param(context, function, name, path)
    if param is None:
        return _NOT_GIVEN
    params = function.params
    positional = [*params.posonly_params, *params.params]
    index: Optional[int] = None
    if param in positional:
        index = positional.index(param) - (1 if isinstance(call.func, cst.Attribute) else 0)  # a bound method: self
        if index < 0:
            return _NOT_GIVEN
    passed = argument(call, name.value, index)
    if passed.value is not MISSING:
        value = passed.value
    else:
        value = literal_value(param.default) if param.default is not None else UNKNOWN
    return value if value is not UNKNOWN and _plain_literal(value) else _NOT_GIVEN
