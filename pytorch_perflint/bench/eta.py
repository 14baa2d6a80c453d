"""Time left for a long bench run, as a figure that never grows, and the plain-log lines.

A run's steps are uneven (a GPU-only scenario is only checked on a CPU; a fixed copy can be
10x faster than "before"), so a plain "elapsed / done x left" estimate jumps up and down.
Users read a growing estimate as a hang: ``Eta`` reports the lower of the new estimate and
the previous one minus the time since, so it only counts down (and says "almost done" at 0).
"""

from __future__ import annotations

import time
from typing import Callable, Optional


class Eta:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.last: Optional[float] = None
        self.last_at = self.started

    def update(self, done: float, total: float) -> Optional[float]:
        """Seconds left after ``done`` of ``total`` units of work; None before the first."""
        now = self.clock()
        if done <= 0:
            return None
        estimate = (now - self.started) / done * max(0.0, total - done)
        if self.last is not None:
            estimate = min(estimate, max(0.0, self.last - (now - self.last_at)))
        self.last, self.last_at = estimate, now
        return estimate


def eta_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return "time left not known yet"
    if seconds <= 0:
        return "almost done"
    if seconds < 1:
        return "under 1 s left"
    if seconds < 90:
        return f"about {seconds:.0f} s left"
    return f"about {seconds / 60:.0f} min left"
