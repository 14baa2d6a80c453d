"""The parts of a backpropagated loss that a same-module function returns beside it (TPF205).

``batch_loss, loc_loss, class_loss = loss_fn(...)`` then ``batch_loss.backward()``: when
``loss_fn`` (a module-level function, or the ``forward`` of the module-level ``nn.Module``
class the callee name is bound to) ends ``total = class_loss + loc_loss * w; return total,
loc_loss, class_loss``, the siblings are the terms the backpropagated loss was computed from,
so they belong to its graph and keep it alive when accumulated. Read from the function's
own code: one ``return`` of a tuple of names, the backpropagated element bound last before it
by arithmetic over the sibling, the sibling not rebound in between and never detached
(``.item()``, ``.detach()``, ``.data``, ``float(...)``...) in the function. Anything else is
not known, and unknown is silent.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ...context import FileContext
from ...project.loss_terms import sibling_term
from .loops import walk

_DETACHING = frozenset({"item", "detach", "detach_", "data", "cpu", "numpy", "tolist"})
_FLOATS = frozenset({"float", "int"})
_BUILTINS = frozenset({"float", "int", "len", "round", "bool", "sum", "max", "min", "abs", "str", "list", "tuple", "dict"})


ARITHMETIC_ASSIGN = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


def on_itself(value: cst.BaseExpression, name: str) -> bool:
    """``name = name + aux``, ``name = w * name``, ``name = name``: arithmetic on the name
    itself, which keeps whatever graph the name held."""
    if isinstance(value, cst.Name):
        return value.value == name
    return isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)) and name in _terms(value)


def part_of_backpropagated(
    context: FileContext, loop: cst.CSTNode, name: str, backpropagated: frozenset, path: Sequence[cst.CSTNode] = ()
) -> bool:
    """``name`` is unpacked, in ``loop``, beside a backpropagated element from a call of a
    same-module function that computes that element from the one ``name`` receives; or,
    through the value engine, of any project callable whose returned tuple has ``name``'s
    item among the terms of the backpropagated item (``project/loss_terms.py``)."""
    found = _unpackings(loop, name)
    if len(found) != 1:
        return False
    names, call = found[0]
    mine = names.index(name)
    function = _callee(context, call)
    if function is None:
        return _engine_part(context, call, names, mine, backpropagated, path)
    returned = _returned_names(function, len(names))
    if returned is None:
        return False
    for index, other in enumerate(names):
        if other in backpropagated and index != mine and _computed_from(function, returned[index], returned[mine]):
            return True
    return False


def _unpackings(loop: cst.CSTNode, name: str) -> List[Tuple[List[str], cst.Call]]:
    """``a, name, c = call(...)`` statements in the loop body (a flat tuple of names)."""
    found: List[Tuple[List[str], cst.Call]] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.value, cst.Call):
            names = _flat_names(node.targets[0].target)
            if names is not None and name in names:
                found.append((names, node.value))
        return True

    walk(loop.body, enter)  # type: ignore[attr-defined]
    return found


def _flat_names(target: cst.BaseExpression) -> Optional[List[str]]:
    """The names of a flat tuple of names (``_`` may repeat: it is never read)."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    names = [e.value.value for e in target.elements if isinstance(e, cst.Element) and isinstance(e.value, cst.Name)]
    named = [n for n in names if n != "_"]
    return names if len(names) == len(target.elements) and len(set(named)) == len(named) else None


def _engine_part(
    context: FileContext, call: cst.Call, names: List[str], mine: int, backpropagated: frozenset, path: Sequence[cst.CSTNode]
) -> bool:
    """The engine knows every project callable ``call`` may run returns a tuple whose item
    ``mine`` is a term of a backpropagated item."""
    values = context.values()
    if values is None or len(path) < 2:
        return False
    wanted = [i for i, other in enumerate(names) if other in backpropagated and i != mine and other != "_"]
    if not wanted:
        return False
    targets = values.callees(call, path[1])
    if not targets:
        return False
    return any(sibling_term(values.engine, targets, total, mine, len(names)) for total in wanted)


def summand_of_backpropagated(bindings: dict, own: set, name: str, value: cst.BaseExpression, backpropagated: frozenset) -> bool:
    """``name``, bound in the loop to a tensor computation (a call that is no conversion,
    or arithmetic on one: ``bpr = -torch.sum(F.logsigmoid(x))``), is a term of a name the
    loop backpropagates, in that name's one other binding (``loss = bpr + w * reg``) or in
    arithmetic on itself (``loss += bpr``)."""
    if not _computes(value):
        return False
    for total in backpropagated:
        if total == name:
            continue
        entries = bindings.get(total, [])
        others = [e for e in entries if id(e) not in own]
        if len(others) != 1 or others[0][0] is None:
            continue
        values = [others[0][0]] + [e[0] for e in entries if id(e) in own and e[0] is not None]  # `total += name` keeps `name`
        if any(name in _terms(v) for v in values):
            return True
    return False


