"""`bench SCRIPT` end to end on the bundled examples, with real torch and few steps.

Marked slow (each run is a fresh process that imports torch) but small enough for CI: the
runs complete, before and after train to the same weights, the user's files are unchanged
afterwards and the temporary copies are gone. Timings are checked in shape only: a shared
machine's numbers prove nothing in a test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_bench_script import tree_digest

torch = pytest.importorskip("torch")

from pytorch_perflint.bench.cli import bench  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOOTSTRAP = Path(__file__).resolve().parent.parent / "pytorch_perflint" / "bench" / "script" / "bootstrap.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def io_bound(tmp_path_factory):
    """One full session on a copy of examples/train_io_bound.py: the profiled run, JSON and
    the chart, in the smallest sizes that still exercise them (per-rule copies are tested with
    stand-in runs in test_bench_script_session.py)."""
    root = tmp_path_factory.mktemp("user")
    project = root / "proj"
    project.mkdir()
    shutil.copy(EXAMPLES / "train_io_bound.py", project / "train.py")
    (project / "data").mkdir()
    (project / "data" / "README").write_text("a data folder the copies link to\n")
    temp = root / "tmp"
    temp.mkdir()
    before = tree_digest(project)
    out = root / "out"
    args = [
        "train.py", "--steps", "3", "--warmup", "2", "--rounds", "1", "--unsafe-fixes", "--profile", "--no-per-rule",
        "--json", str(out / "run.json"), "--plot", str(out / "run.png"),
        "--", "--items", "512", "--read-latency", "0.001",
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        patch.setattr(tempfile, "tempdir", str(temp))
        result = CliRunner().invoke(bench, args, catch_exceptions=False)
    return {
        "result": result,
        "data": json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else None,
        "before": before,
        "after": tree_digest(project),
        "temp": list(temp.iterdir()),
        "plot": out / "run.png",
    }


def test_the_session_completes_and_leaves_no_trace(io_bound):
    assert io_bound["result"].exit_code == 0, io_bound["result"].output
    assert io_bound["after"] == io_bound["before"]
    assert io_bound["temp"] == []
    assert io_bound["plot"].stat().st_size > 1000


def test_every_program_ran_its_steps(io_bound):
    data = io_bound["data"]
    runs = data["runs"]
    programs = {r["program"] for r in runs if r["round"] >= 0}
    assert programs == {"before", "after", "control"}
    for run in runs:
        assert run["status"] == "done" and run["steps_done"] == 5
        assert len(run["step_times_s"]) == 3 and all(t > 0 for t in run["step_times_s"])
    assert sorted(r["round"] for r in runs if r["program"] == "before") == [-1, 0, 1]


def test_fixes_keep_the_trained_weights(io_bound):
    data = io_bound["data"]
    assert data["determinism"]["same"] is True
    results = {r["program"]: r for r in data["results"]}
    assert set(results) == {"after"}
    fix = results["after"]["fix"]
    # num_workers added, then persistent_workers for the loader in the epoch loop (TPF103)
    assert fix["codes"] == ["TPF101", "TPF401"] and fix["fixed"] == 3 and fix["follow_ups"] == 1
    for result in results.values():
        assert result["fingerprint"]["same"] is True
        verdict = result["verdict"]
        assert verdict["kind"] in {"faster", "small", "inconclusive", "slower"}
        assert verdict["rounds"] == 1 and len(result["ratios"]) == 1 and verdict["speedup"] > 0
    before = next(r for r in data["runs"] if r["program"] == "before" and r["round"] == 0)["fingerprint"]
    assert before["tensors"] == 4 and before["loss"] is not None


def test_the_profile_puts_a_share_of_step_time_on_the_loader_finding(io_bound):
    data = io_bound["data"]
    findings = {f["code"]: f for f in data["findings"]}
    assert set(findings) == {"TPF101", "TPF401"}
    assert findings["TPF101"]["path"] == "train.py"
    waits = [e for e in findings["TPF101"]["evidence"] if e["what"] == "waiting on the DataLoader"]
    assert len(waits) == 1 and 0 < waits[0]["share"] <= 1.5
    assert data["profile"]["window_s"] > 0


def test_the_terminal_report_has_both_tables(io_bound):
    output = io_bound["result"].output
    assert "all fixes (TPF101, TPF401 + 1 follow-up)" in output and "speed-up [range]" in output
    assert "Findings in the code the script ran" in output and "share of step time" in output


def test_forward_calls_count_as_steps_for_an_evaluation_script(tmp_path):
    config = {
        "script": str(EXAMPLES / "evaluate.py"),
        "argv0": "evaluate.py",
        "args": ["--passes", "1", "--items", "512", "--depth", "2"],
        "root": str(EXAMPLES),
        "out": str(tmp_path / "out.json"),
        "unit": "forward",
        "warmup": 1,
        "steps": 2,
        "seed": 0,
        "profile_out": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    completed = subprocess.run([sys.executable, str(BOOTSTRAP), str(tmp_path / "config.json")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["status"] == "done" and data["steps_done"] == 3 and len(data["step_times_s"]) == 2
    fingerprint = data["fingerprint"]
    assert len(fingerprint["outputs"]) == 1 and fingerprint["tensors"] > 0  # the model's last output and weights
    assert data["modules"] == ["evaluate.py"]
