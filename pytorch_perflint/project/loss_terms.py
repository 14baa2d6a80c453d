"""Which items of a tuple a project function returns are terms of another item (TPF205).

``total, bpr, reg = model.bpr_loss(u, i, j)`` then ``total.backward()``: when the method
ends ``return bpr + reg, bpr, reg`` (or ``loss = bpr + self.decay * reg; return loss, bpr,
reg``), ``bpr`` and ``reg`` are the terms the backpropagated item was computed from, so they
belong to its graph and keep it alive when a loop accumulates them. The engine answers it
for any project callable a call may run (``call_values.dispatch``: functions, methods of an
object held anywhere, ``model(x)``'s ``forward``), read from the callee's ``ast`` body once
per index generation; a body whose one return is a call of another project callable
(``return self.create_loss(u, i, j, cor)``) gives that callee's answer.

Read from the function's own code: one ``return`` of a tuple; an item is a term of another
when its name occurs in that item's arithmetic (``+``, ``-``, ``*``, ``/``, unary minus),
directly or through names the function binds once by arithmetic (``cor_loss = w * cor``);
the term is a parameter or bound once by a value that does not detach it (``.item()``,
``.detach()``, ``.data``, ``float(...)``). Anything else is not known (None), and unknown
is silent.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from .bodies import memoised_body
from .call_values import dispatch
from .forms import FormBuilder
from .resolution import Definition
from .scopes import DEEP
from .values import ValueEngine, Where

MAX_DEPTH = 3
_DETACHING = frozenset({"item", "detach", "detach_", "data", "cpu", "numpy", "tolist"})
_CONVERTING = frozenset({"float", "int", "len", "round", "bool"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

# What a body says: ("terms", ((terms of item 0), (terms of item 1), ...)) or ("call", (ast.Call, aliases)).
Read = Tuple[str, object]


def returned_terms(engine: ValueEngine, definition: Definition, depth: int = 0) -> Optional[Tuple[FrozenSet[int], ...]]:
    """For each item of the tuple ``definition`` returns, the positions of the other items
    that are its terms; None when not known."""
    if depth > MAX_DEPTH:
        return None
    found = memoised_body(engine, definition, "loss_terms", lambda node, summary: _read(node, dict(summary.aliases)))
    if found is None:
        return None
    kind, value = found
    if kind == "terms":
        return value  # type: ignore[return-value]
    call, aliases = value  # type: ignore[misc]
    scope = engine.scope_of(definition)
    if scope is None:
        return None
    where = Where(definition.path, scope, call.lineno, Where(definition.path))
    targets = dispatch(engine, FormBuilder(aliases, DEEP).form(call.func), where)
    if not targets:
        return None
    answers = [returned_terms(engine, target, depth + 1) for target in targets]
    first = answers[0]
    return first if first is not None and all(a == first for a in answers) else None


def sibling_term(engine: ValueEngine, targets: Tuple[Definition, ...], total: int, part: int, size: int) -> bool:
    """Item ``part`` of what every target returns is a term of item ``total`` (a tuple of
    ``size`` items)."""
    if not targets:
        return False
    for target in targets:
        terms = returned_terms(engine, target)
        if terms is None or len(terms) != size or part not in terms[total]:
            return False
    return True


def _read(node: ast.AST, aliases: Dict[str, str]) -> Optional[Read]:
    returns: List[ast.Return] = []
    bindings: Dict[str, List[Optional[ast.AST]]] = {}
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, _SCOPES):
            continue
        if isinstance(child, ast.Return):
            returns.append(child)
        elif isinstance(child, ast.Assign):
            for target in child.targets:
                for name, direct in _names(target):
                    bindings.setdefault(name, []).append(child.value if direct and len(child.targets) == 1 else None)
        elif isinstance(child, (ast.AugAssign, ast.AnnAssign)):
            for name, _ in _names(child.target):
                bindings.setdefault(name, []).append(None)
        elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name, _ in _names(child.target):
                bindings.setdefault(name, []).append(None)
        elif isinstance(child, ast.NamedExpr):
            bindings.setdefault(child.target.id, []).append(None)
        elif isinstance(child, (ast.With, ast.AsyncWith)):
            for item in child.items:
                if item.optional_vars is not None:
                    for name, _ in _names(item.optional_vars):
                        bindings.setdefault(name, []).append(None)
        stack.extend(ast.iter_child_nodes(child))
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    if isinstance(value, ast.Call):
        return "call", (value, aliases)
    if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
        return None
    params = _parameters(node)
    items = value.elts
    terms: List[FrozenSet[int]] = []
    for position, item in enumerate(items):
        reached = _closure(item, bindings)
        mine: Set[int] = set()
        for other, sibling in enumerate(items):
            if other == position or not isinstance(sibling, ast.Name) or sibling.id not in reached:
                continue
            if _kept(sibling.id, bindings, params):
                mine.add(other)
        terms.append(frozenset(mine))
    return "terms", tuple(terms)


def _closure(expr: ast.AST, bindings: Dict[str, List[Optional[ast.AST]]], depth: int = 0) -> Set[str]:
    """The names ``expr``'s arithmetic reads, through names bound once by arithmetic."""
    found: Set[str] = set()
    for name in _arithmetic_names(expr):
        found.add(name)
        values = bindings.get(name, [])
        if depth < 4 and len(values) == 1 and isinstance(values[0], (ast.BinOp, ast.UnaryOp)):
            found |= _closure(values[0], bindings, depth + 1)
    return found


def _arithmetic_names(expr: ast.AST) -> List[str]:
    if isinstance(expr, ast.BinOp) and not isinstance(expr.op, (ast.MatMult, ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
        return [*_arithmetic_names(expr.left), *_arithmetic_names(expr.right)]
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        return _arithmetic_names(expr.operand)
    return [expr.id] if isinstance(expr, ast.Name) else []


def _kept(name: str, bindings: Dict[str, List[Optional[ast.AST]]], params: Set[str]) -> bool:
    """The term holds what it was given or computed: a parameter never rebound, or one
    binding by a value that does not detach it."""
    values = bindings.get(name)
    if not values:
        return name in params
    return len(values) == 1 and values[0] is not None and name not in params and not _detaches(values[0])


def _detaches(value: ast.AST) -> bool:
    if isinstance(value, ast.Constant):
        return True  # `reg = 0.0`: a number, not a tensor
    for node in ast.walk(value):
        if isinstance(node, ast.Attribute) and node.attr in _DETACHING:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERTING:
            return True
    return False


def _parameters(node: ast.AST) -> Set[str]:
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return set()
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _names(target: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id, True
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            for name, _ in _names(element.value if isinstance(element, ast.Starred) else element):
                yield name, False
