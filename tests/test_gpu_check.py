"""`scripts/gpu_check.sh`, the one-command device check, kept from rotting without a GPU.

The GPU machine starts bare (no libcst, no network), so the script installs missing
packages from carried wheels, prints the machine, runs every scenario, then `bench SCRIPT`
on the examples, and writes JSON, charts and a Markdown summary. Here the same steps run
on the CPU at quick sizes (`--device cpu --quick`), and the wheel step against a wheel
built in the test. Nothing is timed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytorch_perflint.bench.scenario import discover

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "gpu_check.sh"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the check runs torch")


def _run(tmp_path: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, OUT=str(tmp_path / "out"), PYTHON=sys.executable, TMPDIR=str(tmp_path), **env)
    full.pop("PYTHONPATH", None)  # the script puts this checkout first itself
    return subprocess.run(["bash", str(CHECK), *args], cwd=tmp_path, env=full, capture_output=True, text=True, timeout=timeout)


def test_every_scenario_has_cuda_sizes():
    """The device check runs each scenario at its "cuda" sizes; a scenario without them
    would be timed at CPU sizes on the GPU (the harness falls back), which says little."""
    missing = [s.code for s in discover() if "cuda" not in s.sizes]
    assert missing == []


def _probe_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel, standing in for libcst's."""
    folder.mkdir()
    path = folder / "perflint_wheel_probe-1.0-py3-none-any.whl"
    info = "perflint_wheel_probe-1.0.dist-info"
    files = {
        "perflint_wheel_probe/__init__.py": "VALUE = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: perflint-wheel-probe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in list(files) + [f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_missing_packages_come_from_the_carried_wheels_without_network(tmp_path):
    _probe_wheel(tmp_path / "wheels")
    site = tmp_path / "site"
    result = _run(
        tmp_path,
        "--deps-only",
        PERFLINT_WHEELS=str(tmp_path / "wheels"),
        PERFLINT_CHECK_NEEDS="perflint_wheel_probe click",
        PERFLINT_SITE=str(site),
        PIP_NO_INDEX="1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"perflint_wheel_probe: {site / 'perflint_wheel_probe' / '__init__.py'}" in result.stdout
    assert "missing: perflint_wheel_probe" in result.stdout  # click was already there: only the probe was missing


def test_without_the_wheels_the_check_says_how_to_get_them(tmp_path):
    result = _run(tmp_path, "--deps-only", PERFLINT_WHEELS=str(tmp_path / "none"), PERFLINT_CHECK_NEEDS="perflint_wheel_probe")
    assert result.returncode == 2
    assert "missing Python packages: perflint_wheel_probe" in result.stderr and "scripts/gpu_wheels.sh" in result.stderr


def test_wheels_are_ignored_and_fetched_for_the_device_image():
    assert ".whl/" in (ROOT / ".gitignore").read_text().splitlines()
    wheels = (ROOT / "scripts" / "gpu_wheels.sh").read_text()
    assert "--python-version 3.12" in wheels and "manylinux2014_x86_64" in wheels and "--only-binary=:all:" in wheels
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_wheels.sh")]).returncode == 0


@needs_torch
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = _run(tmp_path, "--device", "cuda", "--quick")
    assert result.returncode == 2
    assert "torch sees no CUDA device" in result.stderr and "--device cpu" in result.stderr
    assert "gpu (nvidia-smi)" in (tmp_path / "out" / "machine.txt").read_text()


@needs_torch
@pytest.mark.slow
def test_the_device_check_runs_end_to_end_on_the_cpu(tmp_path):
    pytest.importorskip("matplotlib")
    result = _run(
        tmp_path,
        "--device",
        "cpu",
        "--quick",
        timeout=540,
        PERFLINT_CHECK_RULES="TPF204 TPF102",
        PERFLINT_CHECK_EXAMPLES="train_anomaly_left_on.py",
    )
    out = tmp_path / "out"
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for name in ("machine.txt", "bench.json", "bench.png", "bench.log", "summary.md", "script-train_anomaly_left_on.json", "script-train_anomaly_left_on.png"):
        assert (out / name).is_file(), name
    machine = (out / "machine.txt").read_text()
    assert "torch " in machine and "cuda available: False" in machine
    bench = json.loads((out / "bench.json").read_text())
    assert [r["code"] for r in bench["results"]] == ["TPF204", "TPF102"]
    assert bench["results"][1]["verdict"]["kind"] == "skipped"
    summary = (out / "summary.md").read_text()
    verdict = bench["results"][0]["verdict"]
    shown = f"{verdict['speedup']:.2f}x [{verdict['ratio_min']:.2f}-{verdict['ratio_max']:.2f}]"
    assert shown in summary and shown in (out / "bench.log").read_text()  # the same figure everywhere
    script = json.loads((out / "script-train_anomaly_left_on.json").read_text())
    assert script["results"][0]["label"] in summary
    assert "What the fixes gain on whole scripts" in summary.split("micro-benchmarks")[0]  # the headline first
    assert "[1/2] TPF204 cpu:" in result.stdout  # a log line per scenario


@needs_torch
def test_the_budget_keeps_time_for_every_example_and_shares_it(tmp_path):
    """The first H200 run: the scenario step kept 150 s back for two examples that needed
    about 150 s each, and the first example could take all that was left (train_cifar got
    11 s and was skipped). Now the scenarios leave a share per example (15 s each with
    --quick) and each example gets an even share of what is left."""
    result = _run(
        tmp_path,
        "--device",
        "cpu",
        "--quick",
        timeout=300,
        PERFLINT_CHECK_BUDGET_S="400",
        PERFLINT_CHECK_RULES="TPF501",
        PERFLINT_CHECK_EXAMPLES="no_such_a.py no_such_b.py",  # each fails at once: only the limits matter
    )
    import re

    scenario = int(re.search(r"== bench --device cpu \((\d+) s at most\)", result.stdout).group(1))
    first, second = (int(n) for n in re.findall(r"== bench examples/no_such_\w\.py \((\d+) s at most\)", result.stdout))
    assert 400 - 10 - 2 * 15 - 15 <= scenario <= 400 - 10 - 2 * 15  # the machine step takes a few seconds
    assert first <= (400 - 10) // 2 and second >= first - 15  # an even share, not all that is left
    assert result.returncode == 1  # the examples failed
