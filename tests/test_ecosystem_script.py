"""scripts/ecosystem.py on a tiny local mirror: it exports the pinned commit, counts findings
per rule, finds fixed files, compares with the baseline and never touches the mirror."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
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
        ["--checkouts", str(checkouts), "--repos", str(repos), "--baseline", str(baseline),
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


# -- the mutation cases (issue 21) -------------------------------------------------------


def _load_mutations():
    spec = importlib.util.spec_from_file_location("ecosystem_mutations", SCRIPT.parent / "ecosystem_mutations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["ecosystem_mutations"] = module
    spec.loader.exec_module(module)
    return module


def test_the_mutations_are_the_issues_cases():
    mutations = _load_mutations()
    data = TRAIN.encode()
    for name, (change, rejected) in mutations.MUTATIONS.items():
        assert mutations.python_rejects(change(data)) is rejected, name
    assert mutations.MUTATIONS["crlf-first-line"][0](data) == b"\r\n" + data


def test_a_mutation_run_on_a_tiny_mirror_finds_no_problem(mirror, tmp_path, capsys):
    mutations = _load_mutations()
    checkouts, repos, _ = mirror
    out = tmp_path / "mutations.json"
    assert mutations.main(["--checkouts", str(checkouts), "--repos", str(repos), "--files", "1", "--json", str(out), "--timeout", "300"]) == 0
    result = json.loads(out.read_text())["owner/proj"]
    assert result["files"] == len(mutations.MUTATIONS) and not result["skipped"]
    assert all(result[kind] == [] for kind in mutations.KINDS)
    assert "0 problems" in capsys.readouterr().out


def test_a_rejected_file_the_tool_passes_is_a_problem(tmp_path, monkeypatch):
    """The check would have caught issue 21's defect: a file Python rejects, no TPF001."""
    mutations = _load_mutations()
    monkeypatch.setattr(mutations, "run_tool", lambda root, extra, timeout: ecosystem.Run(0, "[]", "", 0.1))
    source = tmp_path / "plain" / "owner+proj"
    source.mkdir(parents=True)
    (source / "train.py").write_text(TRAIN)
    work = tmp_path / "work"
    work.mkdir()
    result = mutations.check_mutations(ecosystem.Repo("owner/proj", "0" * 40), tmp_path / "plain", work, 60, 1)
    rejected = sum(1 for _, is_rejected in mutations.MUTATIONS.values() if is_rejected)
    assert len(result.rejected_not_reported) == rejected and result.problems == rejected
