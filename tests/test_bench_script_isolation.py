"""`bench SCRIPT` never changes the user's tree and leaves no process behind (issue 21, item 3).

Reproduction from the issue: a script that overwrites files it finds in the project
(``log.txt``, ``existing.json``, ``data/keep.txt``) changed them in the user's folder, and a
child that called ``os.setsid()`` survived the run and wrote into the tree after bench had
exited. No timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytorch_perflint.bench.script import copies as script_copies, guard, reaper
from test_bench_script import _alive, invoke, needs_torch, tree_digest


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def _mirror(project: Path, tmp_path: Path, link_above_mb: float):
    found = script_copies.find_project(project / "train.py", project, project, [project / "train.py"], 100, link_above_mb)
    return script_copies.make_copy(found, tmp_path / "copy", "before")


def test_python_writes_through_links_land_in_the_copy(project, tmp_path):
    """The guard (installed by the sitecustomize shim, as in a run) copies a link before a
    write: a linked big file, a file in a linked folder, a new file there, a removal."""
    (project / "train.py").write_text("")
    (project / ".git").mkdir()
    (project / ".git" / "info").mkdir()
    (project / ".gitignore").write_text("outputs/\n")
    (project / "outputs").mkdir()
    (project / "outputs" / "old.txt").write_text("old")
    (project / "outputs" / "keep.txt").write_text("keep")
    (project / "big.bin").write_bytes(b"0123456789" * 300)
    copy = _mirror(project, tmp_path, link_above_mb=0.001)
    assert (copy.root / "big.bin").is_symlink() and (copy.root / "outputs").is_symlink()
    before = tree_digest(project)
    child = textwrap.dedent(
        """
        import os
        with open("big.bin", "r+b") as f:
            f.write(b"XX")
        open("outputs/keep.txt", "w").write("overwritten")
        open("outputs/new.txt", "w").write("new")
        os.remove("outputs/old.txt")
        """
    )
    env = dict(os.environ, PYTHONPATH=guard.write_shim(str(tmp_path / "shim")), PERFLINT_BENCH_COPY_ROOT=str(copy.root))
    subprocess.run([sys.executable, "-c", child], cwd=copy.root, env=env, check=True, timeout=60)
    assert tree_digest(project) == before  # nothing of the user's changed
    assert (copy.root / "big.bin").read_bytes() == b"XX23456789" + b"0123456789" * 299  # copied, then written
    assert (copy.root / "outputs" / "keep.txt").read_text() == "overwritten"
    assert (copy.root / "outputs" / "new.txt").read_text() == "new"
    assert not (copy.root / "outputs" / "old.txt").exists() and (project / "outputs" / "old.txt").exists()


def test_the_shim_keeps_the_interpreter_s_own_sitecustomize(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 1\n")
    shim = guard.write_shim(str(tmp_path / "shim"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([shim, str(theirs)]), PERFLINT_BENCH_COPY_ROOT=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", f"import sys, builtins; print(builtins.THEIRS, {shim!r} in sys.path)"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    assert out.stdout.split() == ["1", "False"], out.stderr


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finding a run's processes needs /proc")
def test_ending_a_run_kills_children_that_left_its_session():
    """The reaper, alone: a run whose child double-forks into a new session."""
    assert reaper.set_subreaper(True)
    try:
        keep = reaper.snapshot()
        code = (
            "import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        print(os.getpid(), flush=True); time.sleep(60)\n"
            "    os._exit(0)\n"
            "time.sleep(60)\n"
        )
        process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
        daemon = int(process.stdout.readline())
        assert _alive(daemon)
        reaper.end_run(process, keep)
        process.stdout.close()
        assert not _alive(daemon) and not _alive(process.pid)
    finally:
        reaper.set_subreaper(False)


@needs_torch
@pytest.mark.slow
def test_bench_script_changes_no_file_and_leaves_no_process(project, tmp_path):
    """The issue's reproduction, end to end through the command."""
    marker = tmp_path / "daemon.pid"
    (project / "log.txt").write_text("the user's log\n")
    (project / "existing.json").write_text('{"mine": true}\n')
    (project / "data").mkdir()
    (project / "data" / "keep.txt").write_text("keep me\n")
    (project / "train.py").write_text(
        textwrap.dedent(
            f"""
            import json, os, subprocess, sys
            import torch
            open("log.txt", "w").write("overwritten by the script\\n")
            json.dump({{"mine": False}}, open("existing.json", "w"))
            with open("data/keep.txt", "a") as f:
                f.write("appended\\n")
            daemon = (
                "import os, sys, time\\n"
                "os.setsid()\\n"
                "open({str(marker)!r}, 'w').write(str(os.getpid()))\\n"
                "time.sleep(20)\\n"
                "open('data/keep.txt', 'w').write('written after the run')\\n"
            )
            subprocess.Popen([sys.executable, "-c", daemon])
            model = torch.nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(20):
                opt.zero_grad()
                model(torch.ones(4, 2)).sum().backward()
                opt.step()
            """
        )
    )
    before = tree_digest(project)
    result = invoke("train.py", "--steps", "2", "--warmup", "1", "--rounds", "1")
    assert result.exit_code == 0, result.output
    assert "run 1: before, round 0 (time left not known yet)" in result.output  # a log gets a line per run
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:  # written before the steps ran
        time.sleep(0.1)
    daemon = int(marker.read_text())
    assert not _alive(daemon), "the setsid child outlived the run"  # it would write 20 s in
    assert tree_digest(project) == before
    assert "warning" not in result.output


def test_code_under_a_linked_folder_is_still_copied(project, tmp_path):
    """A project folder that is a symlink (src -> elsewhere) but holds the code: a real
    folder in the copy, its code copied, its other entries copied or linked as anywhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "model.py").write_text("X = 1\n")
    (elsewhere / "notes.txt").write_text("n")
    (project / "src").symlink_to(elsewhere, target_is_directory=True)
    (project / "train.py").write_text("import src.model\n")
    found = script_copies.find_project(project / "train.py", project, project, [project / "train.py", project / "src" / "model.py"], 100)
    copy = script_copies.make_copy(found, tmp_path / "copy", "before")
    assert not (copy.root / "src").is_symlink() and not (copy.root / "src" / "model.py").is_symlink()
    assert (copy.root / "src" / "notes.txt").read_text() == "n"
