"""Did the fixed script compute the same thing? Comparing the runs' fingerprints.

A fingerprint is what the bootstrap records after the measured steps: sum and norm of every
parameter the optimizers hold (with ``--unit forward``: the outermost module's parameters and
its last output), and the last loss. Pure arithmetic on plain data, no torch.

Safe fixes must leave it unchanged. Some unsafe fixes change it by design; when the only
fixes that could explain a difference are those, the report names them instead of failing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

# Relative tolerance: float32 training on one device is bitwise reproducible run to run
# (same ops, same order), so this only absorbs reduction-order noise (threads, GPUs).
RTOL = 1e-4

# Unsafe fixes that can change what a script computes, and how (from the rules' "Fix
# safety" notes). "shapes": the parameter list changes; "values": the numbers do.
CHANGES_RESULTS: Mapping[str, Tuple[frozenset, str]] = {
    "TPF301": (frozenset({"shapes", "values"}), "bias=False removes the bias parameters before BatchNorm"),
    "TPF402": (frozenset({"values"}), "random factories now draw from the device's own generator"),
    "TPF101": (frozenset({"values"}), "DataLoader workers draw random numbers from their own seeds"),
    "TPF103": (frozenset({"values"}), "persistent DataLoader workers keep their random state across epochs"),
    "TPF201": (frozenset({"values"}), "the optimizer skips parameters whose gradient stays None"),
    "TPF401": (frozenset({"values"}), "the tensor shares memory with its NumPy array"),
}


@dataclass(frozen=True)
class Agreement:
    """Whether two fingerprints match, and if not, how."""

    same: Optional[bool]  # None: not compared (a fingerprint is missing)
    kind: str  # "same", "shapes", "values", "missing"
    detail: str = ""
    explained_by: Tuple[str, ...] = ()  # unsafe fixes that can account for the difference

    @property
    def ok(self) -> bool:
        """Nothing to object to: the same, or different in a way the fixes explain."""
        return self.same is not False or bool(self.explained_by)


def _close(a: Optional[float], b: Optional[float], scale: float, rtol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if not (math.isfinite(a) and math.isfinite(b)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b), scale, 1e-12)


def _pairs(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Iterable[Tuple[float, float, float]]:
    for (sum_a, norm_a), (sum_b, norm_b) in zip(a, b):
        scale = max(abs(norm_a), abs(norm_b))
        yield sum_a, sum_b, scale
        yield norm_a, norm_b, scale


def compare(a: Optional[Dict[str, Any]], b: Optional[Dict[str, Any]], rtol: float = RTOL) -> Agreement:
    """``a`` is the reference (before), ``b`` the other run."""
    if not a or not b:
        return Agreement(None, "missing", "no fingerprint (the script never used torch, or it could not be read)")
    if a.get("tensors") != b.get("tensors") or a.get("shapes") != b.get("shapes"):
        return Agreement(False, "shapes", f"{a.get('tensors')} parameter tensors before, {b.get('tensors')} after, or other shapes")
    scale = max(abs(a.get("norm") or 0.0), abs(b.get("norm") or 0.0))
    checks: List[Tuple[str, bool]] = [
        ("parameter sum", _close(a.get("sum"), b.get("sum"), scale, rtol)),
        ("parameter norm", _close(a.get("norm"), b.get("norm"), scale, rtol)),
        ("loss", _close(a.get("loss"), b.get("loss"), 0.0, rtol)),
        ("each parameter", all(_close(x, y, s, rtol) for x, y, s in _pairs(a.get("each") or [], b.get("each") or []))),
        ("outputs", len(a.get("outputs") or []) == len(b.get("outputs") or [])
         and all(_close(x, y, s, rtol) for x, y, s in _pairs(a.get("outputs") or [], b.get("outputs") or []))),
    ]
    failed = [name for name, ok in checks if not ok]
    if not failed:
        return Agreement(True, "same")
    detail = ", ".join(failed) + f" differ (loss {_show(a.get('loss'))} vs {_show(b.get('loss'))})"
    return Agreement(False, "values", detail)


def _show(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.6g}"


def explain(agreement: Agreement, unsafe_codes: Iterable[str]) -> Agreement:
    """The same agreement, with the unsafe fixes (among ``unsafe_codes``) that can account
    for a difference of its kind."""
    if agreement.same is not False:
        return agreement
    codes = tuple(sorted(c for c in set(unsafe_codes) if c in CHANGES_RESULTS and agreement.kind in CHANGES_RESULTS[c][0]))
    return Agreement(agreement.same, agreement.kind, agreement.detail, codes)


def reasons(codes: Iterable[str]) -> str:
    """``TPF301 (bias=False removes ...)``, for the report."""
    return "; ".join(f"{code} ({CHANGES_RESULTS[code][1]})" for code in codes if code in CHANGES_RESULTS)
