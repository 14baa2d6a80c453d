"""Which fresh host tensor a ``.to()``/``.cuda()`` moves (TPF402), and where its factory is
written, for the fix.

What the receiver *is* (a tensor a torch factory made on the host, through steps that keep
it there: ``.zero_()``, ``.float()``, ``.view(...)``, ``Variable(...)``; and whether random
numbers were drawn on the way) is the value engine's answer (``context.value_of``, its
producers in ``project/tensor_values.py``). What stays here is statement structure, which
no value says: where the factory call is written (in the move's own expression, or in an
earlier ``z = torch.randn(n)`` line of the same block, so that the fix can pass it
``device=``), and that nothing else sees the host tensor between its creation and its move:
no statement in between mentions the name except ``z = z.<step>(...)`` lines that rebind
it, and the move rebinds it, so creating it on the device changes nothing but where it
lives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

import libcst as cst

from ...analysis.walk import child_nodes
from ...context import FileContext
from ...project import kinds
from ...project.tensor_values import FACTORIES, KEEP_DEVICE, LEGACY, RANDOM, RANDOM_FILLS, VARIABLES

_STEPS = KEEP_DEVICE | RANDOM_FILLS
# A flag whose name says the program runs on a GPU (`cuda`, `use_gpu`, `on_cuda`,
# `cuda_available`); not `no_cuda`, `cpu`, nor a flag named for anything else.
_GPU_FLAG = re.compile(r"^_*(?:use_|using_|on_|is_|has_|with_|enable_)?(?:cuda|gpu|gpus)(?:_available|_enabled)?$", re.IGNORECASE)
GPU_FLAG = _GPU_FLAG  # the move screens read flags the same way
_MADE_BY = FACTORIES | RANDOM | LEGACY


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
    # the move happens only where another tensor is on the GPU (`if x.is_cuda: z = z.cuda()`,
    # `z.cuda() if x.is_cuda else z`) or a GPU flag is on (`if args.cuda:`): `device=`
    # says it, but no fix is offered
    conditional: bool = False
    # the move's result goes to another target (`w = z.cuda()`, `self.L[i] = z.to(d)`) and
    # the function never reads the name again: the fix keeps that statement, moving nothing
    handed_on: bool = False

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
    root = _root(receiver, context)
    statements: Tuple = ()
    if isinstance(root, cst.Name):
        found = _earlier(root, context, move)  # statement structure first: it rules out most names
        if found is None:
            return None
        root, statements = found
    if not isinstance(root, cst.Call) or context.qualname(root.func) not in _MADE_BY:
        return None
    kind = context.value_of(receiver)
    if type(kind) is not kinds.HostTensor or kind.factory != context.qualname(root.func):
        return None
    if (kind.factory not in LEGACY or kind.factory == "torch.Tensor") and _default_changed(context):
        return None
    return HostTensor(root, kind.factory, kind.random, *statements)


def _root(expr: cst.BaseExpression, context: FileContext) -> Union[cst.Call, cst.Name, None]:
    """Where a receiver's chain starts, under device-keeping steps and ``Variable(...)``
    (what they do to the tensor is the engine's to say; this finds the factory's node)."""
    for _ in range(16):
        if isinstance(expr, cst.Subscript) and all(_basic(element.slice) for element in expr.slice):
            expr = expr.value  # `torch.eye(d)[None, :, :]`: a view
            continue
        if not isinstance(expr, cst.Call):
            break
        func = expr.func
        if isinstance(func, cst.Attribute) and (func.attr.value in _STEPS or func.attr.value == "to") and context.qualname(func) is None:
            # `.to(dtype)`: a cast the engine confirms (it names no device); `.to(device)` is
            # a move, and the engine's answer for it is no host tensor
            expr = func.value
        elif context.qualname(func) in VARIABLES and expr.args and expr.args[0].keyword is None:
            expr = expr.args[0].value
        else:
            break
    return expr if isinstance(expr, (cst.Call, cst.Name)) else None


def _basic(part: cst.BaseSlice) -> bool:
    """A slice, ``None``, ``...`` or an integer: basic indexing, a view of the tensor."""
    if isinstance(part, cst.Slice):
        return True
    value = part.value if isinstance(part, cst.Index) else None
    return isinstance(value, (cst.Integer, cst.Ellipsis)) or (isinstance(value, cst.Name) and value.value == "None")


def _default_changed(context: FileContext) -> bool:
    """The file sets the default tensor type or device (the float factories may then make
    GPU tensors already): RULES.md's Not list."""
    return context.fact(_sets_default)


def _sets_default(context: FileContext) -> bool:
    source = context.source
    return "set_default_tensor_type" in source or "set_default_device" in source


