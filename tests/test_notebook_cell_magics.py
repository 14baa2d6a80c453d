"""Cell magics whose body IPython runs as Python (``%%time``, ``%%timeit``, ``%%capture``):
the body is linted and fixed, the magic line is kept; any other ``%%`` cell stays masked.

A training loop timed with ``%%time`` is common in tutorials (issue 23's measurement found
``train_loss += loss`` in two such cells that no rule could see)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from pytorch_perflint import notebook
from pytorch_perflint.cli import main

_LOOP = [
    "for x, y in loader:\n",
    "    loss = loss_fn(model(x), y)\n",
    "    train_loss += loss\n",
    "    loss.backward()\n",
    "    optimizer.step()\n",
]
_SETUP = ["import torch\n", "loss_fn = torch.nn.CrossEntropyLoss()\n", "train_loss = 0\n"]


def _write(path: Path, cells) -> Path:
    data = {
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c} for c in cells],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def _run(root: Path, *args: str):
    old = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", "--select", "TPF205", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def test_a_timed_training_loop_is_linted_and_fixed_with_its_magic_kept(tmp_path):
    _write(tmp_path / "nb.ipynb", [_SETUP, ["%%time\n", *_LOOP]])
    found = json.loads(_run(tmp_path, "--output-format", "json", "nb.ipynb").stdout)
    assert [(d["code"], d["cell"], d["location"]["row"]) for d in found] == [("TPF205", 2, 4)]
    _run(tmp_path, "--fix", "nb.ipynb")
    cell = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"][1]["source"]
    assert cell[0] == "%%time\n"
    assert cell[3] == "    train_loss += loss.detach()\n"
    assert json.loads(_run(tmp_path, "--output-format", "json", "nb.ipynb").stdout) == []


def test_line_magics_inside_a_timed_cell_stay_masked():
    text = json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["%%timeit -n 1\n", "!nvidia-smi\n", "x = 1\n"]}],
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    nb = notebook.load(text)
    compile(nb.source, "nb", "exec")
    assert "x = 1" in nb.source and "nvidia-smi" not in nb.source and "%%timeit" not in nb.source


def test_other_cell_magics_and_bodies_that_are_not_python_stay_masked():
    for cell in (["%%bash\n", "for f in *; do echo $f; done\n"], ["%%time\n", "whatever here\n"], ["%%writefile a.py\n", "x = 1\n"]):
        text = json.dumps(
            {
                "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}],
                "metadata": {"language_info": {"name": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
        nb = notebook.load(text)
        compile(nb.source, "nb", "exec")
        assert cell[1].strip() not in nb.source
