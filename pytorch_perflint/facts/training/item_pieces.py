"""Nested loops over pieces of a loop's item, and local names for methods (TPF206's
evaluation loops).

``for clip, label in loader:`` then ``for b in range(0, clip.shape[1], 5): feats.append(
model.encoder(clip[:, b:b + 5]))``, or ``parts = torch.split(clip, 8)`` and ``for part in
tqdm(parts):``: the nested loop walks chunks of the one item the outer loop is on, so
the model runs on every item of the outer loop (batched for memory). The item is what the
outer loop binds from its iterable, and what its body computes from it; an outer loop over
``range(...)`` has counters for items, and a nested loop over anything else (a loader, a
list of models) may evaluate a whole set per iteration, so neither counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.scope import target_leaves
from ...analysis.walk import child_nodes

_PASS_THROUGH = frozenset({"enumerate", "tqdm", "list", "reversed"})
_SPLITS = frozenset({"split", "chunk", "unbind", "tensor_split", "array_split"})
_SIZES = frozenset({"shape", "size", "len"})
# A function named for cutting its input into pieces: `split_input`, `chunk_rays`, `split_batch`.
_SPLIT_NAME = re.compile(r"^(?:split|chunk)_|_(?:split|chunks?)$")


@dataclass(frozen=True)
class Items:
    """The names that hold a loop's item or what its body computes from it (``names``),
    those its body binds to a split of one (``splits``: ``parts = torch.split(clip, 8)``),
    and those bound to a size of one or arithmetic on such a size (``sizes``: ``n =
    len(frames)``, ``steps = ceil(n / batch)``, ``bs, t, c, h, w = clip.shape``)."""

    names: FrozenSet[str] = frozenset()
    splits: FrozenSet[str] = frozenset()
    sizes: FrozenSet[str] = frozenset()


def item_names(loop: cst.CSTNode) -> Items:
    """What the loop's item is held in (statements of the loop's own body, in order; none
    for a ``while`` or a loop over ``range``)."""
    if type(loop) is not cst.For or _is_range(loop.iter):
        return Items()
    names: Set[str] = {n for n in _names_of(loop.target)}
    splits: Set[str] = set()
    sizes: Set[str] = set()
    for statement in _statements(loop.body):
        if type(statement) is cst.Assign:  # a count until rebound to anything else
            counted = [n for target in statement.targets for n in _names_of(target.target)]
            if _count(statement.value, frozenset(names), frozenset(sizes)):
                sizes.update(counted)
            else:
                sizes.difference_update(counted)
        if type(statement) is cst.Assign and _mentions(statement.value, names):
            bound = [n for target in statement.targets for n in _names_of(target.target)]
            # `pose[:, :3] = rotation(q)`: the item written into a container makes it the item's too
            bound += [t.target.value.value for t in statement.targets if type(t.target) is cst.Subscript and type(t.target.value) is cst.Name]
            names.update(bound)
            if len(bound) == 1 and _splits(statement.value, frozenset(names)):
                splits.update(bound)
    return Items(frozenset(names), frozenset(splits), frozenset(sizes))


def walks_pieces(nested: cst.For, items: Items) -> bool:
    """The nested loop walks pieces of the item: ``range(...)`` over a size of it
    (``clip.shape[1]``, ``clip.size(0)``, ``len(clip)``, a name bound to one), a split of it
    (``torch.split(clip, n)``, ``clip.chunk(4)``), or a name the loop body bound to a split."""
    if not items.names:
        return False
    iterable = nested.iter
    while type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value in _PASS_THROUGH and iterable.args:
        iterable = iterable.args[0].value
    if type(iterable) is cst.Name:
        return iterable.value in items.splits
    if type(iterable) is cst.Call and _is_range(iterable):
        return any(_sized(arg.value, items.names) or _mentions(arg.value, items.sizes) for arg in iterable.args)
    return _splits(iterable, items.names)


def _splits(expr: cst.BaseExpression, names: FrozenSet[str]) -> bool:
    """``torch.split(clip, n)``, ``clip.chunk(4)`` of one of ``names``; or a function named
    for splitting its first argument (``utils.split_input(sample, n)``, ``chunk_rays(rays)``)."""
    if type(expr) is not cst.Call or type(expr.func) not in (cst.Attribute, cst.Name):
        return False
    name = expr.func.attr.value if type(expr.func) is cst.Attribute else expr.func.value  # type: ignore[union-attr]
    if name not in _SPLITS:
        return _SPLIT_NAME.search(name) is not None and bool(expr.args) and not expr.args[0].star and _mentions(expr.args[0].value, names)
    return type(expr.func) is cst.Attribute and (_mentions(expr.func.value, names) or any(_mentions(arg.value, names) for arg in expr.args[:1]))  # type: ignore[union-attr]


def _count(expr: cst.BaseExpression, items: FrozenSet[str], sizes: FrozenSet[str]) -> bool:
    """A count taken from the item: a size of it (``clip.shape``, ``clip.shape[:2]``,
    ``clip.size(0)``, ``len(frames)``), a name bound to one, or arithmetic and rounding of
    such a count (``int(math.ceil(n / float(batch)))``, ``bs * t``)."""
    if type(expr) is cst.Name:
        return expr.value in sizes
    if type(expr) is cst.Attribute:
        return expr.attr.value == "shape" and _mentions(expr.value, items)
    if type(expr) is cst.Subscript:
        return _count(expr.value, items, sizes)
    if type(expr) is cst.BinaryOperation:
        return _count(expr.left, items, sizes) or _count(expr.right, items, sizes)
    if type(expr) is cst.Call and expr.args:
        func = expr.func
        name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if name == "size" and type(func) is cst.Attribute:
            return _mentions(func.value, items)
        if name == "len":
            return _mentions(expr.args[0].value, items)
        return name in _ROUNDING and any(_count(arg.value, items, sizes) for arg in expr.args)
    return False


_ROUNDING = frozenset({"int", "float", "ceil", "floor", "round", "min", "max", "abs"})


def _is_range(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "range"


def _sized(expr: cst.BaseExpression, items: FrozenSet[str]) -> bool:
    """``clip.shape[1]``, ``clip.size(0)``, ``len(clip)`` (inside arithmetic too)."""
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Attribute and node.attr.value in _SIZES and _mentions(node.value, items):
            return True
        if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "len" and node.args:
            if _mentions(node.args[0].value, items):
                return True
        stack.extend(child_nodes(node))
    return False


def _statements(block: cst.CSTNode) -> List[cst.CSTNode]:
    """The small statements of a block's own lines (not nested blocks), in order."""
    out: List[cst.CSTNode] = []
    for line in getattr(block, "body", ()):
        if type(line) is cst.SimpleStatementLine:
            out.extend(line.body)
    return out


