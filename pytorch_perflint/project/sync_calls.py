"""Device-to-host syncs as ``ast`` shows them (``call_values`` reads a project function's
body with it; ``rules/training/host_syncs.is_sync_call`` is the LibCST twin)."""

from __future__ import annotations

import ast
from typing import Dict

from .forms import dotted, qualify

_HOST_FACTORIES = frozenset(
    f"torch.{n}" for n in ("randperm", "arange", "randint", "rand", "randn", "zeros", "ones", "tensor", "empty", "full", "linspace")
)


def is_sync(call: ast.Call, aliases: Dict[str, str]) -> bool:
    """``t.item()``, ``t.cpu()``, ``t.tolist()``, ``t.numpy(force=True)``, ``t.to("cpu")``,
    ``torch.cuda.synchronize()``; not on a chain that synced already or that starts on the host."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    name = func.attr
    if name in ("item", "cpu", "tolist"):
        return not call.args and not call.keywords and not _chain_synced(func.value) and not _on_host(func.value, aliases)
    if name == "numpy":
        return any(k.arg == "force" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)
    if name == "to":
        first = call.args[0] if len(call.args) == 1 and not call.keywords else None
        return isinstance(first, ast.Constant) and first.value == "cpu" and not _chain_synced(func.value)
    if name == "synchronize":
        spelled = dotted(func)
        return spelled is not None and qualify(spelled, aliases) == "torch.cuda.synchronize"
    return False


def _chain_synced(expr: ast.AST) -> bool:
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute):
                if func.attr in ("cpu", "item", "tolist", "numpy"):
                    return True
                if func.attr == "to" and expr.args and isinstance(expr.args[0], ast.Constant) and expr.args[0].value == "cpu":
                    return True
            expr = func
        else:
            expr = expr.value
    return False


def _on_host(expr: ast.AST, aliases: Dict[str, str]) -> bool:
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call):
            spelled = dotted(expr.func)
            name = (qualify(spelled, aliases) or "") if spelled is not None else ""
            if name.startswith("numpy."):
                return True
            if name in _HOST_FACTORIES:
                return not any(k.arg == "device" for k in expr.keywords)
            expr = expr.func
        else:
            expr = expr.value
    return False
