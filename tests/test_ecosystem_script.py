"""scripts/ecosystem.py on a tiny local mirror: it exports the pinned commit, counts findings
per rule, finds fixed files, compares with the baseline and never touches the mirror."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ecosystem.py"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _load():
    spec = importlib.util.spec_from_file_location("ecosystem", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["ecosystem"] = module
    spec.loader.exec_module(module)
    return module


ecosystem = _load()

TRAIN = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32)
model = torch.nn.DataParallel(model)
"""


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def mirror(tmp_path):
    """``checkouts/owner+proj/repo``: a bare mirror with two commits."""
    source = tmp_path / "source"
    source.mkdir()
    _git(source, "init", "-q")
    (source / "train.py").write_text(TRAIN)
    (source / "inside.py").symlink_to("train.py")
    (source / "outside.py").symlink_to("../../outside/target.py")
    (source / "tests").mkdir()
    (source / "tests" / "test_train.py").write_text(TRAIN)
    _git(source, "add", ".")
    _git(source, "commit", "-qm", "one")
    first = _git(source, "rev-parse", "HEAD")
    (source / "train.py").write_text(TRAIN + "other = DataLoader(dataset)\n")
    _git(source, "commit", "-qam", "two")
    checkouts = tmp_path / "checkouts"
    (checkouts / "owner+proj").mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(checkouts / "owner+proj" / "repo")], check=True)
    repos = tmp_path / "repos.toml"
    repos.write_text(f'[[repo]]\nname = "owner/proj"\ncommit = "{first}"\nkind = "scripts"\n')
    return checkouts, repos, first


def test_a_run_reports_findings_fixes_and_no_problems(mirror, tmp_path):
    checkouts, repos, first = mirror
    baseline, report = tmp_path / "base.json", tmp_path / "report.md"
    before = sorted(p.name for p in (checkouts / "owner+proj" / "repo").rglob("*"))
    status = ecosystem.main(
        ["--checkouts", str(checkouts), "--repos", str(repos), "--baseline", str(baseline), "--mutants", "0",
         "--report", str(report), "--write-baseline", "--machine", "test machine"]
    )
    assert status == 0
    record = json.loads(baseline.read_text())
    result = record["repos"]["owner/proj"]
    assert result["commit"] == first
    # The pinned commit, not HEAD: one DataLoader; the test file is skipped by default.
    assert result["findings"] == {"TPF101": 1, "TPF501": 1}
    assert result["fixed_files"] == 1  # the unsafe fix adds num_workers
    assert result["python_files"] == 3  # train.py, the link inside.py, tests/test_train.py
    assert not any(result[k] for k in ecosystem.KINDS)
    text = report.read_text()
    assert "Machine: test machine" in text and "| TPF101 | 1 |" in text and "this run is the baseline" in text
    assert sorted(p.name for p in (checkouts / "owner+proj" / "repo").rglob("*")) == before


def test_the_next_run_compares_with_the_baseline(mirror, tmp_path):
    checkouts, repos, _ = mirror
    baseline = tmp_path / "base.json"
    baseline.write_text(json.dumps({"repos": {"owner/proj": {"commit": "x" * 40, "findings": {"TPF101": 3, "TPF204": 1}}}}))
    results = {"owner/proj": ecosystem.RepoResult(commit="y" * 40, findings={"TPF101": 1, "TPF501": 1})}
    lines = ecosystem.compare(results, json.loads(baseline.read_text()))
    assert "TPF101: 3 -> 1 (-2)" in lines and "TPF204: 1 -> 0 (-1)" in lines and "TPF501: 0 -> 1 (+1)" in lines
    assert "owner/proj: TPF101 -2, TPF204 -1, TPF501 +1" in lines


def test_links_that_leave_the_tree_are_not_exported(mirror, tmp_path):
    checkouts, _, first = mirror
    why, missing = ecosystem.materialize(checkouts, ecosystem.Repo(name="owner/proj", commit=first), tmp_path / "out")
    assert (why, missing) == ("", 0)
    assert (tmp_path / "out" / "inside.py").is_symlink()
    assert not (tmp_path / "out" / "outside.py").exists() and not (tmp_path / "out" / "outside.py").is_symlink()
    assert (tmp_path / "out" / "tests" / "test_train.py").read_text() == TRAIN


