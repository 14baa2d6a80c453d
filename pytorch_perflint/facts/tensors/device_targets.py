"""Whether the argument of ``.to(...)`` / ``.cuda(...)`` is a device, and how surely.

``.to()`` takes a device, a dtype or another tensor in the same position, so a rule that
rewrites device moves must tell them apart precisely: ``.to(torch.float16)``, ``.to(x.dtype)``
and ``.to(other)`` are not device moves. Only spellings that certainly name a device count:
device strings, ``torch.device(...)``, ``x.device``, integer ordinals, and names whose
conventional meaning is a device (``device``, ``dev``, ``*_device``, ``local_rank``, ``gpu``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from ...analysis.values import UNKNOWN, literal_value
from ...context import FileContext
from ...project import kinds

_DEVICE_STRING = re.compile(r"^(?P<type>cuda|cpu|mps|xpu|hpu|npu|meta|xla|privateuseone)(?::\d+)?$")
# Device types that are the host itself: moving there from a fresh tensor is a no-op.
_HOST = frozenset({"cpu", "meta"})
_DEVICE_NAME = re.compile(
    r"^_*(?:device|dev|device_id|device_index|device_type|device_name|device_str|local_rank|rank|gpu|gpu_id|gpu_index)$"
    r"|^\w+_device$"
)
_DEVICE_CALLS = frozenset({"torch.device", "torch.cuda.current_device"})
_MAX_DEPTH = 4


@dataclass(frozen=True)
class DeviceTarget:
    """A device an expression names.

    ``known``: the device is spelled out (a literal, ``torch.device(...)``, a name bound once
    to one); otherwise it is a variable whose conventional name says it is a device.
    ``host``: it is known to be the CPU (or ``meta``), where a move costs nothing.
    """

    known: bool
    host: bool = False


def device_target(expr: cst.BaseExpression, context: "FileContext", depth: int = 0) -> Optional[DeviceTarget]:
    """The device ``expr`` certainly names, or None when it may be a dtype, a tensor, unknown."""
    if depth > _MAX_DEPTH:
        return None
    value = literal_value(expr, context.lookup)
    if value is not UNKNOWN:
        return _literal_target(value)
    if isinstance(expr, cst.Call):
        name = context.qualname(expr.func)
        if name == "torch.device":
            return _torch_device(expr, context)
        if name in _DEVICE_CALLS:
            return DeviceTarget(known=True)
        if name is None and not expr.args and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get_device":
            # `t.get_device()` is -1 for a host tensor, and `.to(-1)` raises: a move that
            # runs goes to an accelerator
            return DeviceTarget(known=False)
        return _held_device(expr, context) if depth == 0 else None  # `default_device()`: a project function's device
    if isinstance(expr, cst.Name):
        bound = context.lookup(expr.value)
        if bound is not None:
            target = device_target(bound, context, depth + 1)
            if target is not None:
                return target
            if literal_value(bound, context.lookup) is not UNKNOWN or context.qualname(bound) is not None:
                return None  # bound to something that is not a device
        return _named_device(expr.value)
    if isinstance(expr, cst.Attribute):
        if context.qualname(expr) is not None:  # a module attribute such as torch.float16, or
            return _held_device(expr, context) if depth == 0 else None  # an imported object's
        if depth == 0 and expr.attr.value == "device" and type(context.value_of(expr.value)) is kinds.HostTensor:
            return DeviceTarget(known=False, host=True)  # a host tensor's own device
        named = _named_device(expr.attr.value)
        return named if named is not None or depth > 0 else _held_device(expr, context)
    return None


def _held_device(expr: cst.BaseExpression, context: "FileContext") -> Optional[DeviceTarget]:
    """What the value engine knows an attribute holds (``cfg.GLOBAL.DEVICE`` of a config
    object, ``Settings.device`` of a class) or a call returns (a project function's
    ``torch.device("cuda" if ... else "cpu")``): the accelerator, or a device string."""
    kind = context.value_of(expr)
    if type(kind) is kinds.Accelerator:
        return DeviceTarget(known=False)
    if type(kind) is kinds.Text and kind.value is not None:
        target = _literal_target(kind.value)
        return None if target is None else DeviceTarget(known=False, host=target.host)
    return None


def is_device_name(name: str) -> bool:
    """A variable name that conventionally holds a (non-host) device: ``device``, ``gpu``,
    ``local_rank``, ``*_device``; ``cpu_device`` is the host."""
    return _DEVICE_NAME.match(name) is not None and "cpu" not in name.lower()


def is_device_string(value: str, host: bool) -> bool:
    """``"cuda"``, ``"cuda:1"``, ``"mps"``...; host (``cpu``, ``meta``) ones only when ``host``."""
    match = _DEVICE_STRING.match(value)
    return match is not None and (host or match.group("type") not in _HOST)


def _named_device(name: str) -> Optional[DeviceTarget]:
    """A variable whose name says it holds a device; ``cpu_device`` is the host, not a move."""
    return DeviceTarget(known=False) if is_device_name(name) else None


def _literal_target(value: object) -> Optional[DeviceTarget]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return DeviceTarget(known=True) if value >= 0 else None
    if isinstance(value, str):
        match = _DEVICE_STRING.match(value)
        if match is None:
            return None
        return DeviceTarget(known=True, host=match.group("type") in _HOST)
    return None


def _torch_device(call: cst.Call, context: "FileContext") -> DeviceTarget:
    """``torch.device("cuda")`` is known; ``torch.device("cpu")`` is the host."""
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        value = literal_value(call.args[0].value, context.lookup)
        if isinstance(value, str):
            match = _DEVICE_STRING.match(value)
            if match is not None and match.group("type") in _HOST:
                return DeviceTarget(known=True, host=True)
    return DeviceTarget(known=True)
