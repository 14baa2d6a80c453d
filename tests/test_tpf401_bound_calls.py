"""TPF401 asks the value engine what a bound name holds (``self.Tensor(x)`` with
``self.Tensor = torch.FloatTensor``) only for a call shaped like a conversion: one
argument, no keywords. Every other call of a name or attribute the rule does not know
(``self.log(a, b)``, ``rows.append(x, y)``) is settled by its shape first, without
asking (each question of the engine may read the project's callers)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from pytorch_perflint.config import load_settings
from pytorch_perflint.context import FileContext
from pytorch_perflint.engine import lint_source

SOURCE = textwrap.dedent(
    """
    import numpy as np
    import torch


    class Holder:
        def __init__(self, log):
            self.Tensor = torch.FloatTensor
            self.log = log

        def run(self, rows, a):
            self.log(a, rows)
            self.log(a, level=2)
            rows.append(a, a)
            return self.Tensor(np.zeros(3))
    """
).lstrip()


def test_only_a_conversion_shaped_call_asks_what_its_name_holds(tmp_path, monkeypatch):
    path = tmp_path / "holder.py"
    path.write_text(SOURCE, encoding="utf-8")
    asked = []
    real = FileContext.value_of

    def value_of(self, node, *args, **kwargs):
        asked.append(cst.Module([]).code_for_node(node))
        return real(self, node, *args, **kwargs)

    monkeypatch.setattr(FileContext, "value_of", value_of)
    settings = load_settings([tmp_path])
    result = lint_source(SOURCE, Path(path), settings, rules=None, with_edits=False)
    assert [(d.code, d.location.row) for d in result.diagnostics if d.code == "TPF401"] == [("TPF401", 14)]
    assert "self.Tensor" in asked
    assert not {"self.log", "rows.append"} & set(asked)
