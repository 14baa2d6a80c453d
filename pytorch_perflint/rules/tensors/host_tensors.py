"""Which expression makes a fresh tensor on the host that a ``.to()``/``.cuda()`` then moves
(TPF402), and what a fix may change.

A move's receiver is followed down through steps that keep a tensor where it is
(``.zero_()``, ``.fill_(0)``, ``.float()``, ``.view(...)``, ``.expand_as(x)``) and through
``Variable(...)`` to the factory at its root. When the root is a name, the factory may be
in an earlier statement of the same block (``z = torch.randn(n)`` ... ``z = z.cuda()``): it
counts only when no statement in between mentions the name and the move rebinds it, so the
host tensor is never seen by anything else and creating it on the device changes nothing
but where it lives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ...context import FileContext

FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor")
)
# On the GPU these draw from the GPU's generator: a seeded run gets other numbers.
RANDOM = frozenset(f"torch.{name}" for name in ("rand", "randn", "randint", "randperm", "normal"))
# Legacy typed constructors: always a host tensor (``torch.Tensor`` follows the default
# tensor type). They take no ``device="cuda"``, so their findings carry no fix.
LEGACY = frozenset(
    f"torch.{name}"
    for name in (
        "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor "
        "ShortTensor CharTensor ByteTensor BoolTensor"
    ).split()
)
VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Methods whose result lives where their receiver does: in-place fills, dtype casts, views.
KEEP_DEVICE = frozenset(
    "zero_ fill_ float double half long int bool byte short char bfloat16 view reshape unsqueeze "
    "squeeze expand expand_as contiguous repeat t transpose permute".split()
)
# In-place fills that draw random numbers (random on the device too, from its generator).
RANDOM_FILLS = frozenset({"normal_", "uniform_", "random_", "bernoulli_", "exponential_"})


@dataclass(frozen=True)
class HostTensor:
    """The factory call at the root of a move's receiver.

    ``factory``: the call (in ``statement`` when it was made in an earlier statement);
    ``name``: its qualified name; ``random``: it, or a fill on the way, draws random
    numbers; ``statement``: the earlier ``name = factory(...)`` line, or None when the
    factory is in the move's own expression; ``move_statement``: the line ``name = ...move``.
    """

    factory: cst.Call
    name: str
    random: bool
    statement: Optional[cst.SimpleStatementLine] = None
    move_statement: Optional[cst.SimpleStatementLine] = None
    between: Tuple[cst.BaseStatement, ...] = ()

    def device_readable_at_creation(self, target: cst.BaseExpression) -> bool:
        """Whether the move's target means the same at the creating statement: no name it
        reads is bound there or between (``mixed = ...`` before ``.to(mixed.device)``)."""
        read = {node.value for node in _names(target)}
        return not any(_binds_any(statement, read) for statement in (self.statement, *self.between) if statement)

    @property
    def legacy(self) -> bool:
        return self.name in LEGACY


def host_tensor(receiver: cst.BaseExpression, context: FileContext, move: cst.Call) -> Optional[HostTensor]:
    """The fresh host tensor ``move`` (a ``.to``/``.cuda`` call on ``receiver``) copies."""
    root, random = _strip(receiver, context)
    if root is None:
        return None
    if isinstance(root, cst.Call):
        found = _factory(root, context)
        return None if found is None else HostTensor(root, found, random or found in RANDOM)
    return _earlier(root, context, move, random)


def _strip(expr: cst.BaseExpression, context: FileContext) -> Tuple[Optional[cst.BaseExpression], bool]:
    """The root under device-keeping steps and ``Variable(...)``; whether a step is random."""
    random = False
    for _ in range(16):
        if not isinstance(expr, cst.Call) or any(arg.star for arg in expr.args):
            break
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in KEEP_DEVICE | RANDOM_FILLS:
            if context.qualname(func) is not None:
                break  # `torch.float(...)`-like module attribute, not a method
            random = random or func.attr.value in RANDOM_FILLS
            expr = func.value
            continue
        if context.qualname(func) in VARIABLES:
            if not expr.args or expr.args[0].keyword is not None:
                return None, random
            expr = expr.args[0].value
            continue
        break
    return (expr if isinstance(expr, (cst.Call, cst.Name)) else None), random


def _factory(call: cst.Call, context: FileContext) -> Optional[str]:
    """The factory's qualified name, when the call makes a fresh host tensor."""
    name = context.qualname(call.func)
    if name in LEGACY:
        positional = [arg for arg in call.args if arg.keyword is None]
        if not positional or len(positional) != len(call.args) or any(arg.star for arg in call.args):
            return None  # `torch.FloatTensor()` is empty; keywords: `device=`...
        if name == "torch.Tensor" and _default_changed(context):
            return None
        if len(positional) == 1 and _wraps_storage(positional[0].value, context):
            return None  # `torch.ByteTensor(storage)` wraps bytes already on the host
        return name
    if name in FACTORIES or name in RANDOM:
        return None if _default_changed(context) else name
    return None


