"""The layers a function puts in a list it then wraps (``nn.Sequential(*layers)``,
``nn.Sequential(OrderedDict(layers))``, ``nn.ModuleList(blocks)``).

A builder like ``make_layers(cfg)`` fills a local list in a loop over a configuration
(``layers += [nn.Conv2d(...), nn.ReLU()]``, ``layers.append((name, conv))``): which
items end up there depends on the configuration, but the layers it can add are written
in the function. As a project class is convolutional when one of its methods builds a
convolution, the container is convolutional when one of the layers the function adds to
the list is. The list must be the function's own and only grow: bound only to list
displays, changed only by ``append``, ``extend``, ``insert`` and ``+=`` of displays, and
read only by the container (or ``len``); any other use (handed to a call, ``pop``,
``del``, an item write) may remove the convolution, and the items are not read.
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional, Tuple

from .forms import Form, Seq
from .scopes import Scope, expression_form

_ADDS = frozenset(("append", "extend", "insert"))
_MAX_ITEMS = 64


def added_layers(scope: Optional[Scope], name: str) -> Optional[List[Tuple[Form, int]]]:
    """The forms of the items function ``scope`` adds to its list ``name``, each with the
    line that adds it (a pair ``(key, layer)`` gives its layer); None when the list is not
    the function's own growing list."""
    if scope is None or scope.module or scope.node is None or name in scope.params:
        return None
    entries = scope.entries.get(name, ())
    if not entries or not all(_display(e.form) or _grows(e.form, name) for e in entries):
        return None
    out: List[Tuple[Form, int]] = []
    for node in ast.walk(scope.node):
        if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef) and node is not scope.node:
            if any(type(n) is ast.Name and n.id == name for n in ast.walk(node)):
                return None  # read or changed by a nested function
            continue
        if type(node) is ast.Assign or type(node) is ast.AugAssign:
            value = node.value
            targets = node.targets if type(node) is ast.Assign else [node.target]
            if any(type(t) is ast.Name and t.id == name for t in targets) and type(value) in (ast.List, ast.Tuple):
                out.extend((_layer(e, scope), e.lineno) for e in value.elts if type(e) is not ast.Starred)
    uses = _uses(scope.node, name)
    if uses is None:
        return None
    for call in uses:
        items = call.args[-1:] if call.func.attr != "extend" else (call.args[0].elts if type(call.args[0]) in (ast.List, ast.Tuple) else None)  # type: ignore[attr-defined]
        if items is None:
            return None
        out.extend((_layer(e, scope), e.lineno) for e in items if type(e) is not ast.Starred)
    return out[:_MAX_ITEMS]


def _display(form: object) -> bool:
    return type(form) is Seq and form.kind == "list" and not form.truncated  # type: ignore[union-attr]


def _grows(form: object, name: str) -> bool:
    """``name += [...]``, recorded as ``BinOp("Add=", Ref(name), [...])``."""
    return getattr(form, "op", None) == "Add=" and getattr(getattr(form, "left", None), "name", None) == name and _display(getattr(form, "right", None))


def _layer(node: ast.expr, scope: Scope) -> Form:
    """An item, or the layer of a ``(key, layer)`` pair."""
    if type(node) is ast.Tuple and len(node.elts) == 2:
        node = node.elts[1]
    return expression_form(node, scope)


def _uses(function: ast.AST, name: str) -> Optional[List[ast.Call]]:
    """The ``name.append/extend/insert(...)`` calls of the function; None when the list is
    used otherwise than by them, ``+=``, a binding, ``len``, a ``*`` argument or a call's
    sole argument (the container and ``OrderedDict``)."""
    parents = {id(child): node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    out: List[ast.Call] = []
    for node in ast.walk(function):
        if type(node) is not ast.Name or node.id != name or type(node.ctx) is ast.Store:
            continue
        parent = parents.get(id(node))
        if type(parent) is ast.AugAssign and parent.target is node:
            continue
        if type(parent) is ast.Starred:
            continue
        if type(parent) is ast.Call and len(parent.args) == 1 and not parent.keywords and parent.args[0] is node:
            if type(parent.func) is ast.Name and parent.func.id in ("len", "OrderedDict", "Sequential", "ModuleList"):
                continue
            if type(parent.func) is ast.Attribute and parent.func.attr in ("OrderedDict", "Sequential", "ModuleList"):
                continue
            return None
        if type(parent) is ast.Attribute and parent.attr in _ADDS:
            call = parents.get(id(parent))
            if type(call) is ast.Call and call.func is parent and call.args and not call.keywords and type(call.args[-1]) is not ast.Starred:
                out.append(call)
                continue
        return None
    return out


def any_conv(items: List[Tuple[Form, int]], evaluate: Callable[[Form, int], bool]) -> bool:
    """Whether one of the items added is a convolutional module."""
    return any(evaluate(form, line) for form, line in items)
