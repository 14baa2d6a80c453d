"""Calls that hand the caching allocator's free blocks back to the driver (TPF206), read
with ``ast`` in project bodies (``call_values.read_body``) and matched by qualified name in
the rule."""

from __future__ import annotations

import ast
from typing import Dict

from .forms import dotted, qualify

# Every spelling of "give the caching allocator's free blocks back to the driver".
EMPTY_CACHE = frozenset(
    {
        "torch.cuda.empty_cache",
        "torch.cuda.memory.empty_cache",
        "torch.mps.empty_cache",
        "torch.xpu.empty_cache",
        "torch.xpu.memory.empty_cache",
        "torch.accelerator.empty_cache",
        "torch.accelerator.memory.empty_cache",
    }
)


def is_empty_cache(call: ast.Call, aliases: Dict[str, str]) -> bool:
    """``torch.cuda.empty_cache()`` and its spellings, through the module's imports."""
    spelled = dotted(call.func)
    return spelled is not None and qualify(spelled, aliases) in EMPTY_CACHE


def moves_new_module(call: ast.Call) -> bool:
    """``Net(...).cuda()`` / ``Net(...).to(device)``: a class (capitalised) constructed and
    moved to the device in one expression; not a tensor type's (``torch.LongTensor([n]).to(d)``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("cuda", "to") and isinstance(func.value, ast.Call)):
        return False
    name = dotted(func.value.func)
    last = name.rsplit(".", 1)[-1] if name is not None else ""
    return last[:1].isupper() and not last.endswith("Tensor")
