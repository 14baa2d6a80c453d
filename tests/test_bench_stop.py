"""A scenario run that is stopped keeps every scenario that finished.

The first GPU run's `bench --device cuda` ran past the device check's `timeout`: SIGTERM,
then SIGKILL, and no JSON or chart at all, though 17 of 20 scenarios had finished. Now the
JSON is rewritten after every scenario (marked incomplete, with what is still to come), and
SIGTERM ends the run writing the JSON and the chart of what finished, saying so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytorch_perflint.bench.summary import markdown

ROOT = Path(__file__).resolve().parent.parent


def test_sigterm_keeps_the_finished_scenarios_and_names_the_rest(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    out_json, out_png = tmp_path / "bench.json", tmp_path / "bench.png"
    # TPF501 is only checked on a CPU (needs 2+ GPUs): it finishes in a second. TPF204 is
    # timed with a long --min-run-time, so the signal lands while it runs.
    command = [sys.executable, "-m", "pytorch_perflint.bench", "--quick", "--device", "cpu", "--rounds", "2", "--min-run-time", "3"]
    command += ["--rule", "TPF501", "--rule", "TPF204", "--rule", "TPF401", "--json", str(out_json), "--plot", str(out_png)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if line.startswith("[1/3] TPF501"):
                break
        # Before any signal: the JSON already holds the finished scenario, marked incomplete.
        early = json.loads(out_json.read_text())
        assert [r["code"] for r in early["results"]] == ["TPF501"]
        assert early["complete"] is False and early["not_run"] == ["TPF204 cpu", "TPF401 cpu"]
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    output = "".join(seen) + rest
    assert process.returncode == 1, output
    data = json.loads(out_json.read_text())
    assert [r["code"] for r in data["results"]] == ["TPF501"]
    assert data["complete"] is False and data["stopped"] == "stopped by SIGTERM"
    assert data["planned"] == ["TPF501 cpu", "TPF204 cpu", "TPF401 cpu"]
    assert data["not_run"] == ["TPF204 cpu", "TPF401 cpu"]
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert "stopped by SIGTERM after 1 of 3 scenario run(s); not run: TPF204 cpu, TPF401 cpu" in output
    assert not list(tmp_path.glob(".bench.json.*"))  # no temporary file left behind
    summary = markdown(tmp_path)
    assert "| TPF501 | cpu |" in summary
    assert "did not finish**: stopped by SIGTERM, after 1 of 3 scenario runs. Not run: TPF204 cpu, TPF401 cpu." in summary


def test_a_killed_run_still_says_it_did_not_finish(tmp_path):
    """SIGKILL leaves the JSON of the last finished scenario, with no reason written: the
    summary says the run did not finish and what is missing."""
    data = {"complete": False, "stopped": None, "planned": ["TPF101 cuda", "TPF102 cuda"], "not_run": ["TPF102 cuda"], "results": []}
    (tmp_path / "bench.json").write_text(json.dumps(data))
    summary = markdown(tmp_path)
    assert "did not finish**: killed before it could finish" in summary and "Not run: TPF102 cuda." in summary
    complete = {"results": []}  # a JSON from before these fields: complete
    (tmp_path / "bench.json").write_text(json.dumps(complete))
    assert "did not finish" not in markdown(tmp_path)


def test_the_summary_names_a_stopped_script_and_its_notes():
    from pytorch_perflint.bench.summary import scripts_section

    data = {"device": "cuda", "results": [], "stopped": "stopped by SIGTERM after 1 of 2 measured rounds", "measurement_notes": ["all fixes: workers start"]}
    text = "\n".join(scripts_section({"train_cifar": data}))
    assert "- train_cifar: the run was stopped by SIGTERM after 1 of 2 measured rounds; the rows use the rounds that finished." in text
    assert "- train_cifar: all fixes: workers start" in text
