"""Could a loop of this module train? ``training_facts``' training loops, over-approximated
on the ``ast`` tree with the project, before LibCST parses the file (a project screen of
the rules whose every finding needs one: TPF205, and TPF403 unless the model is handed to
a trainer object).

``loops.training_facts`` calls a loop a training loop when, in its own frame, it calls
backward (``x.backward()``, ``x.manual_backward()``, ``backward(...)``) or a ``.step()``,
calls a function of this module (``f(...)``, ``self.f(...)``) that does so itself or
through the functions and project code it calls, or calls project code that trains
(``call_values.dispatch`` without objects, every target's ``training_reach`` known). Here,
each loop's whole subtree (nested functions included) and the whole body of every function
of the module with the name of a function it calls (any receiver) stand in for those frames
and keys: more calls than the walk counts, never fewer. The project calls are dispatched
as ``training_facts`` dispatches them, through the engine's memos, which the rules' own
questions then find answered when the file passes.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ...analysis.ast_index import ast_children, per_tree
from ...project.call_values import is_optimizer_name, may_run_project_code, training_reach
from ...project.forms import dotted
from ...project.trainers import project_trains
from ...project.tree_wheres import TreeWheres
from ...project.values import ValueEngine
from .classifiers import BACKWARD_ATTRS

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DISPATCHED = (ast.Name, ast.Attribute, ast.Subscript)  # ``on_project_call``'s callees

Chained = Tuple[ast.AST, List[ast.AST]]  # a node and its ancestors from the tree down


def loops_may_train(engine: ValueEngine, path: str, tree: ast.Module) -> bool:
    """Some loop of the module (``tree``, at ``path``) may be a training loop of
    ``training_facts`` (see the module's docstring): False only when none can be. Asked
    once per file (TPF205 and TPF403 both ask)."""
    answers = _answers(tree)
    key = (path, id(engine))
    if key not in answers:
        answers[key] = _may_train(engine, path, tree)
    return answers[key]


def frames_may_train(engine: ValueEngine, path: str, tree: ast.Module, frames: List[Chained]) -> bool:
    """Some of ``frames`` (functions of ``tree``, each with its ancestors) may train as
    ``training_facts`` sees a function: the same walk as ``loops_may_train``, from them."""
    return _may_train(engine, path, tree, frames)


@per_tree
def _answers(tree: ast.Module) -> Dict[Tuple[str, int], bool]:
    return {}


def _may_train(engine: ValueEngine, path: str, tree: ast.Module, start: Optional[List[Chained]] = None) -> bool:
    """Some of ``start`` (the loops, or given frames) may train, as ``training_facts`` sees it."""
    loops, defs, optimizers = _loops_and_defs(tree)
    roots: List[Chained] = list(loops if start is None else start)
    reached: Set[int] = set()
    seen: Set[int] = set()
    calls: List[Chained] = []
    at = 0
    while at < len(roots):  # the loops, then the functions their calls may run, by name
        root, chain = roots[at]
        at += 1
        for call, ancestors in _calls_under(root, chain):
            if id(call) in seen:
                continue
            seen.add(id(call))
            func = call.func
            kind = type(func)
            name = func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None  # type: ignore[attr-defined]
            if (kind is ast.Attribute and name in BACKWARD_ATTRS) or (kind is ast.Name and name == "backward"):
                return True  # ``is_backward_call``
            if kind is ast.Attribute and name == "step" and _may_step(call, func, optimizers):  # type: ignore[arg-type]
                return True
            for definition in defs.get(name, ()) if name is not None else ():
                if id(definition[0]) not in reached:
                    reached.add(id(definition[0]))
                    roots.append(definition)
            if _followed_by_name(call, kind, name, ancestors, defs):
                continue  # the walk follows it by name, never dispatches it
            spelled = dotted(func) if kind is not ast.Subscript else ""
            if kind in _DISPATCHED and spelled is not None and may_run_project_code(spelled, None):  # not a builtin
                calls.append((call, ancestors))
    if not calls or not project_trains(engine):
        return False  # no project function runs a step: none of these calls trains
    wheres = TreeWheres.of(path, tree, engine)
    known = _call_answers(tree).setdefault((path, id(engine)), {})  # shared by every start
    for call, ancestors in calls:
        trains = known.get(id(call))
        if trains is None:
            callees = wheres.callees(call, ancestors, objects=False)  # type: ignore[arg-type]
            trains = known[id(call)] = bool(callees) and all(training_reach(engine, d) is not None for d in callees)
        if trains:
            return True
    return False


@per_tree
def _call_answers(tree: ast.Module) -> Dict[Tuple[str, int], Dict[int, bool]]:
    """Whether each dispatched call of the tree runs project code that trains, per engine:
    the loops' walk and every step function's walk (``frames_may_train``, once per
    function TPF202's screen asks) meet the same calls again."""
    return {}


def _followed_by_name(call: ast.Call, kind: type, name: object, ancestors: List[ast.AST], defs: Dict[str, List[Chained]]) -> bool:
    """``callee_key`` names a function here (``training_facts`` then never dispatches the
    call): ``f(...)`` with a function ``f`` not directly in a class, or ``self.m(...)`` in
    a method (no class between) of a class that defines ``m``."""
    if not isinstance(name, str):
        return False
    if kind is ast.Name:
        return any(type(around[-1]) is not ast.ClassDef for _, around in defs.get(name, ()))
    receiver = call.func.value if kind is ast.Attribute else None  # type: ignore[attr-defined]
    if type(receiver) is not ast.Name or receiver.id not in ("self", "cls"):
        return False
    for at in range(len(ancestors) - 1, 0, -1):
        node = ancestors[at]
        if type(node) is ast.ClassDef:
            return False
        if isinstance(node, _DEFS):
            owner = ancestors[at - 1]
            return type(owner) is ast.ClassDef and any(isinstance(s, _DEFS) and s.name == name for s in owner.body)  # type: ignore[attr-defined]
    return False


def _may_step(call: ast.Call, func: ast.Attribute, optimizers: FrozenSet[str]) -> bool:
    """``is_optimizer_step`` of ``x.step(...)``, with every capitalised call's target for
    the names ``training_facts`` finds bound to a ``torch.optim`` constructor."""
    name = _last_name(func.value)
    if name is None:
        return False
    if dotted(func.value) in optimizers:
        return True
    if "scaler" in name.lower():
        return bool(call.args)
    return is_optimizer_name(name)


def _last_name(expr: ast.AST) -> Optional[str]:
    """``classifiers.last_name`` on ``ast``: ``a.b.c`` / ``a[0].c`` / ``c``."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else None


@per_tree
def _loops_and_defs(tree: ast.Module) -> Tuple[Tuple[Chained, ...], Dict[str, List[Chained]], FrozenSet[str]]:
    """Every ``for``/``while`` of the tree and every function by name, each with its
    ancestors (the tree first), and the dotted targets assigned a call of a capitalised
    name (``opt = torch.optim.SGD(...)``: ``training_facts``' optimizer names, and more)."""
    loops: List[Chained] = []
    defs: Dict[str, List[Chained]] = {}
    optimizers: Set[str] = set()
    todo: List[Chained] = [(child, [tree]) for child in reversed(tree.body)]
    while todo:
        node, chain = todo.pop()
        if isinstance(node, _LOOPS):
            loops.append((node, chain))
        elif isinstance(node, _DEFS):
            defs.setdefault(node.name, []).append((node, chain))
        elif type(node) is ast.Assign and type(node.value) is ast.Call and ((_last_name(node.value.func) or "")[:1].isupper() or _from_parameters(node.value)):
            optimizers.update(filter(None, map(dotted, node.targets)))
        children = ast_children(node)
        if children:
            inner = [*chain, node]
            todo.extend((child, inner) for child in reversed(children))
    return tuple(loops), defs, frozenset(optimizers)


def _calls_under(root: ast.AST, chain: List[ast.AST]) -> List[Tuple[ast.Call, List[ast.AST]]]:
    """The calls in ``root``'s subtree (``root`` included), each with its ancestors."""
    out: List[Tuple[ast.Call, List[ast.AST]]] = []
    todo: List[Chained] = [(root, chain)]
    while todo:
        node, ancestors = todo.pop()
        if type(node) is ast.Call:
            out.append((node, ancestors))  # type: ignore[arg-type]
        children = ast_children(node)
        if children:
            inner = [*ancestors, node]
            todo.extend((child, inner) for child in children)
    return out


def _from_parameters(call: ast.Call) -> bool:
    """``optimtype(model.parameters(), lr=lr)``, or a list built from them:
    ``classifiers.builds_from_parameters``."""
    return bool(call.args) and _parameters_form(call.args[0], 0)


def _parameters_form(value: ast.AST, depth: int) -> bool:
    """``classifiers._parameters_form`` on ``ast``."""
    if depth > 3:
        return False
    if type(value) is ast.Call:
        func = value.func  # type: ignore[attr-defined]
        args = value.args  # type: ignore[attr-defined]
        if type(func) is ast.Attribute:
            return not args and func.attr == "parameters"
        if type(func) is ast.Name and func.id in ("list", "filter") and 1 <= len(args) <= 2 and not value.keywords:  # type: ignore[attr-defined]
            return _parameters_form(args[-1], depth + 1)
        return False
    if type(value) in (ast.ListComp, ast.GeneratorExp):
        generators = value.generators  # type: ignore[attr-defined]
        return len(generators) == 1 and _parameters_form(generators[0].iter, depth + 1)
    if type(value) is ast.BinOp and type(value.op) is ast.Add:  # type: ignore[attr-defined]
        return _parameters_form(value.left, depth + 1) or _parameters_form(value.right, depth + 1)  # type: ignore[attr-defined]
    return False
