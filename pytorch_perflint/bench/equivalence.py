"""Do before and after compute the same thing? Results compared leaf by leaf.

A fix that makes code faster by computing something else is a bug, so timing waits for this
check. Results may be tensors, numbers, or tuples/lists/dicts of them; tensors must agree in
shape and dtype and be close in value (``torch.allclose`` semantics, per-scenario tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Tuple

import torch


@dataclass(frozen=True)
class Equivalence:
    """The outcome of comparing two results."""

    ok: bool
    max_abs_diff: float
    rtol: float
    atol: float
    detail: str = ""

    def describe(self) -> str:
        if self.ok:
            return f"ok (max |diff| {self.max_abs_diff:.2g})"
        return f"differs: {self.detail}"


def compare(before: Any, after: Any, rtol: float, atol: float) -> Equivalence:
    """Compare two results; the first mismatch is named in ``detail``."""
    problems: List[str] = []
    worst = [0.0]
    _compare(before, after, "result", rtol, atol, problems, worst)
    return Equivalence(not problems, worst[0], rtol, atol, "; ".join(problems[:3]))


def _leaf_number(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, torch.Tensor)


def _compare(a: Any, b: Any, where: str, rtol: float, atol: float, problems: List[str], worst: List[float]) -> None:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            problems.append(f"{where}: a tensor on one side only")
            return
        _compare_tensors(a, b, where, rtol, atol, problems, worst)
    elif _leaf_number(a) and _leaf_number(b):
        diff = abs(float(a) - float(b))
        if math.isnan(float(a)) and math.isnan(float(b)):
            return
        worst[0] = max(worst[0], diff)
        if not diff <= atol + rtol * abs(float(b)):
            problems.append(f"{where}: {a!r} vs {b!r}")
    elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            problems.append(f"{where}: {len(a)} items vs {len(b)}")
            return
        for index, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, f"{where}[{index}]", rtol, atol, problems, worst)
    elif isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            problems.append(f"{where}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}")
            return
        for key in a:
            _compare(a[key], b[key], f"{where}[{key!r}]", rtol, atol, problems, worst)
    elif a != b:
        problems.append(f"{where}: {a!r} vs {b!r}")


def _compare_tensors(
    a: torch.Tensor, b: torch.Tensor, where: str, rtol: float, atol: float, problems: List[str], worst: List[float]
) -> None:
    if a.shape != b.shape:
        problems.append(f"{where}: shape {tuple(a.shape)} vs {tuple(b.shape)}")
        return
    if a.dtype != b.dtype:
        problems.append(f"{where}: dtype {a.dtype} vs {b.dtype}")
        return
    x = a.detach().to("cpu")
    y = b.detach().to("cpu")
    if x.is_complex() or x.is_floating_point():
        x, y = x.to(torch.complex128 if x.is_complex() else torch.float64), y.to(torch.complex128 if y.is_complex() else torch.float64)
        if x.numel():
            worst[0] = max(worst[0], float(torch.nan_to_num((x - y).abs(), nan=0.0).max()))
        if not torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            problems.append(f"{where}: max |diff| {float((x - y).abs().max()):.3g} over tolerance (rtol {rtol}, atol {atol})")
    elif not torch.equal(x, y):
        problems.append(f"{where}: integer/bool tensors differ")


def shape_of(value: Any) -> Tuple[str, ...]:
    """A short description of a result, for the JSON (what was compared)."""
    if isinstance(value, torch.Tensor):
        return (f"tensor{tuple(value.shape)} {str(value.dtype).replace('torch.', '')}",)
    if isinstance(value, (tuple, list)):
        return tuple(item for v in value for item in shape_of(v))
    if isinstance(value, dict):
        return tuple(item for v in value.values() for item in shape_of(v))
    return (type(value).__name__,)