def _computes(value: cst.BaseExpression) -> bool:
    """A tensor computed here: a call that does not convert (``.item()``, ``float()``), or
    arithmetic on one."""
    if isinstance(value, cst.UnaryOperation):
        return _computes(value.expression)
    if isinstance(value, cst.BinaryOperation):
        return (_computes(value.left) or _computes(value.right)) and not _detaches(value)
    if isinstance(value, cst.Call):
        return not _detaches(value) and not (isinstance(value.func, cst.Name) and value.func.value in _BUILTINS)
    return False


def _module_defs(context: FileContext, kind: type, name: str) -> List[cst.CSTNode]:
    return [s for s in context.module.body if isinstance(s, kind) and s.name.value == name]  # type: ignore[attr-defined]


def _callee(context: FileContext, call: cst.Call) -> Optional[cst.FunctionDef]:
    """The module-level function called by name, or the ``forward`` of the module-level
    class every module-level binding of the called name instantiates."""
    if not isinstance(call.func, cst.Name):
        return None
    name = call.func.value
    functions = _module_defs(context, cst.FunctionDef, name)
    if functions:
        return functions[0] if len(functions) == 1 else None  # type: ignore[return-value]
    values = context.module_scope.bindings.get(name, []) if name not in context.module_scope.imports else []
    classes = {v.func.value for v in values if isinstance(v, cst.Call) and isinstance(v.func, cst.Name)}
    if not values or len(classes) != 1 or len([v for v in values if isinstance(v, cst.Call)]) != len(values):
        return None
    klass = _module_defs(context, cst.ClassDef, next(iter(classes)))
    if len(klass) != 1:
        return None
    body = klass[0].body.body  # type: ignore[attr-defined]
    forward = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"]
    return forward[0] if len(forward) == 1 else None


def _events(function: cst.FunctionDef) -> List[Tuple[str, object]]:
    """("bind", (name, value or None)) and ("return", value) in source order (nested
    functions left out)."""
    events: List[Tuple[str, object]] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and node is not function:
            return False
        if type(node) is cst.Assign:
            for target in node.targets:
                direct = isinstance(target.target, cst.Name) and len(node.targets) == 1
                for bound in _all_names(target.target):
                    events.append(("bind", (bound, node.value if direct else None)))
        elif type(node) in (cst.AugAssign, cst.AnnAssign):
            for bound in _all_names(node.target):  # type: ignore[attr-defined]
                events.append(("bind", (bound, node.value)))  # type: ignore[attr-defined]
        elif type(node) in (cst.For, cst.AsName, cst.NamedExpr):
            target = node.name if type(node) is cst.AsName else node.target  # type: ignore[attr-defined]
            for bound in _all_names(target):
                events.append(("bind", (bound, None)))
        elif type(node) is cst.Return:
            events.append(("return", node.value))
        return True

    walk(function, enter)
    return events


def _all_names(target: cst.CSTNode) -> List[str]:
    found: List[str] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) is cst.Name:
            found.append(node.value)
        return type(node) not in (cst.Attribute, cst.Subscript)

    walk(target, enter)
    return found


def _returned_names(function: cst.FunctionDef, size: int) -> Optional[List[str]]:
    """The names of the function's one ``return a, b, c`` (of ``size`` names)."""
    returns = [value for kind, value in _events(function) if kind == "return"]
    if len(returns) != 1 or not isinstance(returns[0], cst.Tuple):
        return None
    names = _flat_names(returns[0])
    return names if names is not None and len(names) == size else None


def _computed_from(function: cst.FunctionDef, total: str, part: str) -> bool:
    """``total``'s last binding before the return is arithmetic with ``part`` as a term,
    ``part`` is not rebound after it, and no binding of ``part`` detaches it."""
    events = _events(function)
    last: Optional[int] = None
    for position, (kind, value) in enumerate(events):
        if kind == "bind" and value[0] == total:  # type: ignore[index]
            last = position
    if last is None:
        return False
    value = events[last][1][1]  # type: ignore[index]
    if not isinstance(value, cst.BinaryOperation) or part not in _terms(value):
        return False
    after = events[last + 1 :]
    if any(kind == "bind" and v[0] == part for kind, v in after):  # type: ignore[index]
        return False
    bindings = [v[1] for kind, v in events if kind == "bind" and v[0] == part]  # type: ignore[index]
    return bool(bindings) and not any(v is None or _detaches(v) for v in bindings)


def _terms(expr: cst.BaseExpression) -> Sequence[str]:
    """The names an arithmetic expression adds, subtracts, scales (``a + b * w``)."""
    if isinstance(expr, cst.BinaryOperation):
        return [*_terms(expr.left), *_terms(expr.right)]
    if isinstance(expr, cst.UnaryOperation):
        return _terms(expr.expression)
    return [expr.value] if isinstance(expr, cst.Name) else []


def _detaches(value: cst.BaseExpression) -> bool:
    found = {"yes": False}

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) is cst.Attribute and node.attr.value in _DETACHING:
            found["yes"] = True
        if type(node) is cst.Call and isinstance(node.func, cst.Name) and node.func.value in _FLOATS:
            found["yes"] = True
        return not found["yes"]

    walk(value, enter)
    return found["yes"]
