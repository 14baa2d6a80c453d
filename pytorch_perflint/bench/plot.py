"""A chart of the speed-ups: one bar per rule and device, its range, and its noise band.

Matplotlib with the Agg backend (no display needed, works in CI). The x axis is
logarithmic: speed-ups range from a few percent to hundreds of times. When one speed-up is
far beyond the others (TPF401's copy, over 1000x, next to bars of 1.1x to 3x), the axis is
clipped just past the others and that bar runs to the edge, hatched and labelled with its
value, so the small bars stay readable.
"""

from __future__ import annotations

from pathlib import Path
from dataclasses import dataclass
from typing import List, Optional, Sequence

from .harness import ScenarioResult
from .verdicts import Kind

_COLOURS = {
    Kind.FASTER: "#2e7d32",
    Kind.SMALL: "#81c784",
    Kind.INCONCLUSIVE: "#f9a825",
    Kind.SLOWER: "#c62828",
    Kind.UNJUDGED: "#9e9e9e",
}
# Clip the axis when the largest speed-up is more than this many times the next one.
OUTLIER = 10.0


def clip_limit(ratios: Sequence[float]) -> Optional[float]:
    """Where to end the x axis when one speed-up would squash the rest near 1x (None: show
    everything). ``ratios`` are each bar's highest value (its range's end)."""
    ordered = sorted(ratios, reverse=True)
    if len(ordered) < 2:
        return None
    rest = max(ordered[1], 2.0)
    return rest * 3 if ordered[0] > OUTLIER * rest else None


def _label(result) -> str:
    """The bar's name: the table's rule cell (its "op alone" mark included) and the device."""
    alone = getattr(getattr(result, "scenario", None), "operation_alone", False)
    return f"{result.code}{' (op alone)' if alone else ''} ({result.device})"


@dataclass(frozen=True)
class Bar:
    """One drawn bar: the very figures the table row and the JSON verdict hold."""

    label: str
    speedup: float
    low: float
    high: float

    @property
    def text(self) -> str:
        return f"{self.speedup:.2f}x"


def bars(results: Sequence[ScenarioResult]) -> List[Bar]:
    """The bars of the measured results, in order."""
    return [
        Bar(_label(r), r.verdict.speedup, r.verdict.ratio_min or r.verdict.speedup, r.verdict.ratio_max or r.verdict.speedup)
        for r in results
        if r.verdict.speedup is not None
    ]


def write_plot(path: Path, results: Sequence[ScenarioResult], title: str = "") -> int:
    """Write the PNG; returns how many results had ratios to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401 - used as matplotlib.ticker

    measured = [r for r in results if r.verdict.speedup is not None]
    skipped = [r for r in results if r.verdict.speedup is None]
    rows = len(measured) + len(skipped)
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(rows, 3) + 1.2))
    labels = []
    drawn = bars(measured)
    clip = clip_limit([max(r.verdict.ratio_max or 1.0, r.verdict.speedup or 1.0) for r in measured])
    for y, result in enumerate(measured):
        v = result.verdict
        assert v.ratio_min is not None and v.ratio_max is not None and v.threshold is not None
        verdict = "" if v.kind is Kind.UNJUDGED else f" {v.kind}"
        if clip is not None and v.speedup > clip:
            # Beyond the clipped axis: a hatched bar to the edge, the figure written on it.
            ax.barh(y, clip - 1.0, left=1.0, color=_COLOURS[v.kind], height=0.6, hatch="//", edgecolor="white")
            ax.annotate(
                f"{drawn[y].text}{verdict} (axis clipped) ",
                (clip, y),
                va="center",
                ha="right",
                fontsize=8,
                color="white",
                fontweight="bold",
                bbox={"facecolor": _COLOURS[v.kind], "edgecolor": "none", "pad": 1.5},
            )
        else:
            ax.barh(y, v.speedup - 1.0, left=1.0, color=_COLOURS[v.kind], height=0.6)
            ax.errorbar(
                v.speedup,
                y,
                xerr=[[v.speedup - v.ratio_min], [min(v.ratio_max, clip or v.ratio_max) - v.speedup]],
                fmt="none",
                ecolor="black",
                capsize=3,
            )
            ax.annotate(f" {drawn[y].text}{verdict}", (min(max(v.ratio_max, v.speedup), clip or v.ratio_max), y), va="center", fontsize=8)
        ax.plot([1 / v.threshold, v.threshold], [y, y], color="grey", linewidth=6, alpha=0.35, solid_capstyle="butt")
        labels.append(drawn[y].label)
    for offset, result in enumerate(skipped):
        y = len(measured) + offset
        ax.annotate(f" {result.verdict.label}", (1.0, y), va="center", fontsize=8, color="grey")
        labels.append(_label(result))
    ax.set_yticks(range(rows))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(rows - 0.5, -0.5)  # first result on top
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}x"))
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("speed-up = median before / median after; whiskers: per-round range; grey: A/A noise band")
    highest = max([r.verdict.ratio_max or 1.0 for r in measured] + [2.0])
    ax.set_xlim(0.5, clip if clip is not None else highest * 4)
    if clip is not None:  # a short log axis: label 2x, 3x, 5x between the decades
        ax.xaxis.set_minor_formatter(
            matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}x" if f"{x:.3g}"[0] in "235" else "")
        )
        ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_title(title or "pytorch-perflint bench")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return len(measured)
