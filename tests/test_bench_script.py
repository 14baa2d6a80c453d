"""`bench SCRIPT`: dispatch, copies, fingerprints, evidence, and scripts that do not run.

These tests run scripts that never import torch, so every run is a fraction of a second:
crashes, scripts without a step, scripts that read stdin or run too long, Ctrl-C. The runs on
real training scripts are in test_bench_script_e2e.py. No timing is asserted anywhere.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from pytorch_perflint.bench.script import copies as script_copies, evidence as script_evidence, fingerprints as script_fingerprints
from pytorch_perflint.bench.cli import bench
from pytorch_perflint.bench.script.cli import bench_script, names_a_script, output_problem
from pytorch_perflint.bench.script.fixes import Finding
from pytorch_perflint.bench.script.runs import Request, Run, describe_failure
from pytorch_perflint.bench.script.session import TEMP_PREFIX, device_skip

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
needs_torch = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None, reason="bench SCRIPT needs torch installed"
)


def tree_digest(root: Path) -> dict:
    """Every file under root (symlinks as their targets' text), byte for byte."""
    digest = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() or path.is_symlink():
            digest[str(path.relative_to(root))] = os.readlink(path) if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    """Where bench puts its copies, so a test can see they are gone afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def invoke(*args: str):
    return CliRunner().invoke(bench, list(args), catch_exceptions=False)


# -- dispatch -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], False),
        (["--quick"], False),
        (["--rule", "TPF101", "--device", "cpu"], False),
        (["--json", "out.json", "--plot=out.png"], False),
        (["train.py"], True),
        (["--steps", "3", "train.py"], True),
        (["--unsafe-fixes", "train.py", "--", "--epochs", "1"], True),
        (["--json=x.json", "--", "train.py"], True),
    ],
)
def test_a_positional_argument_selects_script_mode(args, expected):
    assert names_a_script(args, (bench, bench_script)) is expected


def test_bench_help_points_at_script_mode_and_script_help_is_its_own():
    scenario_help = invoke("--help").output
    assert "--rule" in scenario_help and "bench SCRIPT --help" in scenario_help
    script_help = invoke("train.py", "--help").output
    assert "--steps" in script_help and "RUNS YOUR SCRIPT" in script_help and "--rule" not in script_help


def test_script_options_without_a_script_are_a_usage_error():
    result = invoke("--steps", "3")
    assert result.exit_code == 2 and "--steps" in result.output


def test_a_missing_script_is_a_usage_error(project):
    result = invoke("nope.py")
    assert result.exit_code == 2 and "nope.py" in result.output


def test_a_notebook_is_refused_with_the_way_out(project):
    (project / "train.ipynb").write_text("{}")
    result = invoke("train.ipynb")
    assert result.exit_code == 2 and "nbconvert --to script" in result.output


def test_output_paths_are_checked_before_anything_runs(project, temp_root):
    (project / "train.py").write_text("raise SystemExit('must not run')\n")
    (project / "out").mkdir()
    result = invoke("train.py", "--json", "out")
    assert result.exit_code == 2 and "--json out: is a folder" in result.output
    assert output_problem(project / "new" / "deeper" / "x.json", "--json") is None
    (project / "file").write_text("")
    assert "not a folder" in output_problem(project / "file" / "x.png", "--plot")


# -- copies ---------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@needs_git
def test_copies_hold_copies_and_link_only_ignored_folders_and_big_files(project, tmp_path):
    (project / "train.py").write_text("import model\n")
    (project / "model.py").write_text("X = 1\n")
    (project / "config.yaml").write_text("lr: 1\n")
    (project / "data").mkdir()
    (project / "data" / "train.csv").write_text("1,2\n")
    (project / "data" / "big.bin").write_bytes(b"x" * 3000)
    (project / "outputs").mkdir()
    (project / "outputs" / "generated.py").write_text("Y = 2\n")
    (project / ".gitignore").write_text("outputs/\n")
    _git(project, "init", "-q")
    from pytorch_perflint.bench.script.cli import _code_files
    from pytorch_perflint.config import load_settings

    settings = load_settings([str(project / "train.py")])
    code = _code_files(project, settings)
    assert sorted(p.name for p in code) == ["model.py", "train.py"]  # the ignored one is not code to copy
    found = script_copies.find_project(project / "train.py", project, project, code, 100, link_above_mb=0.002)
    before = tree_digest(project)
    copy = script_copies.make_copy(found, tmp_path / "copy", "before")
    assert not (copy.root / "train.py").is_symlink() and (copy.root / "train.py").read_text() == "import model\n"
    for copied in ("model.py", "config.yaml", "data", "data/train.csv", ".gitignore"):
        assert not (copy.root / copied).is_symlink() and (copy.root / copied).exists(), copied
    for linked in ("outputs", ".git", "data/big.bin"):  # ignored by git, git's own, over the size
        assert (copy.root / linked).is_symlink(), linked
    assert (copy.root / "data" / "train.csv").read_text() == "1,2\n"  # ./data resolves from the copy
    assert copy.workdir == copy.root and copy.script == copy.root / "train.py"
    note = " ".join(found.notes)
    assert "outputs/ (ignored by git)" in note and "data/big.bin (0 MB, over --link-above-mb 0.002)" in note
    script_copies.remove(copy.root)
    assert not copy.root.exists()
    assert tree_digest(project) == before  # removing the copy never follows its links


def test_link_watch_sees_writes_through_a_link(project, tmp_path):
    (project / "train.py").write_text("")
    (project / "ckpt").mkdir()
    (project / "ckpt" / "model.pt").write_bytes(b"old")
    found = script_copies.find_project(project / "train.py", project, project, [project / "train.py"], 100, link_above_mb=0.000001)
    copy = script_copies.make_copy(found, tmp_path / "copy", "before")
    watch = script_copies.LinkWatch(script_copies.linked_entries(copy))
    assert watch.changes() == []
    (copy.root / "ckpt" / "model.pt").write_bytes(b"newer")
    assert str(project / "ckpt" / "model.pt") in watch.changes()


def test_a_project_too_big_to_copy_is_refused_with_its_largest_folders(project):
    (project / "train.py").write_text("")
    (project / "vendor").mkdir()
    (project / "vendor" / "big.py").write_text("#" * 300_000)
    files = [project / "train.py", project / "vendor" / "big.py"]
    with pytest.raises(script_copies.CopyError, match=r"vendor/ 0\.3 MB.*--max-copy-mb"):
        script_copies.find_project(project / "train.py", project, project, files, 0.2)


def test_the_root_is_the_config_s_folder_else_the_project_s(tmp_path):
    script = tmp_path / "home" / "repo" / "examples" / "train.py"
    script.parent.mkdir(parents=True)
    home, repo = tmp_path / "home", tmp_path / "home" / "repo"
    assert script_copies.project_root(script, str(repo), True, home) == repo
    assert script_copies.project_root(script, None, False, home) == home  # nothing marks a project
    assert script_copies.project_root(script, None, False, tmp_path / "elsewhere") == script.parent
    (repo / ".git").mkdir()
    assert script_copies.project_root(script, None, False, home) == repo  # not the whole home folder


# -- fingerprints ---------------------------------------------------------------------------


def _print(total: float = 1.5, shapes=((4, 2), (4,)), loss: float = 0.25) -> dict:
    each = [[total / len(shapes), 2.0]] * len(shapes)
    return {"tensors": len(shapes), "shapes": [list(s) for s in shapes], "sum": total, "norm": 2.0 * len(shapes) ** 0.5, "each": each, "outputs": [], "loss": loss}


def test_fingerprints_agree_within_float_noise_and_not_beyond():
    assert script_fingerprints.compare(_print(), _print(1.5 + 1e-9)).same is True
    different = script_fingerprints.compare(_print(), _print(loss=0.3))
    assert different.same is False and different.kind == "values" and "loss" in different.detail
    assert script_fingerprints.compare(_print(), None).same is None


def test_only_unsafe_fixes_that_change_results_explain_a_difference():
    fewer = script_fingerprints.compare(_print(), _print(shapes=((4, 2),)))
    assert fewer.kind == "shapes" and not fewer.ok
    explained = script_fingerprints.explain(fewer, ["TPF301", "TPF204"])
    assert explained.explained_by == ("TPF301",) and explained.ok
    assert "bias=False" in script_fingerprints.reasons(explained.explained_by)
    # anomaly mode off or no_grad never changes the numbers: they explain nothing
    assert not script_fingerprints.explain(fewer, ["TPF204", "TPF203"]).ok
    values = script_fingerprints.compare(_print(), _print(loss=0.5))
    assert script_fingerprints.explain(values, ["TPF402"]).explained_by == ("TPF402",)


# -- runtime evidence -----------------------------------------------------------------------


def _finding(code: str, line: int, path: str = "train.py") -> Finding:
    return Finding(code, code.lower(), "message", path, line, 1, "unsafe")


def test_profile_time_is_mapped_to_the_findings_it_bears_on():
    root = "/tmp/copy/before"
    profile = {
        "window_s": 2.0,
        "rows": [
            {"category": "dataloader", "location": f"{root}/train.py:30", "seconds": 1.0, "count": 10},
            {"category": "sync", "location": f"{root}/train.py:41", "seconds": 0.1, "count": 10},
            {"category": "sync", "location": f"{root}/lib/util.py:7", "seconds": 0.2, "count": 10},
            {"category": "anomaly", "location": f"{root}/train.py:38", "seconds": 0.4, "count": 99},
        ],
        "patterns": [{"pattern": "Gradient Set To Zero Instead of None Pattern", "location": f"{root}/train.py:36", "seconds": 0.02, "count": 5}],
    }
    findings = [_finding("TPF101", 12), _finding("TPF202", 41), _finding("TPF204", 8), _finding("TPF201", 36)]
    found = script_evidence.evidence(profile, findings, root)
    shares = {e.finding.code: round(e.share, 3) for e in found if e.finding is not None}
    assert shares == {"TPF101": 0.5, "TPF202": 0.05, "TPF204": 0.2, "TPF201": 0.01}
    loose = script_evidence.unexplained(found)
    assert [(e.what, e.where, e.share) for e in loose] == [("host syncs (.item(), synchronize)", "lib/util.py:7", 0.1)]


def test_gpu_only_rules_are_not_measured_on_a_cpu_run():
    assert device_skip("TPF102", None) == "needs CUDA"
    assert device_skip("TPF101", None) is None
    gpu_run = Run("before", 0, "done", 0, 1.0, torch={"cuda_used": True, "gpus": ["H100"]})
    assert device_skip("TPF102", gpu_run) is None


# -- scripts that do not run as they are ------------------------------------------------------


def _fails(project: Path, temp_root: Path, source: str, *options: str, data: bool = True):
    (project / "train.py").write_text(source)
    if data:
        (project / "data").mkdir(exist_ok=True)
        (project / "data" / "x.csv").write_text("1\n")
    before = tree_digest(project)
    result = invoke("train.py", "--steps", "2", "--warmup", "1", "--rounds", "1", *options)
    assert result.exit_code == 2, result.output
    assert "does not run as it is" in result.output
    assert tree_digest(project) == before
    assert list(temp_root.iterdir()) == []  # the copies are gone
    return result.output


@needs_torch
def test_a_crashing_script_gives_exit_2_and_its_stderr(project, temp_root):
    output = _fails(project, temp_root, "print('starting')\nraise RuntimeError('out of memory, pretend')\n")
    assert "RuntimeError: out of memory, pretend" in output
    assert "last lines of its stderr" in output and "train.py" in output


@needs_torch
def test_a_script_without_an_optimizer_step_says_so(project, temp_root):
    output = _fails(project, temp_root, "print('evaluating')\n")
    assert "without a single optimizer step" in output and "--unit forward" in output


@needs_torch
def test_a_missing_dataset_gives_a_hint_about_paths(project, temp_root):
    output = _fails(project, temp_root, "open('data/train.csv').read()\n")
    assert "FileNotFoundError" in output and "relative paths resolve" in output


@needs_torch
def test_a_script_that_asks_for_input_fails_at_once(project, temp_root):
    output = _fails(project, temp_root, "name = input('run name? ')\n")
    assert "EOFError" in output and "standard input" in output


@needs_torch
def test_a_script_past_the_timeout_is_stopped(project, temp_root):
    started = time.monotonic()
    output = _fails(project, temp_root, "import time\ntime.sleep(120)\n", "--timeout", "2")
    assert "ran past --timeout 2 s" in output
    assert time.monotonic() - started < 60


@needs_torch
def test_a_script_exiting_with_an_error_status(project, temp_root):
    output = _fails(project, temp_root, "import sys\nprint('no GPU', file=sys.stderr)\nsys.exit(3)\n")
    assert "exited early" in output and "no GPU" in output


@needs_torch
def test_ctrl_c_kills_the_runs_and_removes_the_copies(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    temp = tmp_path / "tmp"
    temp.mkdir()
    marker = tmp_path / "child.pid"
    (project / "train.py").write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(marker)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(120)\n"
    )
    env = dict(os.environ, TMPDIR=str(temp))
    process = subprocess.Popen(
        [sys.executable, "-m", "pytorch_perflint", "bench", "train.py", "--timeout", "100"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text().strip().count(" ") == 1):
            assert time.monotonic() < deadline, "the script never started"
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        pids = [int(p) for p in marker.read_text().split()]
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert list(temp.iterdir()) == []
    for pid in pids:  # the script and the process it started are both gone
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def test_failure_messages_name_the_cause():
    request = Request(steps=30, warmup=5, unit="step", timeout=600)
    short = Run("before", 0, "ended", 0, 1.0, steps_done=12)
    assert "after 12 optimizer steps, fewer than --warmup 5 + --steps 30 = 35" in describe_failure(short, request)
    forward = Request(steps=30, warmup=5, unit="forward", timeout=600)
    none = Run("before", 0, "ended", 0, 1.0)
    assert "forward call" in describe_failure(none, forward) and "--unit forward" not in describe_failure(none, forward)


def test_the_temporary_prefix_is_recognisable():
    assert TEMP_PREFIX.startswith("perflint-bench-")


def test_report_shows_needs_cuda_rows_for_gpu_rules_on_a_cpu_run():
    from pytorch_perflint.bench.script.copies import Project
    from pytorch_perflint.bench.script.report import machine_of, print_report
    from pytorch_perflint.bench.script.session import Options, Outcome, Program, Session
    from pytorch_perflint.bench.verdicts import skipped

    project = Project(Path("/p"), Path("/p/train.py"), Path("."), (Path("train.py"),), 10)
    findings = (
        Finding("TPF102", "dataloader-no-pin-memory", "pin it", "train.py", 9, 1, "safe"),
        Finding("TPF202", "host-sync-in-training-loop", "sync", "train.py", 20, 1, "display-only"),
    )
    run = Run("before", 0, "done", 0, 1.0, step_times=(0.01, 0.01), torch={"version": "2.13.0+cpu", "cuda_used": False})
    session = Session(
        project=project,
        request=Request(steps=2, warmup=1, unit="step", timeout=10),
        options=Options(rounds=1),
        findings=findings,
        held_back=(),
        outcomes=(Outcome(Program("TPF102", "TPF102", None, "needs CUDA"), skipped("needs CUDA")),),
        runs=(run,),
        determinism=None,
    )
    console = Console(record=True, width=200)
    print_report(console, session, machine_of(session))
    text = console.export_text()
    assert "TPF102 dataloader-no-pin-memory" in text and "skipped: needs CUDA" in text
    assert text.count("needs CUDA") >= 3  # the speed row, and both findings' "measured" cells


def test_a_busy_machine_gets_the_threads_hint():
    import dataclasses

    from pytorch_perflint.bench.machine import Machine
    from pytorch_perflint.bench.script.copies import Project
    from pytorch_perflint.bench.script.report import print_report
    from pytorch_perflint.bench.script.session import Options, Session

    machine = Machine("cpu", 2, 2, 8.0, (), "2.13.0+cpu", None, None, "3.11", "linux", 2)
    run = Run("before", 0, "done", 0, 1.0, step_times=(0.01,))
    session = Session(
        project=Project(Path("/p"), Path("/p/t.py"), Path("."), (Path("t.py"),), 1),
        request=Request(steps=1, warmup=1, unit="step", timeout=10),
        options=Options(rounds=1),
        findings=(),
        held_back=(),
        outcomes=(),
        runs=(run,),
        determinism=None,
        load=((4.5, 4.0, 3.0), (3.9, 4.0, 3.0)),
    )

    def text(session_, machine_):
        console = Console(record=True, width=200)
        print_report(console, session_, machine_)
        return console.export_text()

    assert "--threads 1 steadies them" in text(session, machine)
    quiet = dataclasses.replace(session, load=((0.5, 0.5, 0.5),))
    assert "--threads" not in text(quiet, machine)
    pinned = dataclasses.replace(session, request=Request(steps=1, warmup=1, unit="step", timeout=10, threads=1))
    assert "steadies" not in text(pinned, machine)
