"""Saying when a fixed copy's mean step time is mostly DataLoader worker start-up.

TPF101's fix adds worker processes. They start when a loader's iteration begins: every epoch
unless ``persistent_workers``, and an evaluation loader on its first use. ``bench SCRIPT``'s
figure is the mean step time over a few steps (the throughput), so a short run that crosses
an epoch boundary counts a start-up that a long training run spreads over thousands of
steps. On an H200, ``examples/train_cifar.py`` (8-step epochs over 512 images held in
memory) read 10.9 ms -> 30.2 ms per step with all fixes: the after copy's steps took about
2.5 ms, against about 7 ms before, except the one that crossed the epoch boundary (the test
loader's four workers starting, the train loader's restarting): 236-294 ms. The verdict
stands as measured; this note says where the time went, with the median steps beside it.
"""

from __future__ import annotations

import statistics
from typing import List, Optional, Sequence, Tuple

from ..report import format_seconds

# Rules whose fix adds DataLoader worker processes.
ADDS_WORKERS = ("TPF101",)
# A step this many times the run's median step is a start-up, not a step...
OUTLIER = 5.0
# ...worth a note when such steps make at least this share of the run's measured time.
SHARE = 0.3


def _runs(runs: Sequence, program: str) -> List[Tuple[float, ...]]:
    return [r.step_times for r in runs if r.program == program and r.round > 0 and r.ok]


def _median_step(runs: List[Tuple[float, ...]]) -> Optional[float]:
    return statistics.median(statistics.median(times) for times in runs) if runs else None


def startup_notes(session) -> List[str]:
    """One note per fixed copy that added workers and whose measured time is mostly a few
    slow steps (``OUTLIER`` x its median step, ``SHARE`` of its time, in most runs)."""
    notes = []
    before = _median_step(_runs(session.runs, "before"))
    for outcome in session.outcomes:
        fix = outcome.program.fix
        added = [code for code in ADDS_WORKERS if fix is not None and code in fix.codes]
        runs = _runs(session.runs, outcome.program.name)
        if not added or not runs:
            continue
        slow, shares, worst = 0, [], []
        for times in runs:
            median = statistics.median(times)
            long_steps = [t for t in times if t > OUTLIER * median]
            share = sum(long_steps) / sum(times) if sum(times) > 0 else 0.0
            shares.append(share)
            worst.append(max(times))
            slow += share >= SHARE
        if slow * 2 <= len(runs):
            continue
        after = _median_step(runs)
        steps = len(runs[0])
        versus = ""
        if before and after:
            versus = f"; median steps: before {format_seconds(before)}, after {format_seconds(after)} ({before / after:.2f}x)"
        notes.append(
            f"{outcome.program.label}: {', '.join(added)} adds DataLoader workers, which start when a loader's "
            f"iteration begins (each epoch unless persistent_workers=True; an evaluation loader on its first use). "
            f"Here a few of the {steps} measured steps (up to {format_seconds(max(worst))}, against a median step of "
            f"{format_seconds(after)}) made {100 * statistics.median(shares):.0f}% of the measured time: worker start-up "
            f"at an epoch boundary, which a short run counts in full and a long training run spreads over its steps"
            f"{versus}. Measure more steps (--steps, an epoch or more) to judge the steady state."
        )
    return notes
