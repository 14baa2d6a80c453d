"""Implicit device-to-host syncs in a module's ``forward`` (``call_values.read_body`` asks):
``int(t)``, ``float(t)``, ``bool(t)`` and the truth value an ``if`` takes (``if n > k:``,
``if sum_fg[i] > num_fg:``) of a tensor the forward computed from its inputs.

A forward runs on the device its model was moved to: the tensors it computes from what it
is handed, through torch operations, live there. Which names hold such a tensor is read
from the body alone, and only through operations that certainly make one: a ``torch.*``
call (not a factory, which makes a host tensor unless told a device) or a tensor method
(``.sum()``, ``.max()``, ``.new(...)``, ``.int()``; not ``.item()``, ``.size()``...) of an
input, of an item of one (``input[1]``) or of such a tensor, and comparisons, arithmetic and
items of those (an input rebound in the body is still one: a torch operation on it makes a
tensor either way). An input itself is not taken for a tensor (``int(seq_len)`` of an integer
argument syncs nothing), and a forward that uses NumPy at all is not read (its values may
be arrays on the host). Names bound more than once count only when every binding is one.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set

from .forms import dotted, qualify
from .tensor_values import FACTORIES, LEGACY, RANDOM

# Tensor methods whose result is a tensor where the receiver is (an input may also be a
# dict, a list or a string: only methods a tensor has, and that keep it a tensor).
_TENSOR_METHODS = frozenset(
    "sum mean max min argmax argmin prod norm abs sqrt exp log float int long half double bool byte view "
    "reshape unsqueeze squeeze permute transpose contiguous clone detach new new_zeros new_ones new_full "
    "new_empty new_tensor fill_ zero_ eq ne gt lt ge le any all nonzero masked_select masked_fill index_select "
    "gather expand expand_as repeat type_as matmul mm bmm pow clamp sigmoid softmax log_softmax relu tanh "
    "flatten narrow cumsum sub add mul div".split()
)
_HOST_TORCH = FACTORIES | RANDOM | LEGACY | frozenset({"torch.from_numpy", "torch.as_tensor", "torch.Size", "torch.device", "torch.is_tensor", "torch.numel"})
_CONVERSIONS = frozenset({"int", "float", "bool"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def forward_tensors(node: ast.AST, aliases: Dict[str, str]) -> FrozenSet[str]:
    """The names a ``forward`` binds to tensors computed from its inputs (empty for any
    other function, or a forward that uses NumPy)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != "forward":
        return frozenset()
    arguments = node.args
    inputs = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)[1:]}
    if not inputs:
        return frozenset()
    bindings: Dict[str, List[Optional[ast.AST]]] = {}
    for child in _own_nodes(node):
        if isinstance(child, (ast.Call, ast.Attribute)) and (qualify(dotted(child.func if isinstance(child, ast.Call) else child) or "", aliases) or "").startswith("numpy."):
            return frozenset()
        if isinstance(child, ast.Assign):
            for target in child.targets:
                for name, value in _bound(target, child.value):
                    bindings.setdefault(name, []).append(value)
        elif isinstance(child, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
            for target in _targets(child):
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        bindings.setdefault(sub.id, []).append(None)  # not read: unknown
    tensors: Set[str] = set()
    sources = set(inputs)  # inputs (a torch operation on one makes a tensor), and names of their items
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name not in sources and name not in inputs and all(value is not None and _item_of(value, sources) for value in values):
                sources.add(name)
                changed = True
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name in tensors or name in inputs:
                continue
            if all(value is not None and _tensor(value, sources, tensors, aliases) for value in values):
                tensors.add(name)
                changed = True
    return frozenset(tensors)


def implicit_sync(node: ast.AST, tensors: FrozenSet[str], aliases: Dict[str, str]) -> bool:
    """``int(t)`` / ``float(t)`` / ``bool(t)`` of a forward's tensor (``node`` a call), or
    the truth of one in an ``if`` test (``node`` the test: its first operand, always
    evaluated, a tensor or a comparison of one)."""
    if not tensors:
        return False
    if isinstance(node, ast.Call):
        func = node.func
        return (
            isinstance(func, ast.Name) and func.id in _CONVERSIONS and len(node.args) == 1 and not node.keywords
            and _tensor(node.args[0], frozenset(), tensors, aliases)
        )
    while isinstance(node, (ast.BoolOp, ast.UnaryOp)):
        node = node.values[0] if isinstance(node, ast.BoolOp) else node.operand
    if isinstance(node, ast.Compare):
        return _tensor(node.left, frozenset(), tensors, aliases)
    return isinstance(node, ast.Name) and node.id in tensors


def _tensor(value: ast.AST, sources, tensors, aliases: Dict[str, str]) -> bool:
    """``value`` is a tensor computed on the device (see the module)."""
    if isinstance(value, ast.Name):
        return value.id in tensors
    if isinstance(value, ast.Subscript):
        return _tensor(value.value, sources, tensors, aliases)
    if isinstance(value, (ast.Compare, ast.BinOp)):
        operands = [value.left, *value.comparators] if isinstance(value, ast.Compare) else [value.left, value.right]
        return any(_tensor(o, sources, tensors, aliases) for o in operands)
    if isinstance(value, ast.UnaryOp) and not isinstance(value.op, ast.Not):
        return _tensor(value.operand, sources, tensors, aliases)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    spelled = dotted(func)
    name = qualify(spelled, aliases) if spelled is not None else None
    if name is not None and name.startswith("torch."):
        if name in _HOST_TORCH or any(k.arg in ("device", "out") for k in value.keywords):
            return False
        return any(_source(a, sources, tensors, aliases) for a in value.args[:1])
    if isinstance(func, ast.Attribute) and func.attr in _TENSOR_METHODS:
        return (name is None or not name.startswith(("numpy.", "math."))) and _source(func.value, sources, tensors, aliases)
    return False


def _source(value: ast.AST, sources, tensors, aliases: Dict[str, str]) -> bool:
    """An input (or an item of one), a comparison of one, or a computed tensor: what a
    torch operation on it gives is a tensor."""
    if isinstance(value, ast.Name):
        return value.id in sources or value.id in tensors
    if isinstance(value, ast.Subscript):
        return _source(value.value, sources, tensors, aliases)
    if isinstance(value, ast.Compare):
        return any(_source(o, sources, tensors, aliases) for o in (value.left, *value.comparators))
    return _tensor(value, sources, tensors, aliases)


def _item_of(value: ast.AST, sources) -> bool:
    """``input[1]``: an item of an input (or of an item of one)."""
    return isinstance(value, ast.Subscript) and (
        (isinstance(value.value, ast.Name) and value.value.id in sources) or _item_of(value.value, sources)
    )


def _bound(target: ast.AST, value: ast.AST):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                yield sub.id, None  # unpacked: not read
    # attribute and item writes bind no local name


def _targets(node: ast.AST) -> List[ast.AST]:
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    return [item.optional_vars for item in node.items if item.optional_vars is not None]  # type: ignore[attr-defined]


def _own_nodes(node: ast.AST):
    """The function's nodes, nested functions and classes left out."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if isinstance(child, _SCOPES):
            continue
        yield child
        todo.extend(ast.iter_child_nodes(child))
