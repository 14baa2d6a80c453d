"""The flake8 plugin reports what the engine finds, in flake8's shape."""

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