def test_a_missing_commit_or_repository_is_skipped_not_fetched(mirror, tmp_path):
    checkouts, _, _ = mirror
    repo = ecosystem.Repo(name="owner/proj", commit="0" * 40)
    assert "is not in" in ecosystem.materialize(checkouts, repo, tmp_path / "out")[0]
    gone = ecosystem.Repo(name="nobody/none", commit="0" * 40)
    assert "no checkout" in ecosystem.materialize(checkouts, gone, tmp_path / "out2")[0]


def test_problems_are_counted(tmp_path):
    run = ecosystem.Run(2, "[]", "error: a.py: internal error in TPF101 (x): boom\nwarning: b.py: fix for TPF301 was not applied: the result does not parse (x)\n", 1.0)
    assert ecosystem._crashes(run, "check") == ["check: error: a.py: internal error in TPF101 (x): boom"]
    assert len(ecosystem._refused(run, "fix")) == 1
    assert ecosystem._crashes(ecosystem.Run(1, "[]", "", 1.0), "check") == []
    assert ecosystem._crashes(ecosystem.Run(-11, "", "Segmentation fault", 1.0), "check") == ["check: exit -11: Segmentation fault"]


def test_syntax_problems_are_found_without_running_anything(tmp_path):
    marker = tmp_path / "ran"
    assert ecosystem.syntax_problem(f"open({str(marker)!r}, 'w')\n".encode(), "a.py") is None
    assert not marker.exists()
    assert "SyntaxError" in ecosystem.syntax_problem(b"x = (\n", "a.py")
    assert "SyntaxError" in ecosystem.syntax_problem(b"import os\nfrom __future__ import annotations\n", "a.py")
    assert ecosystem.syntax_problem(b'{"cells": []}', "a.ipynb") is None
    assert ecosystem.syntax_problem(b"{", "a.ipynb") is not None


# -- the fuzz and mutation cases of issue 21 (scripts/ecosystem_mutations.py) ---------------

mutations = sys.modules["ecosystem_mutations"]  # loaded by the script beside it


