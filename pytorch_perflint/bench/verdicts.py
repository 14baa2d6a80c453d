"""From per-round figures to a verdict: pure arithmetic, no torch, unit-tested on its own.

Each round times before, after and a control (a second, independent copy of "before").
``ratio = before / after`` (above 1: the fix is faster); ``aa = before / control`` measures
how far two identical programs drift apart in one round.

The speed-up, the one figure every output shows (table, JSON, chart, the scenario harness
and ``bench SCRIPT`` alike), is the ratio of the medians: ``median(before) / median(after)``
over the measured rounds, the same medians the "before" and "after" columns show, so a row
always reads before / after = speed-up. Its range is the lowest and highest per-round ratio;
the ratio of the medians always lies inside it (each round's before is at least
``min_ratio`` times its after, so the medians are too). The noise threshold is the widest
A/A deviation seen, never below ``NOISE_FLOOR``:

    threshold = max(NOISE_FLOOR, max over rounds of max(aa, 1 / aa))

- ``faster``: every round's ratio is above the threshold and the speed-up is at least
  ``MEANINGFUL`` (a 5% speed-up: less than that is rarely worth a code change or a review).
- ``small``: every round's ratio is above the threshold, but the speed-up is under
  ``MEANINGFUL``: real but not worth much.
- ``slower``: every round's ratio is below ``1 / threshold``.
- ``inconclusive``: anything else, e.g. one round inside the noise; or too few rounds.
- ``skipped``: not measured, with the reason (needs CUDA, a failed check...).
- ``not judged``: measured, but at ``--quick`` sizes and timings, which check the harness,
  not the speed: the figures are kept, no verdict is drawn from them.

Requiring *every* round, rather than the median, keeps a single lucky or unlucky round from
deciding: one bad round prevents ``faster``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

NOISE_FLOOR = 1.01
MEANINGFUL = 1.05
MIN_ROUNDS = 2


class Kind(str, enum.Enum):
    FASTER = "faster"
    SMALL = "small"
    INCONCLUSIVE = "inconclusive"
    SLOWER = "slower"
    SKIPPED = "skipped"
    UNJUDGED = "not judged"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """A verdict with the figures that decided it."""

    kind: Kind
    reason: str = ""
    speedup: Optional[float] = None  # before_s / after_s: the ratio of the medians
    ratio_min: Optional[float] = None  # the lowest per-round before/after
    ratio_max: Optional[float] = None  # the highest
    threshold: Optional[float] = None  # the A/A noise threshold (a ratio >= 1)
    rounds: int = 0
    before_s: Optional[float] = None  # median over the measured rounds
    after_s: Optional[float] = None

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.reason}" if self.kind is Kind.SKIPPED and self.reason else str(self.kind)


def as_dict(verdict: Verdict) -> Dict[str, Any]:
    """A verdict as the JSON reports write it (scenario runs and ``bench SCRIPT``)."""
    return {
        "kind": str(verdict.kind),
        "reason": verdict.reason,
        "before_median_s": verdict.before_s,
        "after_median_s": verdict.after_s,
        "speedup": verdict.speedup,
        "speedup_definition": SPEEDUP_DEFINITION,
        "ratio_min": verdict.ratio_min,
        "ratio_max": verdict.ratio_max,
        "noise_threshold": verdict.threshold,
        "rounds": verdict.rounds,
    }


SPEEDUP_DEFINITION = "median(before) / median(after) over the measured rounds; ratio_min/ratio_max: the per-round before/after range"


def speedup_text(verdict: Verdict) -> str:
    """The speed-up as every table prints it: ``1.74x [1.52-1.90]``."""
    if verdict.speedup is None:
        return "-"
    return f"{verdict.speedup:.2f}x [{verdict.ratio_min:.2f}-{verdict.ratio_max:.2f}]"


def judge(
    before: Sequence[float],
    after: Sequence[float],
    control: Sequence[float],
    floor: float = NOISE_FLOOR,
    meaningful: float = MEANINGFUL,
    min_rounds: int = MIN_ROUNDS,
) -> Verdict:
    """The verdict from each measured round's figure (seconds) of before, after and control,
    paired by round: the one entry both the harness and ``bench SCRIPT`` use."""
    ratios = [b / a for b, a in zip(before, after)]
    aa = [b / c for b, c in zip(before, control)]
    medians = (statistics.median(before), statistics.median(after)) if ratios else None
    return decide(ratios, aa, floor, meaningful, min_rounds, medians=medians)


def skipped(reason: str) -> Verdict:
    return Verdict(Kind.SKIPPED, reason)


QUICK_REASON = "--quick checks the harness, not the speed"


def unjudged(verdict: Verdict, reason: str = QUICK_REASON) -> Verdict:
    """The figures of ``verdict`` without its judgement (a ``--quick`` run)."""
    return dataclasses.replace(verdict, kind=Kind.UNJUDGED, reason=reason)


def noise_threshold(aa_ratios: Sequence[float], floor: float = NOISE_FLOOR) -> float:
    """The widest A/A deviation as a ratio >= 1, never below ``floor``."""
    widest = max((max(r, 1.0 / r) for r in aa_ratios if r > 0 and math.isfinite(r)), default=floor)
    return max(floor, widest)


def decide(
    ratios: Sequence[float],
    aa_ratios: Sequence[float],
    floor: float = NOISE_FLOOR,
    meaningful: float = MEANINGFUL,
    min_rounds: int = MIN_ROUNDS,
    medians: Optional[Tuple[float, float]] = None,
) -> Verdict:
    """The verdict for one rule on one device from its measured (non-warm-up) rounds.
    ``medians``: (before, after) medians of the same rounds, whose ratio is the speed-up
    (``judge`` passes them); without them the speed-up is the median per-round ratio."""
    ratios = [r for r in ratios]
    if not ratios:
        return Verdict(Kind.INCONCLUSIVE, "no measured rounds")
    threshold = noise_threshold(aa_ratios, floor)
    before_s, after_s = medians if medians is not None else (None, None)
    summary = dict(
        speedup=before_s / after_s if medians is not None else statistics.median(ratios),
        ratio_min=min(ratios),
        ratio_max=max(ratios),
        threshold=threshold,
        rounds=len(ratios),
        before_s=before_s,
        after_s=after_s,
    )
    if len(ratios) < min_rounds:
        return Verdict(Kind.INCONCLUSIVE, f"{len(ratios)} round(s); a verdict needs {min_rounds}", **summary)
    median = summary["speedup"]
    if all(r > threshold for r in ratios):
        if median >= meaningful:
            return Verdict(Kind.FASTER, f"every round above the noise threshold x{threshold:.3f}", **summary)
        return Verdict(Kind.SMALL, f"faster in every round, but by less than {100 * (meaningful - 1):.0f}%", **summary)
    if all(r < 1.0 / threshold for r in ratios):
        return Verdict(Kind.SLOWER, f"every round below 1/x{threshold:.3f}", **summary)
    inside = sum(1 for r in ratios if 1.0 / threshold <= r <= threshold)
    if inside:
        reason = f"{inside} of {len(ratios)} rounds within the noise (x{threshold:.3f})"
    else:
        reason = "rounds disagree in direction"
    return Verdict(Kind.INCONCLUSIVE, reason, **summary)