def _wraps_storage(expr: cst.BaseExpression, context: FileContext) -> bool:
    """A storage (``torch.ByteStorage.from_buffer(b)``, or a name bound once to one): the
    constructor shares it, and no factory could make those bytes on the device."""
    if isinstance(expr, cst.Name):
        bound = context.lookup(expr.value)
        if bound is None:
            return False
        expr = bound
    return "Storage" in context.code_for(expr)


def _default_changed(context: FileContext) -> bool:
    """The file sets the default tensor type or device (the float factories may then make
    GPU tensors already): RULES.md's Not list."""
    return context.fact(_sets_default)


def _sets_default(context: FileContext) -> bool:
    source = context.source
    return "set_default_tensor_type" in source or "set_default_device" in source


def _earlier(name: cst.Name, context: FileContext, move: cst.Call, random: bool) -> Optional[HostTensor]:
    """``z = torch.randn(n)`` ... ``z = z<steps>.cuda()`` in one block, ``z`` unused between."""
    block, index = _statement(context)
    if block is None:
        return None
    statement = block[index]
    if _assigned(statement, name.value) is not move or _mentions(statement, name.value) != 2:
        return None  # the move must rebind the name and read it only as its root
    for position in range(index - 1, -1, -1):
        earlier = block[position]
        if not _mentions(earlier, name.value):
            continue
        value = _assigned(earlier, name.value)
        if not isinstance(value, cst.Call) or _mentions(earlier, name.value) != 1:
            return None
        root, fill_random = _strip(value, context)
        if not isinstance(root, cst.Call):
            return None
        found = _factory(root, context)
        if found is None:
            return None
        assert isinstance(earlier, cst.SimpleStatementLine) and isinstance(statement, cst.SimpleStatementLine)
        between = tuple(block[position + 1 : index])
        return HostTensor(root, found, random or fill_random or found in RANDOM, earlier, statement, between)
    return None


def _statement(context: FileContext) -> Tuple[Optional[Sequence[cst.BaseStatement]], int]:
    """The innermost block holding the current node's statement, and its position there."""
    ancestors = context.ancestors
    for position in range(len(ancestors) - 1, -1, -1):
        node = ancestors[position]
        if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return None, 0
        if isinstance(node, (cst.IndentedBlock, cst.Module)) and position + 1 < len(ancestors):
            body = tuple(node.body)
            for index, candidate in enumerate(body):
                if candidate is ancestors[position + 1]:
                    return body, index
            return None, 0
    return None, 0


def _assigned(statement: cst.BaseStatement, name: str) -> Optional[cst.BaseExpression]:
    """``value`` of a line that is exactly ``name = value``."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value == name:
            return small.value
    return None


def _mentions(node: cst.CSTNode, name: str) -> int:
    """How many times ``name`` appears as a name (not an attribute) in ``node``."""
    count = 0
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name) and current.value == name:
            count += 1
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        stack.extend(current.children)
    return count



def _names(node: cst.CSTNode) -> List[cst.Name]:
    """The plain names ``node`` reads (attribute names left out)."""
    out: List[cst.Name] = []
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            out.append(current)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(current.children)
    return out


def _binds_any(statement: cst.CSTNode, names: set) -> bool:
    """Whether the statement may bind one of ``names`` (any occurrence counts: a name that
    appears in a line between could be assigned there)."""
    return any(node.value in names for node in _names(statement))
