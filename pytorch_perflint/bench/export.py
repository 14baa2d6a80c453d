"""The JSON record of a run: every round's raw figures, the checks, and the machine.

Everything a reader needs to re-judge a verdict is in the file: per round and program, the
per-run time of every block, the block size, the clock, the order the programs ran in and
the load average; per scenario, the size parameters, the A/A threshold, the programs' texts
(as a diff) and what the rule reported.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from .. import __version__ as tool_version
from .harness import Options, ScenarioResult
from .machine import Machine
from .strict import CHECK_SETTINGS
from .verdicts import MEANINGFUL, MIN_ROUNDS, NOISE_FLOOR, as_dict

# 2: the verdict's speed-up is the ratio of the medians ("speedup", with "before_median_s" and
# "after_median_s"), replacing the median per-round ratio ("ratio_median"); peak memory.
SCHEMA_VERSION = 2


def _timing(timing: Any) -> Dict[str, Any]:
    return {
        "median_s": timing.median,
        "mean_s": timing.mean,
        "iqr_s": timing.iqr,
        "number_per_run": timing.number_per_run,
        "runs": timing.runs,
        "clock": timing.clock,
        "block_times_s": list(timing.times),
    }


def _equivalence(value: Any) -> Optional[Dict[str, Any]]:
    if value is None:
        return None
    return {"ok": value.ok, "max_abs_diff": value.max_abs_diff, "rtol": value.rtol, "atol": value.atol, "detail": value.detail}


def _orders(value: Any) -> Optional[Dict[str, Any]]:
    """An orders scenario's epoch orders (``bench.orders``); None for the others."""
    if value is None:
        return None
    return {"ok": value.ok, "before": [list(e) for e in value.before], "after": [list(e) for e in value.after], "detail": value.describe()}


def result_dict(result: ScenarioResult) -> Dict[str, Any]:
    """One rule on one device."""
    scenario = result.scenario
    check = result.programs.check
    verdict = result.verdict
    return {
        "code": result.code,
        "rule": result.rule_name,
        "scenario": scenario.title,
        "scenario_module": scenario.module,
        "rationale": scenario.rationale,
        "benchmark": "micro-benchmark: the operation alone" if scenario.operation_alone else "micro-benchmark",
        "device": result.device,
        "needs": str(scenario.needs),
        "size": result.size,
        "verdict": as_dict(verdict),
        "checks": {
            "ok": result.ok,
            "problems": list(result.problems),
            "rule_exists": check.rule_exists,
            "fires_before": check.fires_before,
            "fires_after": check.fires_after,
            "fix_applied": check.fix_applied,
            "after_source": check.after_source,
            "applicability": check.applicability,
            "messages": list(check.messages),
            "errors": list(check.errors),
            "equivalence": _equivalence(result.equivalence),
            "check_settings": CHECK_SETTINGS,
            "determinism": _equivalence(result.determinism),
            "orders": _orders(result.orders),
            "result": list(result.result_shape),
        },
        "timing": {
            "clock": result.clock,
            "num_threads": result.num_threads,
            "min_run_time_s": result.min_run_time,
            "rounds": [
                {
                    "index": r.index,
                    "warmup": r.warmup,
                    "order": list(r.order),
                    "ratio": r.ratio,
                    "aa_ratio": r.aa_ratio,
                    "load_average": list(r.load) if r.load else None,
                    "programs": {name: _timing(t) for name, t in r.timings.items()},
                }
                for r in result.rounds
            ],
        },
        "load_average_before": list(result.load_before) if result.load_before else None,
        "load_average_after": list(result.load_after) if result.load_after else None,
        "peak_memory": result.memory.as_dict() if result.memory is not None else None,
        "warnings": list(result.warnings),
        "error": result.error,
        "seconds": result.seconds,
        "diff": result.programs.diff,
    }


def run_dict(
    results: Sequence[ScenarioResult],
    machine: Machine,
    options: Options,
    started: datetime.datetime,
    finished: datetime.datetime,
    load_start: Any = None,
    load_end: Any = None,
    progress: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The whole run. ``progress`` (``record.progress_fields``) says whether it finished:
    ``complete``, ``stopped`` (why it ended early), ``planned`` and ``not_run``; without
    it the run is taken as complete."""
    every = [f"{r.code} {r.device}" for r in results]
    progress = progress or {"complete": True, "stopped": None, "planned": every, "not_run": []}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pytorch-perflint", "version": tool_version},
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "machine": {**dataclasses.asdict(machine), "gpus": list(machine.gpus)},
        "load_average_start": list(load_start) if load_start else None,
        "load_average_end": list(load_end) if load_end else None,
        "options": {
            "quick": options.quick,
            "rounds": options.measured_rounds,
            "warmup_rounds": 1,
            "num_threads": options.num_threads,
            "min_run_time_s": options.base_run_time,
            "seed": options.seed,
        },
        "thresholds": {"noise_floor": NOISE_FLOOR, "meaningful": MEANINGFUL, "min_rounds": MIN_ROUNDS},
        **progress,
        "results": [result_dict(r) for r in results],
    }


def write(path: Path, data: Dict[str, Any]) -> None:
    """Atomically: the JSON is rewritten after every scenario, and a run stopped mid-write
    must leave the previous complete file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
