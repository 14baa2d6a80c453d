"""The GitHub Action (action.yml): its inputs are ruff-action's, and its shell steps are
valid invocations of this CLI, run here as the runner would run them (inputs substituted
into the steps' environment) on a small project."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # comes with pre-commit (the test extra)

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def _inputs(**given: str) -> dict:
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(values)
    assert not unknown, unknown
    values.update(given)
    return values


def _runs(step: dict, inputs: dict) -> bool:
    """The `if:` conditions this action uses: `inputs.NAME != ''` (and no condition)."""
    condition = step.get("if")
    if condition is None:
        return True
    match = re.fullmatch(r"inputs\.([\w-]+) != ''", condition.strip())
    assert match, f"the test does not know the condition {condition!r}"
    return inputs[match.group(1)] != ""


def _step(name: str) -> dict:
    return next(step for step in ACTION["runs"]["steps"] if step.get("name") == name)


def _run_step(step: dict, inputs: dict, cwd: Path, path_prefix: str = "") -> subprocess.CompletedProcess:
    assert step["shell"] == "bash"
    env = dict(os.environ)
    env.pop("PYTORCH_PERFLINT_OUTPUT_FORMAT", None)
    for key, value in (step.get("env") or {}).items():
        env[key] = EXPRESSION.sub(lambda m: inputs[m.group(1)], str(value))
    assert "${{" not in step["run"], "inputs reach the script through env only (no injection)"
    env["PATH"] = os.pathsep.join(p for p in (path_prefix, str(Path(sys.executable).parent), env["PATH"]) if p)
    env["GITHUB_ACTION_PATH"] = str(ROOT)
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import torch\nmodel = torch.nn.DataParallel(model)\n")
    (tmp_path / "docs.py").write_text("x = 1\n")
    return tmp_path


def test_inputs_and_steps_are_those_of_ruff_action():
    assert ACTION["runs"]["using"] == "composite"
    assert {"args", "src", "version", "sarif"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["args"]["default"] == "check"
    uses = [step["uses"] for step in ACTION["runs"]["steps"] if "uses" in step]
    assert all(re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", u) for u in uses), uses
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)


def test_lint_step_annotates_findings_and_fails(project):
    inputs = _inputs()
    proc = _run_step(_step("Lint"), inputs, project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "::warning title=pytorch-perflint (TPF501),file=src/train.py,line=2,col=9,endLine=2,endColumn=37::"
        "TPF501 `nn.DataParallel` is single-process and slower than `DistributedDataParallel`; use DDP with one process per GPU (`torchrun`)"
    ]


def test_lint_step_takes_args_and_src(project):
    assert _run_step(_step("Lint"), _inputs(args="check --ignore TPF501"), project).returncode == 0
    assert _run_step(_step("Lint"), _inputs(src="docs.py"), project).returncode == 0
    concise = _run_step(_step("Lint"), _inputs(args="check --output-format concise"), project)
    assert concise.stdout.startswith("src/train.py:2:9: TPF501")  # a format in args wins


def test_sarif_step_writes_sarif_only_when_asked(project):
    step = _step("Write SARIF")
    assert not _runs(step, _inputs())
    inputs = _inputs(sarif="reports/perflint.sarif")
    assert _runs(step, inputs) and _runs(_step("Upload SARIF"), inputs)
    assert _step("Upload SARIF")["with"]["sarif_file"] == "${{ inputs.sarif }}"
    proc = _run_step(step, inputs, project)
    assert proc.returncode == 0, proc.stderr
    log = json.loads((project / "reports" / "perflint.sarif").read_text())
    assert log["version"] == "2.1.0"
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["TPF501"]


def test_install_step_installs_the_action_or_the_asked_version(project, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "calls.txt"
    (fake / "python3").write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\n')
    (fake / "python3").chmod(0o755)
    step = _step("Install pytorch-perflint")
    assert _run_step(step, _inputs(), project, str(fake)).returncode == 0
    assert _run_step(step, _inputs(version="0.1.0"), project, str(fake)).returncode == 0
    assert calls.read_text().splitlines() == [
        f"-m pip install --quiet {ROOT}",
        "-m pip install --quiet pytorch-perflint==0.1.0",
    ]
    assert (ROOT / "pyproject.toml").is_file()
