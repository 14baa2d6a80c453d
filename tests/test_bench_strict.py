"""The equivalence check runs with deterministic algorithms and full float32; timing does not.

On the first GPU run the TPF301 scenario failed its check ("before and after differ") in
one run and passed in the next: cuDNN's nondeterministic algorithms and TF32 convolutions
made two runs of the same arithmetic differ by more than the tolerance. A CPU cannot show
cuDNN, so the programs here stand in for it: their result carries run-to-run noise unless
the deterministic, full-float32 settings are on, as a cuDNN convolution's does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_perflint.bench import harness
from pytorch_perflint.bench.programs import ProgramCheck, Programs
from pytorch_perflint.bench.scenario import Scenario

# A program whose result is noisy unless deterministic algorithms are on and TF32 is off,
# and which logs the settings each call saw. AFTER computes the same, with a comment.
NOISY = '''\
import os

import torch


def strict_now():
    return (
        torch.are_deterministic_algorithms_enabled()
        and torch.backends.cudnn.deterministic
        and not torch.backends.cudnn.allow_tf32
        and not torch.backends.cuda.matmul.allow_tf32
    )


def setup(size, device):
    return size["log"], size.get("scale", 1.0)


def run(state):
    log, scale = state
    strict = strict_now()
    with open(log, "a") as handle:
        handle.write(f"{__name__.split('_')[1]} {'strict' if strict else 'default'} tf32={torch.backends.cuda.matmul.allow_tf32}\\n")
    noise = 0.0 if strict else int.from_bytes(os.urandom(2), "little") * 1e-6
    return torch.ones(3) * scale + noise
'''

TF32_ON_PURPOSE = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True  # the program's own choice\n" + NOISY.replace(
    "        and not torch.backends.cuda.matmul.allow_tf32\n", ""
)


def _programs(before: str, after: str) -> Programs:
    check = ProgramCheck("TPF301", True, 1, 0, 1, "tool-fix", "unsafe", ("message",), ())
    scenario = Scenario(code="TPF301", title="stand-in", before=before, sizes={"quick": {}, "cpu": {}}, rtol=1e-5, atol=1e-6)
    return Programs(scenario, before, after, check)


def _run(programs: Programs, log: Path, scale: float = 1.0) -> harness.ScenarioResult:
    from pytorch_perflint.bench.loading import Workspace

    options = harness.Options(quick=True, rounds=2, min_run_time=0.002)
    scenario = programs.scenario
    sized = Scenario(**{**scenario.__dict__, "sizes": {"quick": {"log": str(log)}, "cpu": {"log": str(log)}}})
    programs = Programs(sized, programs.before, programs.after.replace("size.get(\"scale\", 1.0)", repr(scale)), programs.check)
    with Workspace() as workspace:
        return harness.run_one(programs, "cpu", options, workspace, lambda steps, text: None)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_the_check_is_deterministic_and_timing_keeps_the_defaults(torch, tmp_path):
    log = tmp_path / "calls.log"
    result = _run(_programs(NOISY, NOISY + "# fixed\n"), log)
    assert result.equivalence.ok and result.determinism.ok, result.problems
    assert result.verdict.kind.value != "skipped" and result.rounds  # it went on to be timed
    calls = log.read_text().splitlines()
    # The first three calls are the check (before, after, control), all strict; every timed call kept the defaults.
    assert [c.split()[1] for c in calls[:3]] == ["strict"] * 3
    assert {c.split()[1] for c in calls[3:]} == {"default"} and len(calls) > 6
    assert not torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.allow_tf32  # the process's defaults are back


def test_the_check_still_catches_a_real_change(torch, tmp_path):
    result = _run(_programs(NOISY, NOISY + "# fixed\n"), tmp_path / "calls.log", scale=1.001)
    assert not result.equivalence.ok and result.determinism.ok
    assert result.verdict.reason == "check failed: before and after differ"


def test_a_program_that_chose_tf32_keeps_it_in_the_check(torch, tmp_path):
    """A fix that turns TF32 on (TPF603) is checked with TF32 on: its tolerance is TF32's,
    and the check must see the arithmetic the fix ships."""
    log = tmp_path / "calls.log"
    _run(_programs(TF32_ON_PURPOSE, TF32_ON_PURPOSE + "# fixed\n"), log)
    first = log.read_text().splitlines()[0]
    assert first.endswith("strict tf32=True"), first
    assert not torch.backends.cuda.matmul.allow_tf32


# A script whose loss says which settings its training step saw: 1.0 under the check's
# (deterministic algorithms, cuDNN deterministic, no TF32, deterministic cuBLAS), 2.0 otherwise.
SCRIPT = '''import os

import torch

weight = torch.nn.Parameter(torch.zeros(1))
optimizer = torch.optim.SGD([weight], lr=0.0)
strict = (
    torch.are_deterministic_algorithms_enabled()
    and torch.backends.cudnn.deterministic
    and not torch.backends.cudnn.allow_tf32
    and os.environ.get("CUBLAS_WORKSPACE_CONFIG") == ":4096:8"
)
for _ in range(3):
    optimizer.zero_grad()
    loss = (weight * 0).sum() + (1.0 if strict else 2.0)
    loss.backward()
    optimizer.step()
'''


def test_script_check_runs_are_strict_and_timed_runs_are_not(torch, tmp_path, monkeypatch):
    from pytorch_perflint.bench.script import copies as script_copies
    from pytorch_perflint.bench.script.runs import Request, start

    root = tmp_path / "proj"
    root.mkdir()
    script = root / "train.py"
    script.write_text(SCRIPT)
    monkeypatch.chdir(root)
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    project = script_copies.find_project(script, root, root, [script], 100)
    work = tmp_path / "work"
    (work / "runs").mkdir(parents=True)
    copy = script_copies.make_copy(project, work / "before", "before", [work])
    request = Request(steps=1, warmup=1, unit="step", timeout=120)
    losses = {}
    for strict in (True, False):
        run = start(copy, "before", 0 if strict else 1, request, work / "runs", strict=strict)
        assert run.ok, run.stderr_tail
        losses[strict] = run.fingerprint["loss"]
    assert losses == {True: 1.0, False: 2.0}