def test_the_variants_are_the_issues_cases():
    sizes = mutations.Sizes()
    made = {name: make(b"import torch\r\nx = 1\ny = 2\n", sizes) for name, make in mutations.VARIANTS}
    assert made["crlf_first"] == b"\r\nimport torch\nx = 1\ny = 2\n"
    assert made["crlf"] == b"import torch\r\nx = 1\r\ny = 2\r\n"
    assert made["mixed_endings"] == b"import torch\nx = 1\r\ny = 2\n"
    assert made["deep_parens"].endswith(b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n")
    assert b"[" * 5000 + b"]" * 5000 + b"\nloader = DataLoader(ds)\n" in made["deep_lists"]
    assert made["unary_minus"].endswith(b"x = " + b"-" * 5000 + b"1\n")
    assert made["long_chain"].count(b"+") == 9999
    # Python rejects the four deep cases (RecursionError included) and accepts the rest, at its
    # default recursion limit whatever this process's is.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert {name for name, data in made.items() if mutations.python_rejects(data)} == mutations.REJECTED
    finally:
        sys.setrecursionlimit(limit)
    assert sys.getrecursionlimit() == limit
    assert "RecursionError" in ecosystem.syntax_problem(made["long_chain"], "a.py")


def test_a_line_the_fix_left_alone_keeps_its_ending():
    before = b"\r\nimport torch\nloader = DataLoader(ds)\nx = 1\r\n"
    kept = b"\r\nimport torch\nloader = DataLoader(ds, num_workers=4)\nx = 1\r\n"
    assert mutations.endings_changed(before, kept) is None
    assert mutations.endings_changed(before, kept.replace(b"torch\n", b"torch\r\n")) == "line 2 ended b'\\n', now b'\\r\\n'"
    assert mutations.endings_changed(b"a\r\nb\n", b"a\r\nb\n") is None


def test_rejections_are_matched_by_file():
    out = json.dumps([
        {"filename": "/w/m/m00_deep_parens.py", "code": "TPF001"},
        {"filename": "m00_long_chain.py", "code": "TPF003"},
        {"filename": "/w/m/m00_unary_minus.py", "code": "TPF101"},
    ])
    found = mutations.codes_by_file(out, Path("/w/m"))
    rejected = ["m00_deep_parens.py", "m00_long_chain.py", "m00_unary_minus.py", "m00_deep_lists.py"]
    assert mutations.missed_rejections(rejected, found) == ["m00_unary_minus.py", "m00_deep_lists.py"]


def test_the_sample_prefers_torch_files_and_skips_links(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("import torch\n")
    (tmp_path / "c.py").symlink_to("b.py")
    assert mutations.sample(tmp_path, 1) == [tmp_path / "b.py"]
    assert sorted(p.name for p in mutations.sample(tmp_path, 5)) == ["a.py", "b.py"]


def _fake_tool(bad: bool):
    """A stand-in for the tool: finds TPF001 in the deep-parens variant only; its fix rewrites the
    unary-minus variant (which Python rejects), turns a LF into CRLF and writes beside the folder."""
    def run_tool(root, extra, timeout):
        if "--fix" not in extra:
            found = [{"filename": str(p), "code": "TPF001"} for p in root.glob("*_deep_parens.py")]
            return ecosystem.Run(1, json.dumps(found), "", 0.1)
        if bad:
            for path in root.glob("*_unary_minus.py"):
                path.write_bytes(path.read_bytes() + b"# touched\n")
            for path in root.glob("*_crlf_first.py"):
                path.write_bytes(path.read_bytes().replace(b"torch\n", b"torch\r\n"))
            (root.parent / "sentinel.txt").write_text("changed\n")
        return ecosystem.Run(0, "[]", "", 0.1)
    return run_tool


@pytest.mark.parametrize("bad", [False, True])
def test_the_variants_are_judged(tmp_path, bad):
    box = tmp_path / "owner+proj"
    (box / "repo").mkdir(parents=True)
    (box / "sentinel.txt").write_text("beside\n")
    (box / "repo" / "train.py").write_text(TRAIN)
    tools = ecosystem.TOOLS.__class__(**{**vars(ecosystem.TOOLS), "run_tool": _fake_tool(bad)})
    result = ecosystem.RepoResult(commit="x")
    mutations.check_mutants(result, box / "repo", box, 1, 5.0, tools)
    assert result.mutant_files == len(mutations.VARIANTS)
    assert not (box / "repo.mutants").exists()  # removed after
    missed = sorted(result.missed_rejections)
    if not bad:
        # deep lists, unary minus and the chain are rejected by Python but got no TPF001: the
        # check would have caught issue 21's defect
        assert [m.split(": ")[1] for m in missed] == ["train.py [deep_lists]", "train.py [long_chain]", "train.py [unary_minus]"]
        assert result.problems == 3
        assert result.endings_changed == result.outside_writes == result.non_idempotent == []
        return
    assert "mutants: train.py [unary_minus]: rewritten by --fix although Python rejects it" in missed
    assert result.endings_changed == ["mutants: train.py [crlf_first]: line 2 ended b'\\n', now b'\\r\\n'"]
    assert result.outside_writes == ["mutants: sentinel.txt"]
    assert result.non_idempotent == ["mutants: train.py [unary_minus]: changed by a second --fix"]


def test_a_run_with_variants_finds_no_problem_with_the_real_tool(mirror, tmp_path):
    """End to end on the tiny mirror with the issue's sizes: the tool reports TPF001 for every
    variant Python rejects and leaves it alone, without a crash, a hang, a fix Python cannot
    compile or that a second run changes, a changed line ending or a write outside."""
    checkouts, repos, first = mirror
    work = tmp_path / "work"
    work.mkdir()
    result = ecosystem.check_repo(
        ecosystem.Repo(name="owner/proj", commit=first), checkouts, work, 300.0, mutants=1, mutant_timeout=300.0,
    )
    assert result.mutant_files == len(mutations.VARIANTS)
    assert {kind: getattr(result, kind) for kind in ecosystem.KINDS} == {kind: [] for kind in ecosystem.KINDS}
    assert {"mutants check", "mutants fix", "mutants fix again"} <= set(result.seconds)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("hang", [False, True])
def test_a_run_ends_every_process_it_started(tmp_path, hang):
    """A tool run past its time limit, or one that exits leaving a worker behind, leaves no
    process running (before, only the main process was killed; its workers lived on)."""
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time, pathlib\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        + ("time.sleep(120)\n" if hang else "")
    )
    run = ecosystem.run_command([sys.executable, "-c", code], tmp_path, 5.0 if hang else 60.0)
    assert (run.returncode is None) is hang
    child = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)
