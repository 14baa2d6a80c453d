"""Packaging: the flake8 plugin and the generated rule docs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytorch_perflint.flake8 import Flake8Plugin

SOURCE = "import torch\n\nmodel = torch.nn.DataParallel(net)\n"


def test_plugin_yields_flake8_tuples():
    results = list(Flake8Plugin(None, "train.py", SOURCE.splitlines(keepends=True)).run())
    assert [(row, col, msg.split()[0]) for row, col, msg, _ in results] == [(3, 8, "TPF501")]
    assert results[0][3] is Flake8Plugin


def test_plugin_is_silent_on_clean_code():
    assert list(Flake8Plugin(None, "ok.py", ["import torch\n", "x = torch.ones(3)\n"]).run()) == []


def test_flake8_runs_the_plugin(tmp_path):
    pytest.importorskip("flake8")
    target = tmp_path / "train.py"
    target.write_text(SOURCE)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=TPF", str(target)], capture_output=True, text=True
    )
    assert f"{target}:3:9: TPF501" in proc.stdout


def test_rule_docs_and_readme_table_are_up_to_date():
    """docs/rules.md and the README's table are generated from the rules themselves."""
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_rule_docs.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
