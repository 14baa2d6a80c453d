"""Second-stage ``ast`` screen of TPF402 (a tensor created on the host, then moved): the
moves of a fresh factory call, or of a name a factory call was just assigned to."""

from __future__ import annotations

import ast
import bisect
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from ...analysis.ast_index import TreeIndex, ast_children, ast_dotted, per_tree, tree_index
from ...project.tensor_values import BLOCKERS, FACTORIES, KEEP_DEVICE, LEGACY, RANDOM, RANDOM_FILLS
from .device_targets import is_device_name, is_device_string
from .host_tensors import GPU_FLAG

# The last parts of the tensor producers' names (``project/tensor_values.py``) and of the
# steps a move's receiver is followed through to its factory.
_FACTORY_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in FACTORIES | RANDOM | LEGACY)
_STEPS = KEEP_DEVICE | RANDOM_FILLS
_MOVE_KEYWORDS = {
    "cuda": frozenset({"device", "non_blocking", "memory_format"}),
    "to": frozenset({"device", "dtype", "memory_format", "non_blocking", "copy"}),
}


# Attributes of tensors and modules that are never a device.
_NOT_DEVICES = frozenset({"data", "grad", "real", "imag", "T", "mT", "shape", "layout", "weight", "bias"})
# Values a name can be bound to that ``device_target`` never reads as a device.
_NEVER_DEVICES = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda)


def _assigned_names(index: TreeIndex) -> Set[str]:
    """Names assigned somewhere in the file to what could be a device: the analysis may
    look their value up (a call counts only when it could be ``torch.device(...)``)."""
    names: Set[str] = set()
    for node in index.assignments:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets = [node.target.id]
        else:
            continue
        value = node.value
        if isinstance(value, _NEVER_DEVICES):
            continue
        if isinstance(value, ast.Call) and not _device_call(value):
            continue
        names.update(targets)
    return names


