"""Notebook findings after a fix are where a ``check`` of the fixed notebook puts them
(issue 21, item 6).

The cells are linted and fixed as one joined source. A fix that adds lines to a cell (an
argument per line) moves every later cell down that source; the findings left were mapped
back to cells with the rows the notebook was read with: ``cell 3:3:1`` instead of
``3:2:1``, a TPF202 that landed on a cell marker was dropped ("2 remaining", JSON without
it, while a ``check`` right after found it), and ``--diff`` said "1 more that fixing
reveals" where there were 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pytorch_perflint.cli import main

CELLS = [
    # TPF101 and TPF102 on the call; the fixes add an argument per line.
    "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(\n    ds,\n    batch_size=8,\n)",
    # TPF202 (no fix) on the last row; TPF104 once pin_memory is on.
    "opt = torch.optim.Adam(model.parameters())\nfor epoch in range(10):\n    for x in loader:\n"
    "        loss = model(x.cuda()).sum()\n        loss.backward()\n        opt.step()\n        print(loss.item())",
    # TPF203 (an unsafe fix), TPF104 once pin_memory is on.
    "model.eval()\nfor x in loader:\n    out = model(x.cuda())",
]


def _notebook(path: Path, sources=tuple(CELLS)) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c.splitlines(True)} for c in sources]
    data = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def _run(root: Path, *args: str):
    old = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def _findings(root: Path, *args: str):
    result = _run(root, "--output-format", "json", *args, "nb.ipynb")
    return sorted((d["code"], d["cell"], d["location"]["row"], d["location"]["column"]) for d in json.loads(result.stdout))


def _last_line(result) -> str:
    return [line for line in result.output.splitlines() if line.strip()][-1]


@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
def test_findings_after_a_fix_are_those_a_check_then_reports(tmp_path, unsafe):
    _notebook(tmp_path / "nb.ipynb")
    flags = ["--fix", "--unsafe-fixes"] if unsafe else ["--fix"]
    during = _findings(tmp_path, *flags)
    after = _findings(tmp_path)
    assert during == after
    assert ("TPF202", 2, 7, 15) in after
    if not unsafe:
        assert ("TPF203", 3, 2, 1) in after


def test_the_fix_summary_adds_up(tmp_path):
    _notebook(tmp_path / "nb.ipynb")
    fixed = _run(tmp_path, "--output-format", "concise", "--fix", "nb.ipynb")
    # TPF101, TPF102, TPF202, TPF203 found; TPF102 and two TPF104 fixed; three left.
    assert "Found 4 errors, and fixing revealed 2 more (3 fixed, 3 remaining)." in fixed.output
    assert "resolved by other fixes" not in fixed.output
    assert "nb.ipynb:cell 2:7:15: TPF202" in fixed.output and "nb.ipynb:cell 3:2:1: TPF203" in fixed.output
    assert len(_findings(tmp_path)) == 3


def test_diff_counts_what_fixing_reveals(tmp_path):
    _notebook(tmp_path / "nb.ipynb")
    diff = _run(tmp_path, "--diff", "nb.ipynb")
    assert "(4 found now, 2 more that fixing reveals, 3 would remain;" in _last_line(diff)
    assert _last_line(diff).startswith("Would fix 3 errors")


def test_the_pre_commit_fix_hook_reports_what_is_left(tmp_path):
    hooks = yaml.safe_load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())
    (entry,) = [hook["entry"] for hook in hooks if hook["id"] == "pytorch-perflint-fix"]
    _notebook(tmp_path / "nb.ipynb")
    result = _run(tmp_path, *entry.split()[2:], "--output-format", "concise", "nb.ipynb")
    assert result.exit_code == 1
    assert "nb.ipynb:cell 2:7:15: TPF202" in result.output
    assert "(3 fixed, 3 remaining)" in result.output


def test_a_finding_the_old_rows_put_on_a_cell_marker_is_not_dropped(tmp_path):
    """One line added to cell 1 puts cell 2's last row where cell 3's marker was: the
    TPF202 there was dropped, and the summary said "1 resolved by other fixes"."""
    cells = [
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(\n    ds,\n    batch_size=8,\n)\nmodel = Net().cuda()",
        "opt = torch.optim.Adam(model.parameters(), fused=True)\nfor x in loader:\n    loss = model(x).sum()\n"
        "    loss.backward()\n    opt.step()\n    print(loss.item())",
        "y = 1",
    ]
    _notebook(tmp_path / "nb.ipynb", cells)
    fixed = _run(tmp_path, "--output-format", "concise", "--fix", "nb.ipynb")
    assert "nb.ipynb:cell 2:6:11: TPF202" in fixed.output
    assert "Found 3 errors (1 fixed, 2 remaining)." in fixed.output and "resolved" not in fixed.output
    assert [code for code, *_ in _findings(tmp_path)] == ["TPF101", "TPF202"]


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda s: s.replace("    batch_size=8,\n", "    batch_size=8,\n    num_workers=4,\n"), id="a-line-added"),
        pytest.param(lambda s: "import numpy as np\n\n" + s, id="an-import-above-the-first-cell"),
        pytest.param(lambda s: s.replace("model.eval()\n", "model.eval()\nwith torch.no_grad():\n"), id="a-line-in-the-last-cell"),
    ],
)
def test_rows_after_a_fix_are_the_rows_of_the_written_cells(tmp_path, edit):
    """Each row of the fixed joined source maps to the cell and row where ``dump`` writes
    that line."""
    from pytorch_perflint import notebook

    book = notebook.load(_notebook(tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    fixed = edit(book.source)
    assert fixed != book.source
    cells = notebook.cell_sources(notebook.load(notebook.dump(book, fixed)))
    rows = notebook._rows_after_fix(fixed)
    for row, line in enumerate(fixed.split("\n")[:-1], start=1):
        cell, cell_row = rows[row]
        if cell_row == 0:
            assert line.startswith("# pytorch-perflint: cell") or not line.strip()
            continue
        assert cells[cell - 1].split("\n")[cell_row - 1] == line, (row, line)
