"""``--fix`` over a project settles in one run (issue 21, item 5).

A fix in one file can make a finding appear in another: ``pin_memory=True`` added to the
loader a helper in ``utils/dataloader.py`` returns makes ``x.cuda()`` on its batches in
``train.py`` TPF104. ``check --fix`` said "1 fixed, 0 remaining" and the next ``check``
found TPF104.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytorch_perflint import fix_passes
from pytorch_perflint.types import FileResult

from project_tree import write_project

HELPER = """
from torch.utils.data import DataLoader


def make_loader(ds):
    return DataLoader(ds, batch_size=8, num_workers=2)
"""

TRAIN = """
import torch
from utils.dataloader import make_loader


def test(model, loader):
    model.eval()
    with torch.no_grad():
        for x in loader:
            x = x.cuda()
            model(x)


def main(model, ds):
    test_loader = make_loader(ds)
    test(model, test_loader)
"""


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", "check", "--no-cache", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _remaining(root: Path) -> list:
    result = _cli(root, "--output-format", "json", ".")
    return [(Path(d["filename"]).name, d["code"]) for d in json.loads(result.stdout)]


@pytest.mark.parametrize("marker", [".git", "pyproject.toml"])
def test_one_fix_run_fixes_what_a_fix_in_another_file_reveals(tmp_path, marker):
    root = write_project(tmp_path / "proj", {"utils/dataloader.py": HELPER, "train.py": TRAIN}, marker=marker)
    assert _remaining(root) == [("dataloader.py", "TPF102")]
    fixed = _cli(root, "--fix", ".")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Found 1 error, and fixing revealed 1 more (2 fixed, 0 remaining)." in fixed.stdout
    assert "pin_memory=True" in (root / "utils/dataloader.py").read_text()
    assert "x = x.cuda(non_blocking=True)" in (root / "train.py").read_text()
    assert _remaining(root) == []
    assert _cli(root, ".").returncode == 0


def test_the_summary_of_a_fix_run_counts_what_a_check_then_reports(tmp_path):
    """Many files (worker processes, several passes' worth) and a finding no fix removes:
    "N remaining" is what ``check`` reports next, and the JSON of the fix run lists them."""
    files = {"utils/dataloader.py": HELPER, "train.py": TRAIN}
    for index in range(8):
        files[f"other{index}.py"] = "import torch\nx = torch.randn(3).cuda()\ny = x.sum().item()\n"
    files["slow.py"] = "import torch\ntorch.autograd.set_detect_anomaly(True)\n"
    root = write_project(tmp_path / "json", files)
    fixed = _cli(root, "--fix", "--output-format", "json", "-j", "2", ".")
    left = [(Path(d["filename"]).name, d["code"]) for d in json.loads(fixed.stdout)]
    after = _remaining(root)
    assert sorted(left) == sorted(after) and len(after) == 9
    assert "x = x.cuda(non_blocking=True)" in (root / "train.py").read_text()
    root = write_project(tmp_path / "text", files)
    summary = _cli(root, "--fix", "-j", "2", ".")
    assert "Found 10 errors, and fixing revealed 1 more (2 fixed, 9 remaining)." in summary.stdout, summary.stdout
    assert len(_remaining(root)) == 9


def _stamp(deps=(), all_files=False, root="/p"):
    return fix_passes.Reads(frozenset(deps), all_files, root)


def test_only_the_files_that_read_a_written_file_are_fixed_again(tmp_path):
    a, b, c = Path("/p/a.py"), Path("/p/b.py"), Path("/p/c.py")
    passes = []

    def run_pass(batch, reads):
        passes.append(list(batch))
        reads.update({a: _stamp(), b: _stamp(deps=["/p/a.py"]), c: _stamp(deps=["/p/b.py"])})
        if len(passes) == 1:
            return [FileResult(a, fixed=1, found_before_fix=1), FileResult(b), FileResult(c)]
        return [FileResult(path, diagnostics=()) for path in batch]

    results = fix_passes.fix_until_settled([a, b, c], run_pass)
    assert passes == [[a, b, c], [b]]  # c reads b, which the second pass did not write
    assert [r.fixed for r in results] == [1, 0, 0]


def test_passes_are_bounded_and_add_up(tmp_path):
    a, b = Path("/p/a.py"), Path("/p/b.py")
    passes = []

    def run_pass(batch, reads):  # each file's fix always reveals one in the other
        passes.append(list(batch))
        reads.update({a: _stamp(all_files=True), b: _stamp(all_files=True)})
        return [FileResult(path, fixed=1, fixes=(("TPF104", "n", 1),), found_before_fix=1) for path in batch]

    results = fix_passes.fix_until_settled([a, b], run_pass)
    assert len(passes) == fix_passes.MAX_PASSES
    assert [r.fixed for r in results] == [fix_passes.MAX_PASSES] * 2
    assert results[0].fixes == (("TPF104", "n", fix_passes.MAX_PASSES),)
    assert results[0].found_before_fix == 1


def test_a_file_a_later_pass_fixes_counts_what_check_found_before_the_run():
    first = FileResult(Path("t.py"), diagnostics=())  # nothing found, nothing fixed
    then = FileResult(Path("t.py"), fixed=1, fixes=(("TPF104", "n", 1),), found_before_fix=1)
    merged = fix_passes.combined(first, then)
    assert merged.fixed == 1 and merged.found_before_fix == 0  # the finding was revealed


def test_reads_of_a_recording_name_the_modules_and_the_whole_project():
    from pytorch_perflint.project.index import ALL_FILES, ALL_TEXTS, TEXT_OF

    reads = fix_passes.Reads.of({"/p/a.py", TEXT_OF + "/p/b.py"}, "/p")
    assert reads == fix_passes.Reads(frozenset({"/p/a.py", "/p/b.py"}), False, "/p")
    assert fix_passes.Reads.of({ALL_FILES}, "/p").all_files
    assert fix_passes.Reads.of({ALL_TEXTS}, "/p").all_files


def test_a_written_file_that_spells_a_scanned_word_fixes_the_reader_again(tmp_path):
    """A finding read the callers of ``record`` from the texts that spell it: a fix written
    to another file matters when that file spells ``record`` now, not otherwise."""
    from pytorch_perflint.project.index import TEXTS_NAMING

    reader, spelling, other = tmp_path / "train.py", tmp_path / "meter.py", tmp_path / "data.py"
    spelling.write_text("def use(m):\n    m.record(1)\n")
    other.write_text("x = 1\n")
    stamp = fix_passes.Reads.of({TEXTS_NAMING + "record"}, str(tmp_path))
    assert stamp.words == frozenset({"record"}) and not stamp.all_files
    reads = {p: fix_passes.Reads(frozenset(), False, str(tmp_path)) for p in (spelling, other)}
    assert fix_passes._reads_any(reader, stamp, [spelling], reads)
    assert not fix_passes._reads_any(reader, stamp, [other], reads)