def _could_be_device(node: ast.AST, bound: Callable[[], Set[str]]) -> bool:
    """Over-approximates ``device_targets.device_target(...)`` being a non-host device
    (``bound``: the names assigned what could be a device, worked out when first needed)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            return is_device_string(value, host=False)
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if isinstance(node, ast.Call):
        return _device_call(node)
    if isinstance(node, ast.Name):
        return node.id in bound() or is_device_name(node.id)
    if isinstance(node, ast.Attribute):  # a device held by an object (`cfg.GLOBAL.DEVICE`): the engine's to say
        root = ast_dotted(node).partition(".")[0]
        return node.attr not in _NOT_DEVICES and not node.attr.endswith("dtype") and root not in ("torch", "np", "numpy")
    return False


def _device_call(node: ast.Call) -> bool:
    """``torch.device(...)``, ``t.get_device()``, or a function named for the device it
    returns (``default_device()``: the engine reads what it returns)."""
    return "device" in ast_dotted(node.func).rsplit(".", 1)[-1].lower()


@per_tree  # the screen and the narrowing both ask
def create_then_move_candidates(tree: ast.Module) -> Tuple[ast.Call, ...]:
    """The moves of a tensor factory call without ``device=`` (or another blocker): its
    ``.cuda(...)``, or its ``.to(...)`` whose target could be a device (TPF402)."""
    found: List[ast.AST] = []
    separate: List[Tuple[ast.Call, str]] = []
    index = tree_index(tree)
    bound: List[Set[str]] = []

    def bound_names() -> Set[str]:
        if not bound:
            bound.append(_assigned_names(index))
        return bound[0]

    for node in index.calls:
        if not isinstance(node.func, ast.Attribute):
            continue
        move = node.func.attr
        if move not in _MOVE_KEYWORDS:
            continue
        factory = _strip(node.func.value)
        if isinstance(factory, ast.Name):
            if _passes_move(node, bound_names):
                separate.append((node, factory.id))
            continue
        if not isinstance(factory, ast.Call):
            continue
        if ast_dotted(factory.func).rsplit(".", 1)[-1] not in _FACTORY_NAMES:
            continue
        if any(k.arg is None or k.arg in BLOCKERS for k in factory.keywords):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None or k.arg not in _MOVE_KEYWORDS[move] for k in node.keywords
        ):
            continue
        if move == "cuda":
            found.append(node)
            continue
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if device is not None:
            if not node.args and not (isinstance(device, ast.Constant) and device.value is None):
                found.append(node)
            continue
        if node.args and _could_be_device(node.args[0], bound_names):
            found.append(node)
    if separate:
        found.extend(_separate_statements(tree, separate))
    found.extend(_returned_moves(index, bound_names))
    return tuple(found)


def _returned_moves(index: TreeIndex, bound: Callable[[], Set[str]]) -> List[ast.AST]:
    """The helpers whose body is only a returned move of a parameter (``def to_var(x):
    return Variable(x).cuda()``, or under a GPU flag: ``passed_tensors``' shapes): their
    callers may hand them a fresh factory tensor; the whole helper is what a finding reads."""
    out: List[ast.AST] = []
    for function in index.functions:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = function.body[1:] if function.body and _docstring(function.body[0]) else function.body
        params = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)} - {"self", "cls"}
        first = body[0] if body else None
        if len(body) == 1 and _returns_move(first, params, bound):
            out.append(function)
        elif isinstance(first, ast.If) and len(body) <= 2 and _gpu_test(first.test) and first.body and _returns_move(first.body[0], params, bound):
            out.append(function)
    return out


def _docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)


def _returns_move(statement: Optional[ast.stmt], params: Set[str], bound: Callable[[], Set[str]]) -> bool:
    """``return <move of a parameter>``."""
    if not isinstance(statement, ast.Return) or not isinstance(statement.value, ast.Call):
        return False
    call = statement.value
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in _MOVE_KEYWORDS or not _passes_move(call, bound):
        return False
    root = _strip(call.func.value)
    return isinstance(root, ast.Name) and root.id in params


def _gpu_test(test: ast.AST) -> bool:
    """``host_tensors._device_test`` on ``ast``, wider: a flag named for the GPU, ``.is_cuda``,
    ``torch.cuda.is_available()``."""
    if isinstance(test, ast.Call):
        test = test.func
    name = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else ""
    return name in ("is_cuda", "is_available") or GPU_FLAG.match(name) is not None


def _strip(node: ast.AST) -> ast.AST:
    """The root of a receiver under device-keeping steps and ``Variable(...)``."""
    for _ in range(16):
        if isinstance(node, ast.Subscript):  # `torch.eye(d)[None]` (the engine decides which indexes keep it)
            node = node.value
            continue
        if not isinstance(node, ast.Call):
            break
        if isinstance(node.func, ast.Attribute) and (node.func.attr in _STEPS or node.func.attr == "to"):
            node = node.func.value  # `.to(dtype)` too: the engine tells a cast from a move
        elif ast_dotted(node.func).rsplit(".", 1)[-1] == "Variable" and node.args:
            node = node.args[0]
        else:
            break
    return node


def _passes_move(node: ast.Call, bound: Callable[[], Set[str]]) -> bool:
    """A move of a name whose target could be a device (``.cuda()`` always could)."""
    if node.func.attr == "cuda":  # type: ignore[attr-defined]
        return True
    if any(k.arg == "device" for k in node.keywords):
        return True
    return bool(node.args) and _could_be_device(node.args[0], bound)


def _separate_statements(tree: ast.Module, moves: List[Tuple[ast.Call, str]]) -> List[ast.AST]:
    """For ``z = z.cuda()`` after ``z = torch.randn(n)`` in one block: the move, the
    creating statement and every statement between (so narrowing keeps any use of ``z``
    that makes the finding go away)."""
    wanted = {id(call): name for call, name in moves}
    lines = sorted(call.lineno for call, _ in moves)
    out: List[ast.AST] = []
    for node in _blocks_around(tree, lines):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for position, statement in enumerate(block):
                name = _moved_name(statement, wanted)
                if name is None and isinstance(statement, ast.If):  # `if x.is_cuda: z = z.cuda()`
                    name = next((n for n in (_moved_name(s, wanted) for s in statement.body) if n), None)
                if name is None:
                    continue
                start = position
                while start > 0 and (not _binds_name(block[start - 1], name) or _steps_on(block[start - 1], name)):
                    start -= 1  # past `z = z.view(-1)` steps too
                if start > 0 and _creates(block[start - 1]):
                    out.extend(block[start - 1 : position + 1])
    return out


def _moved_name(statement: ast.stmt, wanted: Dict[int, str]) -> Optional[str]:
    """The name ``z = z.cuda()`` (or ``z = z.cuda() if test else z``) moves and rebinds, or
    ``w = z.cuda()`` hands on (reported only when its function never reads ``z`` again:
    ``host_tensors``)."""
    if not isinstance(statement, ast.Assign):
        return None
    if len(statement.targets) == 1 and not isinstance(statement.value, ast.IfExp):
        name = wanted.get(id(statement.value))
        if name is not None and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement.targets[0])):
            return name
    value = statement.value.body if isinstance(statement.value, ast.IfExp) else statement.value
    name = wanted.get(id(value))
    return name if name is not None and _binds_name(statement, name) else None


def _blocks_around(tree: ast.Module, lines: List[int]) -> Iterator[ast.AST]:
    """The nodes that hold statements and span one of ``lines``, in ``walk_ast``'s order:
    expressions hold no statement, and a statement that spans none of the lines holds none
    of the assignments sought there (so the walk stays off most of the tree)."""
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast_children(node):
            if isinstance(child, ast.match_case):  # no position of its own
                stack.append(child)
            elif isinstance(child, (ast.stmt, ast.excepthandler)):
                at = bisect.bisect_left(lines, child.lineno)
                if at < len(lines) and lines[at] <= (child.end_lineno or child.lineno):
                    stack.append(child)


def _creates(statement: ast.stmt) -> bool:
    """``name = <factory>(...)``, possibly under steps and ``Variable(...)``."""
    if not isinstance(statement, ast.Assign):
        return False
    root = _strip(statement.value)
    return isinstance(root, ast.Call) and ast_dotted(root.func).rsplit(".", 1)[-1] in _FACTORY_NAMES


def _binds_name(statement: ast.stmt, name: str) -> bool:
    return isinstance(statement, ast.Assign) and any(
        isinstance(target, ast.Name) and target.id == name for target in statement.targets
    )


def _steps_on(statement: ast.stmt, name: str) -> bool:
    """``name = name.<steps>(...)``: a step on the way from the factory to the move."""
    if not isinstance(statement, ast.Assign):
        return False
    root = _strip(statement.value)
    return root is not statement.value and isinstance(root, ast.Name) and root.id == name
