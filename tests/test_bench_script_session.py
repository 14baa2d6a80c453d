"""`bench SCRIPT`'s session logic with stand-in runs: which copies run, in what order, with
which fixes, and what the fingerprints and verdicts make of them.

The copies and the fixes are real (linting never runs the code); only ``start``, which would
launch the script, is replaced, so each test takes a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import pytest

from pytorch_perflint.bench.script import copies as script_copies, session as script_session
from pytorch_perflint.bench.script.runs import Request, Run
from pytorch_perflint.bench.verdicts import Kind
from pytorch_perflint.config import load_settings

LOADER = '''import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.tensor(np.array([index, 1.0]))


def main():
    torch.autograd.set_detect_anomaly(True)
    loader = DataLoader(Items(), batch_size=8)
    for batch in loader:
        pass


if __name__ == "__main__":
    main()
'''

CONV_BN = '''import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
'''

GPU_SAFE = '''import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main(dataset):
    loader = DataLoader(dataset, batch_size=8, num_workers=2)
    for batch in loader:
        batch = batch.to(device)
'''

FINGERPRINT = {"tensors": 1, "shapes": [[2]], "sum": 1.0, "norm": 1.0, "each": [[1.0, 1.0]], "outputs": [], "loss": 0.5}


class FakeRuns:
    """Stands in for ``script_runs.start``: a step time per program, a fingerprint, a status."""

    def __init__(self, times: Dict[str, float], fingerprints: Optional[Dict[str, dict]] = None, status: Optional[Dict[str, str]] = None):
        self.times = times
        self.fingerprints = fingerprints or {}
        self.status = status or {}
        self.calls: List[tuple] = []
        self.strict: List[tuple] = []
        self.sources: Dict[str, str] = {}

    def __call__(self, copy, program, index, request, folder, profile=False, strict=False):
        self.calls.append((program, index))
        self.strict.append((program, index, strict))
        self.sources[program] = copy.script.read_text()
        status = self.status.get(program, "done")
        step = self.times.get(program, self.times["before"])
        return Run(
            program,
            index,
            status,
            0 if status == "done" else 1,
            1.0,
            step_times=(step, step, step) if status == "done" else (),
            steps_done=8 if status == "done" else 2,
            fingerprint=self.fingerprints.get(program, FINGERPRINT),
            modules=("train.py",),
            torch={"cuda_used": False, "version": "2.13.0+cpu"},
            error=None if status == "done" else "RuntimeError: fixed copy broke",
            stderr_tail="" if status == "done" else "RuntimeError: fixed copy broke",
        )


def session_for(tmp_path: Path, monkeypatch, source: str, fake: FakeRuns, unsafe: bool = True, **options):
    root = tmp_path / "proj"
    root.mkdir()
    script = root / "train.py"
    script.write_text(source)
    monkeypatch.chdir(root)
    monkeypatch.setattr(script_session, "start", fake)
    settings = load_settings([str(script)], None, {"unsafe_fixes": unsafe})
    project = script_copies.find_project(script, root, root, [script], 100)
    request = Request(steps=3, warmup=5, unit="step", timeout=60)
    return script_session.run(project, settings, request, script_session.Options(**options), temp_parent=str(tmp_path))


def test_every_fixed_rule_gets_its_own_copy_and_the_order_alternates(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.100, "control": 0.100, "after": 0.010, "TPF101": 0.020, "TPF204": 0.050, "TPF401": 0.100})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=2)
    assert [c for c in fake.calls if c[1] == 0] == [("before", 0), ("after", 0), ("TPF101", 0), ("TPF204", 0), ("TPF401", 0), ("control", 0)]
    round1 = [p for p, i in fake.calls if i == 1]
    round2 = [p for p, i in fake.calls if i == 2]
    assert round1 == list(reversed(round2)) and round2[0] == "before" and round2[-1] == "control"
    # each rule's copy holds that rule's fix only; "after" holds them all
    assert "num_workers=4" in fake.sources["TPF101"] and "torch.tensor(" in fake.sources["TPF101"]
    assert "from_numpy" in fake.sources["TPF401"] and "num_workers" not in fake.sources["TPF401"]
    assert "set_detect_anomaly(False)" in fake.sources["TPF204"]
    assert "num_workers=4" in fake.sources["after"] and "from_numpy" in fake.sources["after"]
    verdicts = {o.program.name: o.verdict for o in session.outcomes}
    assert verdicts["after"].kind is Kind.FASTER and verdicts["after"].speedup == pytest.approx(10.0)
    assert verdicts["TPF204"].speedup == pytest.approx(2.0)
    assert verdicts["TPF401"].kind is Kind.INCONCLUSIVE  # 1.0x: inside the noise floor
    assert session.ok and session.determinism.same is True
    assert not any(Path(p).exists() for p in session.copies.values())


def test_per_rule_copies_can_be_turned_off(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.1})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=1, per_rule=False)
    assert {p for p, _ in fake.calls} == {"before", "after", "control"}
    assert [o.program.name for o in session.outcomes] == ["after"]


def test_a_fixed_copy_that_fails_is_a_problem_and_is_not_timed(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.1}, status={"TPF101": "crashed"})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=2)
    assert ("TPF101", 1) not in fake.calls and ("TPF101", 2) not in fake.calls
    failed = next(o for o in session.outcomes if o.program.name == "TPF101")
    assert failed.verdict.kind is Kind.SKIPPED and "fixed copy broke" in failed.failure
    assert not session.ok and any("the fixed copy failed" in p for p in session.problems)


class TimesOutInRoundOne(FakeRuns):
    def __call__(self, copy, program, index, *rest, **kwargs):
        run = super().__call__(copy, program, index, *rest, **kwargs)
        if program == "TPF401" and index == 1:
            return Run(program, index, "timeout", None, 1.0, stderr_tail="still loading")
        return run


def test_a_fixed_copy_that_fails_in_a_later_round_is_not_run_again(tmp_path, monkeypatch):
    fake = TimesOutInRoundOne({"before": 0.1})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=3)
    assert [i for p, i in fake.calls if p == "TPF401"] == [0, 1]
    failed = next(o for o in session.outcomes if o.program.name == "TPF401")
    assert "ran past --timeout" in failed.failure and not session.ok


def test_a_script_that_is_not_deterministic_cannot_be_checked(tmp_path, monkeypatch):
    other = {**FINGERPRINT, "sum": 2.0, "each": [[2.0, 1.0]]}
    fake = FakeRuns({"before": 0.1}, fingerprints={"control": other})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=1, per_rule=False)
    assert session.determinism.same is False
    assert any("not deterministic" in p for p in session.problems)
    assert session.outcomes[0].agreement is None  # before vs after would mean nothing


class NoisyTimedRuns(FakeRuns):
    """A GPU script under its own settings: the timed rounds' fingerprints differ run to run
    (cuDNN's atomics, TF32); the check round's, made deterministic, repeat exactly."""

    def __call__(self, copy, program, index, request, folder, profile=False, strict=False):
        run = super().__call__(copy, program, index, request, folder, profile, strict)
        if strict:
            return run
        noise = 1e-3 * (len(self.calls) + 1)
        fingerprint = {**run.fingerprint, "sum": run.fingerprint["sum"] + noise, "each": [[1.0 + noise, 1.0]]}
        return Run(**{**run.__dict__, "fingerprint": fingerprint})


def test_only_the_check_round_is_compared_and_it_runs_strict(tmp_path, monkeypatch):
    """The first GPU run: train_cifar "is not deterministic" because its timed runs differed
    (conv backward on CUDA); the check runs are deterministic and decide."""
    fake = NoisyTimedRuns({"before": 0.1, "after": 0.05})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=2, per_rule=False)
    assert {(index, strict) for _, index, strict in fake.strict} == {(0, True), (1, False), (2, False)}
    assert session.determinism.same is True and session.ok, session.problems
    assert session.outcomes[0].agreement.same is True and session.outcomes[0].verdict.kind is not Kind.SKIPPED


def test_the_check_round_still_catches_a_real_change(tmp_path, monkeypatch):
    other = {**FINGERPRINT, "loss": 0.75}
    fake = NoisyTimedRuns({"before": 0.1}, fingerprints={"after": other})
    session = session_for(tmp_path, monkeypatch, GPU_SAFE, fake, unsafe=False, rounds=2)
    outcome = next(o for o in session.outcomes if o.program.name == "after")
    assert outcome.agreement.same is False and outcome.agreement.explained_by == ()
    assert session.determinism.same is True and not session.ok


def test_bias_false_explains_a_different_parameter_list(tmp_path, monkeypatch):
    fewer = {**FINGERPRINT, "tensors": 0, "shapes": [], "each": []}
    fake = FakeRuns({"before": 0.1}, fingerprints={"after": fewer})
    session = session_for(tmp_path, monkeypatch, CONV_BN, fake, rounds=1)
    outcome = session.outcomes[0]
    assert outcome.program.fix.codes == ("TPF301",)
    assert outcome.agreement.same is False and outcome.agreement.explained_by == ("TPF301",)
    assert session.ok


def test_a_safe_fix_that_changes_results_is_a_problem(tmp_path, monkeypatch):
    other = {**FINGERPRINT, "loss": 0.75}
    fake = FakeRuns({"before": 0.1}, fingerprints={"after": other})
    session = session_for(tmp_path, monkeypatch, GPU_SAFE, fake, unsafe=False, rounds=1)
    outcome = next(o for o in session.outcomes if o.program.name == "after")
    assert set(outcome.program.fix.codes) == {"TPF102"}  # pin_memory=True, then non_blocking (TPF104)
    assert outcome.program.fix.follow_ups == 1
    assert outcome.agreement.explained_by == () and outcome.verdict.kind is Kind.SKIPPED
    assert not session.ok and any("before and after differ" in p for p in session.problems)


def test_gpu_rules_are_not_run_per_rule_on_a_cpu(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.1})
    source = GPU_SAFE.replace("batch = batch.to(device)", "batch = batch.to(device)\n        noise = torch.randn(8).to(device)")
    session = session_for(tmp_path, monkeypatch, source, fake, rounds=1, per_rule=True)
    skipped = {o.program.name: o.verdict.reason for o in session.outcomes if o.verdict.kind is Kind.SKIPPED}
    assert skipped == {"TPF102": "needs CUDA", "TPF402": "needs CUDA"}
    assert {p for p, _ in fake.calls} == {"before", "after", "control"}


def test_unsafe_fixes_left_out_are_named(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.1})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, unsafe=False, rounds=1)
    assert session.outcomes == () and session.held_back == ("TPF101", "TPF204", "TPF401")
    assert any("add --unsafe-fixes" in note for note in session.notes)
    assert [p for p, _ in fake.calls] == ["before"]  # nothing to compare: no control run either


def test_a_failing_before_run_stops_everything_with_the_script_s_error(tmp_path, monkeypatch):
    fake = FakeRuns({"before": 0.1}, status={"before": "crashed"})
    with pytest.raises(script_session.ScriptFailed, match="fixed copy broke"):
        session_for(tmp_path, monkeypatch, LOADER, fake, rounds=1)
    assert fake.calls == [("before", 0)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(script_session.TEMP_PREFIX)] == []


class StoppedAt(FakeRuns):
    """A signal (SIGTERM from a device check's `timeout`, Ctrl-C) arrives when ``at`` starts."""

    def __init__(self, at, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.at = at

    def __call__(self, copy, program, index, *rest, **kwargs):
        if (program, index) == self.at:
            raise KeyboardInterrupt
        return super().__call__(copy, program, index, *rest, **kwargs)


def test_a_stop_in_the_measured_rounds_keeps_the_rounds_that_finished(tmp_path, monkeypatch):
    """The first GPU run: a script step stopped by `timeout` left no JSON at all."""
    from pytorch_perflint.bench.machine import describe
    from pytorch_perflint.bench.script import report as script_report

    fake = StoppedAt(("after", 3), {"before": 0.1, "control": 0.1, "after": 0.05})
    session = session_for(tmp_path, monkeypatch, LOADER, fake, rounds=3, per_rule=False)
    assert session.stopped == "stopped by SIGINT (Ctrl-C) after 2 of 3 measured rounds"
    outcome = session.outcomes[0]
    assert len(outcome.ratios) == 2 and outcome.verdict.speedup == pytest.approx(2.0)
    assert any("stopped by SIGINT" in p for p in session.problems)
    data = script_report.run_dict(session, describe(), *([__import__("datetime").datetime.now()] * 2))
    assert data["stopped"] == session.stopped and not data["ok"]
    assert not list(tmp_path.glob("perflint-bench-script-*"))  # the copies are gone all the same


def test_a_stop_before_anything_was_timed_is_still_an_interruption(tmp_path, monkeypatch):
    fake = StoppedAt(("control", 0), {"before": 0.1})
    with pytest.raises(script_session.Interrupted):
        session_for(tmp_path, monkeypatch, LOADER, fake, rounds=2, per_rule=False)


class EpochBoundary(FakeRuns):
    """The H200's train_cifar runs: the fixed copy's steps take 2.5 ms except the one that
    crosses an epoch boundary, where its new DataLoader workers start (260 ms)."""

    def __call__(self, copy, program, index, *rest, **kwargs):
        run = super().__call__(copy, program, index, *rest, **kwargs)
        steady = {"before": 0.007, "control": 0.007}.get(program, 0.0025)
        boundary = {"before": 0.045, "control": 0.045}.get(program, 0.26)
        times = (steady,) * 4 + (boundary,) + (steady,) * 5
        return Run(**{**run.__dict__, "step_times": times})


def test_a_fix_that_adds_workers_gets_a_note_when_start_up_dominates(tmp_path, monkeypatch):
    from pytorch_perflint.bench.script.startup import startup_notes

    session = session_for(tmp_path, monkeypatch, LOADER, EpochBoundary({"before": 0.1}), rounds=2, per_rule=True)
    outcome = next(o for o in session.outcomes if o.program.name == "after")
    assert outcome.verdict.kind is Kind.SLOWER  # measured as it is: the note explains, never changes it
    notes = startup_notes(session)
    labels = [note.split(":")[0] for note in notes]
    assert labels == ["all fixes", "TPF101"]  # the copies with TPF101's workers, not TPF204's or TPF401's
    assert "up to 260 ms, against a median step of 2.5 ms" in notes[0] and "before 7 ms, after 2.5 ms (2.80x)" in notes[0]


def test_no_start_up_note_without_a_dominating_slow_step(tmp_path, monkeypatch):
    from pytorch_perflint.bench.script.startup import startup_notes

    session = session_for(tmp_path, monkeypatch, LOADER, FakeRuns({"before": 0.1, "after": 0.05}), rounds=2, per_rule=False)
    assert startup_notes(session) == []
