"""Notebooks: code cells are linted with cell-relative locations and fixed in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytorch_perflint import notebook
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source


def make(cells, indent=1) -> str:
    data = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source, **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=indent) + "\n"


NB = make(
    [
        ("markdown", ["# Title\n"]),
        ("code", ["import torch\n", "%matplotlib inline\n", "!pip install x\n"]),
        ("code", ["%%time\n", "whatever here\n"]),
        ("code", ["model = torch.nn.DataParallel(net)\n", "model?"]),
    ]
)


def test_cells_become_one_parseable_source_with_magics_masked():
    nb = notebook.load(NB)
    compile(nb.source, "nb", "exec")
    assert "%matplotlib" not in nb.source and "!pip" not in nb.source


def test_diagnostics_map_to_cell_and_row():
    nb = notebook.load(NB)
    (diagnostic,) = lint_source(nb.source, Path("a.ipynb"), Settings()).diagnostics
    mapped = notebook.map_diagnostic(nb, diagnostic)
    assert (mapped.cell, mapped.location.row, mapped.location.column) == (3, 1, 9)


def test_round_trip_is_exact_when_nothing_changes():
    nb = notebook.load(NB)
    assert notebook.dump(nb, nb.source) == NB


def test_fixed_source_splits_back_into_cells_and_restores_magics():
    nb = notebook.load(NB)
    fixed = "import os\n" + nb.source.replace("torch.nn.DataParallel(net)", "torch.nn.parallel.DistributedDataParallel(net)")
    data = json.loads(notebook.dump(nb, fixed))
    assert data["cells"][1]["source"] == ["import os\n", "import torch\n", "%matplotlib inline\n", "!pip install x\n"]
    assert data["cells"][2]["source"] == ["%%time\n", "whatever here\n"]
    assert data["cells"][3]["source"][0].startswith("model = torch.nn.parallel.DistributedDataParallel")
    assert data["cells"][3]["source"][1] == "model?"
    assert data["cells"][0]["source"] == ["# Title\n"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "invalid notebook JSON"),
        ("[]", "the file is a list, not a JSON object"),
        ("{}", "no list of cells"),
        ('{"cells": 3}', "cells is a number, not a list"),
    ],
)
def test_invalid_notebooks_give_a_clear_reason(text, reason):
    with pytest.raises(notebook.NotebookError, match=reason):
        notebook.load(text)
