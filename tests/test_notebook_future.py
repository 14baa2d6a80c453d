"""A ``from __future__`` import in a later notebook cell: legal where IPython runs it.

IPython compiles every cell on its own (each top-level statement, in fact), so a cell may
start with ``from __future__ import ...`` after a ``!pip`` cell, as lucidrains/vit-pytorch's
``examples/cats_and_dogs.ipynb`` does. The joined source then has the import below other
statements; the fixer's compile check must judge it as IPython does, or every fix of the
notebook is refused. Code that is invalid everywhere still refuses a fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytorch_perflint import notebook
from pytorch_perflint.config import Settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.runner import Mode, process_bytes

from fix_rules import SlowCall
from test_notebook import make

SETTINGS = Settings(select=("TPF101",), unsafe_fixes=True)


CELLS = [
    ("markdown", ["# Training\n"]),
    ("code", ["!pip -q install torch\n"]),
    ("code", ["from __future__ import print_function\n", "\n", "import torch\n", "from torch.utils.data import DataLoader\n"]),
    ("markdown", ["## Data\n"]),
    ("code", ["batch_size = 64\n"]),
    ("code", ["loader = DataLoader(train_data, batch_size=batch_size, shuffle=True)\n", "print(len(loader))"]),
]


def test_a_dataloader_in_a_later_cell_is_reported_and_fixed(tmp_path):
    text = make(CELLS)
    path = tmp_path / "train.ipynb"
    path.write_text(text, encoding="utf-8")
    processed = process_bytes(path.read_bytes(), path, SETTINGS, Mode.FIX)
    assert processed.result.fix_errors == ()
    assert processed.result.fixed == 1
    after = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(text)
    assert len(after["cells"]) == len(before["cells"])
    changed = [i for i, (a, b) in enumerate(zip(after["cells"], before["cells"])) if a != b]
    assert changed == [5]
    assert after["cells"][5]["source"][0].startswith("loader = DataLoader(train_data, batch_size=batch_size, shuffle=True, num_workers=")
    assert after["cells"][5]["source"][1] == "print(len(loader))"
    # Only that cell's source value changed: the rest of the file is byte for byte the same.
    expected = json.loads(text)
    expected["cells"][5]["source"] = after["cells"][5]["source"]
    assert path.read_text(encoding="utf-8") == json.dumps(expected, indent=1) + "\n"


def test_the_finding_is_reported_in_its_cell(tmp_path):
    path = tmp_path / "train.ipynb"
    processed = process_bytes(make(CELLS).encode("utf-8"), path, SETTINGS, Mode.CHECK)
    assert [(d.code, d.cell, d.location.row) for d in processed.result.diagnostics] == [("TPF101", 4, 1)]


@pytest.mark.parametrize(
    "future_cell",
    [
        pytest.param("from __future__ import annotations\n", id="first-statement-of-a-later-cell"),
        pytest.param("x = 1\nfrom __future__ import annotations\n", id="after-a-statement-in-its-cell"),
        pytest.param('"""Doc."""\nfrom __future__ import annotations, division\n', id="after-a-docstring"),
    ],
)
def test_a_top_level_future_import_anywhere_does_not_block_a_fix(future_cell):
    """IPython compiles each top-level statement of a cell alone: a top-level future import
    is at the beginning of what it compiles, wherever it stands in the cell."""
    nb = notebook.load(make([("code", ["%matplotlib inline\n"]), ("code", future_cell), ("code", "z = slow(1)\n")]))
    outcome = fix_source(nb.source, Path("nb.ipynb"), Settings(), rules=[SlowCall])
    assert outcome.fix_errors == () and outcome.fixed == 1
    data = json.loads(notebook.dump(nb, outcome.source))
    assert data["cells"][1]["source"] == future_cell and data["cells"][2]["source"] == "z = fast(1)\n"


@pytest.mark.parametrize(
    ("future_cell", "error"),
    [
        pytest.param("from __future__ import braces\n", "not a chance", id="braces"),
        pytest.param("from __future__ import no_such_feature\n", "not defined", id="unknown-feature"),
        pytest.param("if True:\n    from __future__ import annotations\n", "beginning of the file", id="nested"),
        pytest.param("def f():\n    from __future__ import annotations\n", "beginning of the file", id="in-a-function"),
    ],
)
def test_a_future_import_ipython_rejects_still_refuses_the_fix(future_cell, error):
    nb = notebook.load(make([("code", "import os\n"), ("code", future_cell), ("code", "z = slow(1)\n")]))
    outcome = fix_source(nb.source, Path("nb.ipynb"), Settings(), rules=[SlowCall])
    assert outcome.fixed == 0 and error in outcome.fix_errors[0]


def test_a_python_file_with_a_late_future_import_still_refuses_the_fix():
    outcome = fix_source("import os\nfrom __future__ import annotations\nz = slow(1)\n", Path("m.py"), Settings(), rules=[SlowCall])
    assert outcome.fixed == 0 and "beginning of the file" in outcome.fix_errors[0]
