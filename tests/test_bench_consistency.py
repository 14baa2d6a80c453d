"""The report never contradicts itself: one speed-up, the same in the table, JSON and chart.

Issue 24 saw a row reading before 179 ms, after 103 ms, speed-up 1.14x: the columns were
the medians of each program, the speed-up the median of the per-round ratios, and with
uneven rounds the two disagree. The rounds below are such rounds. Synthetic results, no
timing, no torch.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rich.console import Console

from pytorch_perflint.bench import export, plot, report
from pytorch_perflint.bench.harness import Options, RoundResult, ScenarioResult
from pytorch_perflint.bench.programs import ProgramCheck, Programs
from pytorch_perflint.bench.scenario import select
from pytorch_perflint.bench.verdicts import judge

# Per-round seconds: the median per-round ratio is 1.14 (179/157), while the medians are
# 179 ms and 103 ms, a 1.74x speed-up.
BEFORE = (0.179, 0.180, 0.100)
AFTER = (0.157, 0.103, 0.090)
CONTROL = (0.178, 0.181, 0.101)


def _timing(seconds: float):
    from types import SimpleNamespace

    return SimpleNamespace(median=seconds, mean=seconds, iqr=0.0, times=(seconds,), number_per_run=1, runs=1, clock="wall")


def _result(code: str = "TPF401") -> ScenarioResult:
    scenario = select((code,))[0]
    check = ProgramCheck(code, True, 1, 0, 1, "tool-fix", "safe", ("msg",), ())
    rounds = tuple(
        RoundResult(i + 1, False, ("before", "after", "control"), {"before": _timing(b), "after": _timing(a), "control": _timing(c)}, None)
        for i, (b, a, c) in enumerate(zip(BEFORE, AFTER, CONTROL))
    )
    return ScenarioResult(
        scenario=scenario,
        rule_name="numpy",
        device="cpu",
        size={},
        programs=Programs(scenario, "x = 1\n", "x = 2\n", check),
        verdict=judge(BEFORE, AFTER, CONTROL),
        rounds=rounds,
    )


def _row(text: str, code: str) -> str:
    return next(line for line in text.splitlines() if line.strip("│ ").startswith(code))


def test_the_speed_up_is_the_ratio_of_the_medians_and_lies_in_its_range():
    verdict = judge(BEFORE, AFTER, CONTROL)
    assert verdict.before_s == 0.179 and verdict.after_s == 0.103
    assert verdict.speedup == 0.179 / 0.103
    assert verdict.ratio_min <= verdict.speedup <= verdict.ratio_max


def test_table_json_and_chart_show_the_same_figures(tmp_path):
    result = _result()
    console = Console(record=True, width=250)
    console.print(report.table([result]))
    row = _row(console.export_text(), "TPF401")
    assert "179 ms" in row and "103 ms" in row
    speedup = re.search(r"(\d+\.\d+)x \[(\d+\.\d+)-(\d+\.\d+)\]", row)
    assert speedup is not None, row
    shown = float(speedup.group(1))
    assert shown == round(0.179 / 0.103, 2) == 1.74  # before / after as the row shows them
    assert "(op alone)" in row  # TPF401's scenario times one copy and nothing else

    from pytorch_perflint.bench.machine import Machine

    machine = Machine("cpu", 2, 2, 8.0, (), "2.13.0", None, None, "3.11", "linux", 2)
    import datetime

    now = datetime.datetime.now().astimezone()
    data = export.run_dict([result], machine, Options(), now, now)
    export.write(tmp_path / "r.json", data)
    verdict = json.loads((tmp_path / "r.json").read_text())["results"][0]["verdict"]
    assert verdict["before_median_s"] == 0.179 and verdict["after_median_s"] == 0.103
    assert round(verdict["speedup"], 2) == shown
    assert verdict["speedup"] == verdict["before_median_s"] / verdict["after_median_s"]
    assert (round(verdict["ratio_min"], 2), round(verdict["ratio_max"], 2)) == (float(speedup.group(2)), float(speedup.group(3)))
    assert "micro-benchmark" in json.loads((tmp_path / "r.json").read_text())["results"][0]["benchmark"]

    (bar,) = plot.bars([result])
    assert bar.text == f"{shown:.2f}x" and (bar.low, bar.high) == (verdict["ratio_min"], verdict["ratio_max"])
    assert bar.label == "TPF401 (op alone) (cpu)"


def test_bench_script_rows_use_their_own_paired_rounds(tmp_path):
    """bench SCRIPT: each row's before column comes from the rounds its speed-up used."""
    from pytorch_perflint.bench.script import report as script_report
    from pytorch_perflint.bench.script.copies import Project
    from pytorch_perflint.bench.script.runs import Request, Run
    from pytorch_perflint.bench.script.session import Options as ScriptOptions, Program, Session, _outcome

    runs = [Run("before", 0, "done", 0, 1.0, step_times=(0.2,), torch={"version": "2.13.0"})]
    for index, (b, a, c) in enumerate(zip(BEFORE, AFTER, CONTROL), start=1):
        runs += [Run(name, index, "done", 0, 1.0, step_times=(t,)) for name, t in (("before", b), ("after", a), ("control", c))]
    # A round where the fixed copy did not run: its before must not enter the row.
    runs += [Run("before", 4, "done", 0, 1.0, step_times=(5.0,)), Run("control", 4, "done", 0, 1.0, step_times=(5.0,))]
    outcome = _outcome(Program("after", "all fixes"), runs, None, None)
    assert outcome.verdict.before_s == 0.179 and outcome.verdict.after_s == 0.103
    session = Session(
        project=Project(Path("/p"), Path("/p/train.py"), Path("."), (Path("train.py"),), 1),
        request=Request(steps=1, warmup=1, unit="step", timeout=10),
        options=ScriptOptions(rounds=4),
        findings=(),
        held_back=(),
        outcomes=(outcome,),
        runs=tuple(runs),
        determinism=None,
    )
    console = Console(record=True, width=250)
    console.print(script_report.speed_table(session))
    row = _row(console.export_text(), "all fixes")
    assert "179 ms" in row and "103 ms" in row and "1.74x [" in row
    import datetime

    now = datetime.datetime.now().astimezone()
    data = script_report.run_dict(session, script_report.machine_of(session), now, now)
    assert round(data["results"][0]["verdict"]["speedup"], 2) == 1.74
    (bar,) = plot.bars(script_report.chart_rows(session))
    assert bar.text == "1.74x"
