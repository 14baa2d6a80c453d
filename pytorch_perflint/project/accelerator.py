"""RULES.md's "runs on an accelerator": which modules select a GPU-class device, and who
shares the fact.

A module *selects* an accelerator when its code (never a comment or a docstring: this reads
the ``ast``) does one of: ``x.cuda(...)``; passes ``"cuda…"``, ``"mps"`` or ``"xpu"`` as a
value (``device="cuda"``, ``torch.device("cuda:0")``, ``torch.device("cuda:{}".format(gpu))``, ``.to("mps")``, an argparse or config
default, ``set_default_device("cuda")``, ``autocast("cuda")``); calls
``torch.cuda.is_available()`` (or the mps/xpu ones), ``torch.cuda.synchronize()`` /
``set_device()`` / ``current_device()`` (they fail without a CUDA device), anything under
``torch.accelerator``,
``accelerate.Accelerator()``; passes ``non_blocking=``; uses ``torch.autocast`` /
``torch.amp`` / ``torch.cuda.amp`` other than for the CPU. A device string compared
against (``if device == "cuda"``) or listed among choices is not a selection.

Sharing (``sharing_modules``): an entry script and the project modules it imports share the
fact. So a module runs on an accelerator when some module whose imports reach it (itself
included) also reaches a module that selects one; a script that reaches none stays
CPU-only whatever the other scripts of the repository do.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple

from .forms import dotted, qualify
from .scan import lines_with, nodes_on_lines
from .summary import Evidence

NEEDLES = (
    "cuda", "'mps", '"mps', "'xpu", '"xpu', "is_available", "ccelerat", "non_blocking", "autocast",
    "GradScaler",
)  # fmt: skip
_DEVICE = re.compile(r"^(?:cuda|mps|xpu)(?::\d+)?$")
# An f-string device with its index filled in: f"cuda:{rank}".
_DEVICE_PREFIX = re.compile(r"^(?:cuda|xpu):$")
# A template of one: "cuda:{}".format(gpu), "cuda:%d" % rank.
_DEVICE_TEMPLATE = re.compile(r"^(?:cuda|xpu):(?:\{\w*\}|%[ds])$")
_AVAILABLE = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available", "torch.mps.is_available", "torch.xpu.is_available"}
)
_AMP = frozenset(
    {
        "torch.autocast", "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.autocast",
        "torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
    }
)  # fmt: skip
# Calls that fail without a CUDA device, so code that makes them unguarded runs on one
# (the old text search counted ``cuda.synchronize`` too).
_NEEDS_CUDA = frozenset({"torch.cuda.synchronize", "torch.cuda.set_device", "torch.cuda.current_device"})
_ACCELERATE = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# Parents through which a device string still is the value (``args.device or "cuda"``).
_TRANSPARENT = (ast.IfExp, ast.BoolOp)
# Parents under which it is not a selection: compared against, one of several choices, a key.
_NOT_A_VALUE = (ast.Compare, ast.List, ast.Tuple, ast.Set, ast.Subscript, ast.Expr, ast.JoinedStr, ast.FormattedValue)


def selects_accelerator(tree: ast.Module, text: str, aliases: Mapping[str, str]) -> Optional[Evidence]:
    """The first place where the module selects an accelerator, or None. ``text`` is the
    source from ``scan.line_text``; ``aliases`` its imports (local name -> dotted)."""
    lines = lines_with(text, NEEDLES)
    for node, ancestors in nodes_on_lines(tree, lines):
        what = _selection(node, ancestors, aliases)
        if what is not None:
            return Evidence(getattr(node, "lineno", 0), what)
    return None


def _selection(node: ast.AST, ancestors: Tuple[ast.AST, ...], aliases: Mapping[str, str]) -> Optional[str]:
    kind = type(node)
    if kind is ast.Call:
        return _call_selection(node, aliases)  # type: ignore[arg-type]
    if kind is ast.Constant and isinstance(node.value, str) and _DEVICE.match(node.value):  # type: ignore[attr-defined]
        if _is_value(node, ancestors):
            return repr(node.value)  # type: ignore[attr-defined]
        return None
    if kind is ast.Constant and isinstance(node.value, str) and _DEVICE_TEMPLATE.match(node.value):  # type: ignore[attr-defined]
        filled = _filled(node, ancestors)
        return repr(node.value) if filled is not None and _device_use(*filled) else None  # type: ignore[attr-defined]
    if kind is ast.JoinedStr and _DEVICE_PREFIX.match(_leading_text(node)) and _is_value(node, ancestors):
        return "f'cuda:{...}'"  # f"cuda:{rank}"
    if kind is ast.keyword and node.arg == "non_blocking":  # type: ignore[attr-defined]
        return "non_blocking="
    return None


def _filled(node: ast.AST, ancestors: Tuple[ast.AST, ...]) -> Optional[Tuple[ast.AST, Tuple[ast.AST, ...]]]:
    """The expression that fills a device template in (``"cuda:{}".format(i)``,
    ``"cuda:%d" % i``) with its ancestors, or None."""
    parent = ancestors[-1] if ancestors else None
    if type(parent) is ast.BinOp and type(parent.op) is ast.Mod and parent.left is node:
        return parent, ancestors[:-1]
    call = ancestors[-2] if len(ancestors) > 1 else None
    if type(parent) is ast.Attribute and parent.attr == "format" and type(call) is ast.Call and call.func is parent:
        return call, ancestors[:-2]
    return None


def _device_use(node: ast.AST, ancestors: Tuple[ast.AST, ...]) -> bool:
    """A filled-in template used as a device, not logged (``print("cuda:{}".format(i))``):
    passed to ``torch.device``, ``.to``, ``set_device``, as ``device=``/``map_location=``,
    or assigned to a name or attribute that says device."""
    child = node
    for parent in reversed(ancestors):
        if isinstance(parent, _TRANSPARENT) and not (isinstance(parent, ast.IfExp) and parent.test is child):
            child = parent
            continue
        if type(parent) is ast.Call:
            name = getattr(parent.func, "attr", None) or getattr(parent.func, "id", "")
            return any(a is child for a in parent.args) and name in ("device", "to", "set_device")
        if type(parent) is ast.keyword:
            return parent.arg in ("device", "map_location")
        if type(parent) in (ast.Assign, ast.AnnAssign):
            targets = parent.targets if type(parent) is ast.Assign else [parent.target]
            names = [getattr(t, "id", None) or getattr(t, "attr", "") for t in targets]
            return any("device" in n.lower() or n.lower() == "dev" for n in names)
        return False
    return False


def _leading_text(node: ast.AST) -> str:
    values = getattr(node, "values", ())
    first = values[0] if values else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""


def _call_selection(call: ast.Call, aliases: Mapping[str, str]) -> Optional[str]:
    func = call.func
    name = dotted(func)
    qualname = qualify(name, aliases) if name is not None else None
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and qualname != "torch.cuda":
        return ".cuda()"
    if qualname is None:
        return None
    if qualname in _AVAILABLE or qualname in _NEEDS_CUDA:
        return f"{qualname}()"
    if qualname.startswith("torch.accelerator."):
        return f"{qualname}()"
    if qualname in _ACCELERATE:
        return "accelerate.Accelerator()"
    if qualname in _AMP and not _for_cpu(call):
        return f"{qualname}()"
    return None


def _for_cpu(call: ast.Call) -> bool:
    """``autocast("cpu")`` / ``GradScaler(device="cpu")``: autocast on the host."""
    values = [k.value for k in call.keywords if k.arg in ("device_type", "device")]
    values += call.args[:1]
    return any(isinstance(v, ast.Constant) and v.value == "cpu" for v in values)


def _is_value(node: ast.AST, ancestors: Tuple[ast.AST, ...]) -> bool:
    """A device string used as a value (an argument, an assigned value, a default, a
    returned value), not compared against, listed, subscripted or left as a statement."""
    child = node
    for parent in reversed(ancestors):
        if isinstance(parent, _TRANSPARENT):
            if isinstance(parent, ast.IfExp) and parent.test is child:
                return False
            child = parent
            continue
        if isinstance(parent, _NOT_A_VALUE):
            return False
        if isinstance(parent, ast.Dict):
            return any(value is child for value in parent.values)
        return True
    return False


# ---------------------------------------------------------------------------------------
# Who shares the fact


def _closure(starts: Iterable[str], step: Callable[[str], Iterable[str]]) -> Set[str]:
    seen: Set[str] = set()
    stack = list(starts)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(step(node))
    return seen


def sharing_modules(selecting: Iterable[str], imports: Mapping[str, Iterable[str]]) -> FrozenSet[str]:
    """The modules that run on an accelerator, given the ones that select one and the
    import graph (module -> project modules it imports).

    Entry points that reach a selecting module through their imports (the selecting modules
    and every module that imports one, transitively) run on it, and so does everything they
    import (transitively). Cycles are fine: each module is visited once per pass.
    """
    importers: Dict[str, List[str]] = {}
    for module, targets in imports.items():
        for target in targets:
            importers.setdefault(target, []).append(module)
    entries = _closure(selecting, lambda m: importers.get(m, ()))
    return frozenset(_closure(entries, lambda m: imports.get(m, ())))