def _earlier(name: cst.Name, context: FileContext, move: cst.Call) -> Optional[Tuple[cst.BaseExpression, Tuple]]:
    """``z = torch.randn(n)`` ... ``z = z<steps>.cuda()`` in one block, ``z`` unused between
    but by ``z = z<steps>`` lines: the creating expression's root, and the statements."""
    block, index, owner = _statement(context)
    if block is None:
        return None
    statement = block[index]
    value = _assigned(statement, name.value)
    conditional = _moved_or_kept(value, move, name.value)
    handed_on = value is None and _handed_on(statement, move, name.value)
    if handed_on:
        pass  # `w = z.cuda()`: the move's value goes elsewhere, and `z` dies there
    elif (value is not move and not conditional) or _mentions(statement, name.value) != 2 + conditional:
        return None  # the move must rebind the name and read it only as its root
    outer = None if handed_on else _if_around(owner, context, block[:index], name.value)
    if outer is not None:  # `if x.is_cuda:` around the move, its only statement naming it
        block, index, owner = outer
        conditional = True
    for position in range(index - 1, -1, -1):
        earlier = block[position]
        mentions = _mentions(earlier, name.value)
        if not mentions:
            continue
        value = _assigned(earlier, name.value)
        root = None if value is None else _root(value, context)
        if mentions == 2 and isinstance(root, cst.Name) and root.value == name.value:
            continue  # `z = z.view(-1)`: a step on the way, the engine follows it
        if not isinstance(root, cst.Call) or mentions != 1 + _mentions(root, name.value):
            return None  # the name may be read only by the factory: `x = torch.tensor(x).view(1, -1)`
        assert isinstance(earlier, cst.SimpleStatementLine) and isinstance(statement, cst.SimpleStatementLine)
        if handed_on and not _dies_at_move(context, name.value, sum(_mentions(s, name.value) for s in block[position : index + 1])):
            return None  # `z` is read elsewhere in its function (or is not a function's local)
        return root, (earlier, statement, tuple(block[position + 1 : index]), conditional, handed_on)
    return None


def _handed_on(statement: cst.BaseStatement, move: cst.Call, name: str) -> bool:
    """``w = z<steps>.cuda()`` / ``self.L[i] = z.to(d)``: one plain assignment whose value is
    the move, naming ``z`` only as the move's root (not as its target)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    return isinstance(small, cst.Assign) and len(small.targets) == 1 and small.value is move and _mentions(statement, name) == 1


def _dies_at_move(context: FileContext, name: str, seen: int) -> bool:
    """Whether the function around the current node names ``name`` only in the ``seen``
    places of its creation, the steps on the way and the move: nothing reads the host tensor
    after the move (a later line, the next round of a loop, a closure), and no ``global`` or
    ``nonlocal`` makes it visible elsewhere."""
    for node in reversed(context.ancestors):
        if isinstance(node, (cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(node, cst.FunctionDef):
            return _mentions(node.body, name) == seen and not _mentions(node.params, name)
    return False  # a module's name: other modules and functions may read it


def _moved_or_kept(value: Optional[cst.BaseExpression], move: cst.Call, name: str) -> bool:
    """``z.cuda() if x.is_cuda else z``: a move on one path only, where another tensor is."""
    return (
        isinstance(value, cst.IfExp)
        and value.body is move
        and isinstance(value.orelse, cst.Name)
        and value.orelse.value == name
        and _device_test(value.test, name)
    )


def _device_test(test: cst.BaseExpression, name: str) -> bool:
    """``x.is_cuda`` of another tensor (the move puts the tensor where ``x`` is, so it can be
    made there: ``device=x.device``), or a flag that says the program runs on a GPU
    (``if args.cuda:``, ``if self.use_gpu:``, ``if torch.cuda.is_available():``): where the
    move runs, the tensor could have been made on the device. Any other test (a flag whose
    name says nothing of the device) leaves the move a choice the rule cannot see."""
    if _mentions(test, name):
        return False
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        return True
    if isinstance(test, cst.Call) and not test.args:  # `torch.cuda.is_available()`
        func = test.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "is_available"
            and isinstance(func.value, cst.Attribute)
            and func.value.attr.value == "cuda"
        )
    flag = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else None
    return flag is not None and _GPU_FLAG.match(flag) is not None


def _if_around(owner: Optional[int], context: FileContext, before: Sequence[cst.BaseStatement], name: str):
    """The block and position of a plain ``if x.is_cuda:`` (or ``if use_gpu:``) whose body holds the move
    (``owner``: its position among the ancestors), when nothing else of that ``if`` names
    ``name``: not an ``else``/``elif``, nor a statement before the move."""
    if owner is None or any(_mentions(statement, name) for statement in before):
        return None
    node = context.ancestors[owner]
    if not isinstance(context.ancestors[owner - 1], (cst.IndentedBlock, cst.Module)):
        return None  # an `elif`: the arms before it may name it
    if not isinstance(node, cst.If) or not _device_test(node.test, name) or (node.orelse is not None and _mentions(node.orelse, name)):
        return None
    found = _statement(context, owner)
    return found if found[0] is not None else None


def _statement(context: FileContext, below: Optional[int] = None) -> Tuple[Optional[Sequence[cst.BaseStatement]], int, Optional[int]]:
    """The innermost block holding the current node's statement (or the ancestor at
    ``below``), its position there, and the position among the ancestors of the compound
    statement that owns the block (None at module level)."""
    ancestors = context.ancestors
    for position in range((len(ancestors) if below is None else below) - 1, -1, -1):
        node = ancestors[position]
        if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return None, 0, None
        if isinstance(node, (cst.IndentedBlock, cst.Module)) and position + 1 < len(ancestors):
            body = tuple(node.body)
            for index, candidate in enumerate(body):
                if candidate is ancestors[position + 1]:
                    return body, index, (position - 1 if position > 0 else None)
            return None, 0, None
    return None, 0, None


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
    return sum(1 for found in _names(node) if found.value == name)


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
            stack.extend(child_nodes(current))
    return out


def _binds_any(statement: cst.CSTNode, names: set) -> bool:
    """Whether the statement may bind one of ``names`` (any occurrence counts: a name that
    appears in a line between could be assigned there)."""
    return any(node.value in names for node in _names(statement))