def _names_of(target: cst.BaseExpression) -> List[str]:
    return [leaf.value for leaf, _ in target_leaves(target) if type(leaf) is cst.Name]


def _mentions(expr: cst.CSTNode, names: Set[str] | FrozenSet[str]) -> bool:
    stack: List[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name and node.value in names:
            return True
        if type(node) in (cst.Lambda,):
            continue
        stack.extend(child_nodes(node))
    return False


def method_aliases(ancestors: Sequence[cst.CSTNode], class_name: Optional[str]) -> Dict[str, FrozenSet[Tuple[Optional[str], str]]]:
    """In the method around the node (``ancestors``), the local names every binding of
    which is a method of ``self`` or a ``partial`` of one (``test = self.nonpad_test``;
    ``test = partial(self.pad_test, 8)``; either arm of a conditional expression): name ->
    the ``(class, method)`` keys it may call."""
    function = next((a for a in reversed(ancestors) if type(a) is cst.FunctionDef), None)
    if function is None or class_name is None:
        return {}
    found: Dict[str, Set[Tuple[Optional[str], str]]] = {}
    spoiled: Set[str] = set()
    stack: List[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        targets: List[cst.BaseExpression] = []
        value: Optional[cst.BaseExpression] = None
        if type(node) is cst.Assign:
            targets = [t.target for t in node.targets]
            value = node.value if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name else None
        elif type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr):
            targets = [node.target]  # type: ignore[attr-defined]
        elif type(node) is cst.AsName:
            targets = [node.name]  # type: ignore[attr-defined]
        for name in (n for t in targets if isinstance(t, cst.BaseExpression) for n in _names_of(t)):
            methods = _self_methods(value) if value is not None else None
            if methods is None:
                spoiled.add(name)
            else:
                found.setdefault(name, set()).update((class_name, method) for method in methods)
        stack.extend(child_nodes(node))
    return {name: frozenset(keys) for name, keys in found.items() if name not in spoiled}


def _self_methods(value: cst.BaseExpression) -> Optional[List[str]]:
    """The methods of ``self`` a value is: ``self.m``, ``partial(self.m, ...)``, or either
    arm of ``a if c else b`` (None when some part is anything else)."""
    if type(value) is cst.IfExp:
        body, orelse = _self_methods(value.body), _self_methods(value.orelse)
        return None if body is None or orelse is None else body + orelse
    method = _self_method(value)
    return None if method is None else [method]


def _self_method(value: cst.BaseExpression) -> Optional[str]:
    """``m`` for ``self.m`` or ``partial(self.m, ...)`` / ``functools.partial(self.m, ...)``."""
    if type(value) is cst.Call and value.args and value.args[0].keyword is None:
        func = value.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last != "partial":
            return None
        value = value.args[0].value
    if type(value) is cst.Attribute and type(value.value) is cst.Name and value.value.value == "self":
        return value.attr.value
    return None
