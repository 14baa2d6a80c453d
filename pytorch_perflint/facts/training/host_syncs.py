"""Device-to-host syncs in a step loop (TPF202): which calls wait for the device."""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from ...analysis.values import literal_value
from .classifiers import call_receiver, method_name

_SYNC_METHODS = frozenset({"item", "cpu", "tolist"})


# ---------------------------------------------------------------------------------------
# Device-to-host syncs (TPF202)
# ---------------------------------------------------------------------------------------
def is_sync_call(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``t.item()``, ``t.cpu()``, ``t.tolist()``, ``t.numpy(force=True)``, ``t.to("cpu")``,
    ``torch.cuda.synchronize()``: calls that wait for the device.

    ``t.numpy()`` alone is not one: it only works on CPU tensors, so any wait happened at the
    ``.cpu()`` before it. Calls on a receiver that already synced (``.cpu().tolist()``) are
    not counted twice.
    """
    name = method_name(call)
    if name is None:
        return False
    receiver = call_receiver(call)
    if name in _SYNC_METHODS:
        if call.args or _chain_synced(receiver) or _on_host(receiver, qualname):
            return False
        return True
    if name == "numpy":
        return any(a.keyword is not None and a.keyword.value == "force" and literal_value(a.value) is True for a in call.args)
    if name == "to":
        return (
            len(call.args) == 1
            and call.args[0].keyword is None
            and literal_value(call.args[0].value) == "cpu"
            and not _chain_synced(receiver)
        )
    if name == "synchronize":
        return qualname(call.func) == "torch.cuda.synchronize"
    return False


_HOST_FACTORIES = frozenset(
    f"torch.{n}" for n in ("randperm", "arange", "randint", "rand", "randn", "zeros", "ones", "tensor", "empty", "full", "linspace")
)


def _on_host(expr: Optional[cst.BaseExpression], qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """Whether a method chain starts at a value known to live on the host: a NumPy call,
    or a torch factory without ``device=`` (``torch.randperm(n).tolist()``)."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, (cst.Name, cst.Attribute)):
                name = qualname(expr.func) or ""
                if name.startswith("numpy."):
                    return True
                if name in _HOST_FACTORIES:
                    return not any(a.keyword is not None and a.keyword.value == "device" for a in expr.args)
            expr = expr.func
        else:
            expr = expr.value
    return False


def _chain_synced(expr: Optional[cst.BaseExpression]) -> bool:
    """Whether a method chain already went through ``.cpu()``/``.item()``/``.to("cpu")``."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            name = method_name(expr)
            if name in ("cpu", "item", "tolist", "numpy"):
                return True
            if name == "to" and expr.args and literal_value(expr.args[0].value) == "cpu":
                return True
            expr = expr.func
        else:
            expr = expr.value
    return False
