"""A fast walk over the nodes of a LibCST tree that can hold code.

``module.visit`` rebuilds every node and ``node.children`` runs a visitor per node; for a
fact that must look at a whole module, reading the dataclass fields directly and skipping
whitespace, commas and parentheses is several times faster.

In the per-node code of such walks, ``type(node) is cst.Call`` stands in for ``isinstance``:
LibCST's node classes are ABCs, whose ``isinstance`` runs Python code on every check (about
a second on the torch tree), and the concrete ones are final (a test checks every class
compared this way has no subclasses).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Sequence, Tuple

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    {"lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines", "lines_after_decorators",
     "equal", "colon", "dot", "operator", "newline", "trailing_whitespace", "asynchronous", "star_tok"}
)
_FIELDS: Dict[type, Tuple[str, ...]] = {}
# Nodes whose dataclass fields are not declared in source order: these come first, in order.
_SOURCE_ORDER: Dict[type, Tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
}


def child_nodes(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The child nodes of ``node`` that can hold code, in source order (tokens such as
    brackets, operators and whitespace are left out)."""
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _fields(node)
    children: List[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        value_kind = type(value)
        if value_kind is list or value_kind is tuple:
            for item in value:
                is_node = _NODE_TYPES.get(type(item))
                if is_node is None:
                    is_node = _is_node(type(item))
                if is_node:
                    children.append(item)
        else:
            is_node = _NODE_TYPES.get(value_kind)
            if is_node is None:
                is_node = _is_node(value_kind)
            if is_node:
                children.append(value)
    return children


def _fields(node: cst.CSTNode) -> Tuple[str, ...]:
    fields = [f.name for f in dataclasses.fields(node)]
    first = [name for name in _SOURCE_ORDER.get(type(node), ()) if name in fields]
    ordered = first + [name for name in fields if name not in first]
    names = tuple(name for name in ordered if name not in _SKIPPED_FIELDS and "whitespace" not in name)
    _FIELDS[type(node)] = names
    return names


_NODE_TYPES: Dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    """``issubclass(kind, CSTNode)``, cached: ABC subclass checks are slow."""
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and everything under it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(child_nodes(current)))


def name_uses(root: cst.CSTNode, name: str) -> Iterator[Tuple[cst.Name, Tuple[cst.CSTNode, ...]]]:
    """Every ``Name`` node spelling ``name`` under ``root``, with its ancestors (attribute
    names and keywords, which are not references, are left out)."""
    stack: List[Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if type(node) is cst.Name:
            if node.value == name:  # type: ignore[attr-defined]
                yield node, path  # type: ignore[misc]
            continue
        below = path + (node,)
        skip = node.attr if type(node) is cst.Attribute else node.keyword if type(node) is cst.Arg else None  # type: ignore[attr-defined]
        stack.extend((child, below) for child in child_nodes(node) if child is not skip)


def exclusive_branches(first: Sequence[cst.CSTNode], second: Sequence[cst.CSTNode]) -> bool:
    """Whether two nodes (given by their ancestors, outermost first) stand in different
    branches of one ``if``/``elif``/``else``, so that at most one of them runs."""
    for index, (a, b) in enumerate(zip(first, second)):
        if a is b:
            continue
        parent = first[index - 1] if index else None
        if not isinstance(parent, cst.If) or parent.orelse is None:
            return False
        branches = (parent.body, parent.orelse)
        return any(a is x for x in branches) and any(b is x for x in branches)
    return False


def own_returns(node: cst.CSTNode) -> Iterator[cst.Return]:
    """The ``return`` statements under ``node`` that return from its own function: not
    those of a nested function, class or lambda."""
    stack = [node]
    while stack:
        node = stack.pop()
        if type(node) is cst.Return:
            yield node
        if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            stack.extend(child_nodes(node))


_REPEATING = (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def reads_before(binding: Sequence[cst.CSTNode], use: Sequence[cst.CSTNode]) -> bool:
    """Whether a read (given by its ancestors from the scope's node, outermost first) runs
    before a binding statement (its ancestors from the same node, the statement line last)
    and so cannot see the value it binds: the read is in an earlier statement of a block the
    two share, with no loop around the binding to run it again. Anything else (the same line,
    a later statement, another branch, a nested function) may see it; the binding's own
    value (``x = wrap(x)``) is the caller's to leave out."""
    if any(type(node) in _REPEATING for node in binding[1:]):
        return False
    for index, (a, b) in enumerate(zip(binding, use)):
        if a is b:
            continue
        if any(type(node) in _REPEATING for node in use[index:]):
            return False
        block = getattr(binding[index - 1], "body", None) if index else None
        if not isinstance(block, (tuple, list)):
            return False
        order = {id(node): at for at, node in enumerate(block)}
        return id(b) in order and id(a) in order and order[id(b)] < order[id(a)]
    return False
