"""Runtime evidence for static findings: the profiled run's time, mapped to findings' lines.

The profiled "before" run (``--profile``) reports time per category and source line
(``script_profiling``). Here each finding gets the share of step time that bears on it:

- DataLoader waits -> TPF101 and TPF103 findings (the wait is what workers hide; it shows at
  the loop, not at the DataLoader call, so every such finding carries the total);
- host syncs -> TPF202 findings on the same line;
- anomaly mode's bookkeeping -> TPF204 findings;
- PyTorch's own profiler anti-patterns -> findings on the line a match points at, or of the
  rule that flags the same thing.

Time that maps to no finding is kept too ("unexplained"): a DataLoader that is slow although
it has workers is worth knowing. Shares are of the profiled run's own step time; the profiler's
Python tracing slows Python-heavy code (anomaly mode's stack capture) more than kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .fixes import Finding

CATEGORY_RULES: Mapping[str, Tuple[str, ...]] = {
    "dataloader": ("TPF101", "TPF103"),
    "anomaly": ("TPF204",),
}
BY_LINE = {"sync": ("TPF202",)}
CATEGORY_TEXT = {
    "dataloader": "waiting on the DataLoader",
    "sync": "host syncs (.item(), synchronize)",
    "anomaly": "anomaly-mode bookkeeping",
}
# torch.profiler._pattern_matcher's names -> the rule that flags the same pattern.
PATTERN_RULES: Mapping[str, str] = {
    "Synchronized DataLoader Pattern": "TPF101",
    "Gradient Set To Zero Instead of None Pattern": "TPF201",
    "Enabling Bias in Conv2d Followed By BatchNorm Pattern": "TPF301",
    "Optimizer Single Tensor Pattern": "TPF602",
}
# Unexplained time below this share is not worth a line.
MIN_SHARE = 0.01


@dataclass(frozen=True)
class Evidence:
    """Measured time behind one finding (or behind none: ``finding`` is None)."""

    finding: Optional[Finding]
    what: str  # "waiting on the DataLoader", a pattern's name...
    seconds: float
    share: float  # of the profiled run's step time
    where: str = ""  # the source line the time was seen at, when one


def _relative(location: Optional[str], root: str) -> str:
    """``/tmp/.../before/train.py:40`` -> ``train.py:40``; other paths stay as they are."""
    if not location:
        return ""
    path, _, line = location.rpartition(":")
    prefix = root.rstrip("/") + "/"
    if path.startswith(prefix):
        path = path[len(prefix):]
    return f"{Path(path).as_posix()}:{line}" if line else path


def evidence(profile: Optional[Dict[str, Any]], findings: Sequence[Finding], copy_root: str) -> List[Evidence]:
    """Everything the profile shows, attached to findings where it bears on one."""
    if not profile or not profile.get("window_s"):
        return []
    window = float(profile["window_s"])
    found: List[Evidence] = []
    totals: Dict[str, float] = {}
    lines: Dict[Tuple[str, str], float] = {}
    for row in profile.get("rows") or ():
        category = row["category"]
        where = _relative(row.get("location"), copy_root)
        totals[category] = totals.get(category, 0.0) + row["seconds"]
        lines[(category, where)] = lines.get((category, where), 0.0) + row["seconds"]
    for category, seconds in totals.items():
        codes = CATEGORY_RULES.get(category, ())
        matched = [f for f in findings if f.code in codes]
        for finding in matched:
            found.append(Evidence(finding, CATEGORY_TEXT[category], seconds, seconds / window))
        if not matched and category in CATEGORY_RULES and seconds / window >= MIN_SHARE:
            where = max((w for (c, w) in lines if c == category), key=lambda w: lines[(category, w)], default="")
            found.append(Evidence(None, CATEGORY_TEXT[category], seconds, seconds / window, where))
    for (category, where), seconds in lines.items():
        if category not in BY_LINE:
            continue
        matched = [f for f in findings if f.code in BY_LINE[category] and f.where == where]
        for finding in matched:
            found.append(Evidence(finding, CATEGORY_TEXT[category], seconds, seconds / window, where))
        if not matched and seconds / window >= MIN_SHARE:
            found.append(Evidence(None, CATEGORY_TEXT[category], seconds, seconds / window, where))
    for match in profile.get("patterns") or ():
        where = _relative(match.get("location"), copy_root)
        rule = PATTERN_RULES.get(match["pattern"])
        matched = [f for f in findings if f.where == where or f.code == rule]
        what = f"PyTorch profiler: {match['pattern']} ({match['count']}x)"
        for finding in matched:
            found.append(Evidence(finding, what, match["seconds"], match["seconds"] / window, where))
        if not matched:
            found.append(Evidence(None, what, match["seconds"], match["seconds"] / window, where))
    return found


def for_finding(found: Sequence[Evidence], finding: Finding) -> List[Evidence]:
    return [e for e in found if e.finding == finding]


def unexplained(found: Sequence[Evidence]) -> List[Evidence]:
    return [e for e in found if e.finding is None]
