"""TPF105 reads a builder's ``shuffle=training`` from its calls inside functions too: a
call in ``run`` passing ``training=True`` makes the sampler shuffle. A function that binds
the builder's name itself (a parameter) calls something else; one holding a ``lambda``
is read without error (``reaching.binds`` used to ask a lambda its name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project

SOURCE = """
    from torch.utils.data import DataLoader, DistributedSampler


    def build_loader(ds, training):
        sampler = DistributedSampler(ds, shuffle=training)
        return DataLoader(ds, sampler=sampler, batch_size=8)


    def other(build_loader, ds):
        return build_loader(ds, training={other})


    def run(ds, model, opt):
        order = sorted(range(3), key=lambda i: -i)
        loader = build_loader(ds, training={training})
        for epoch in order:
            for batch in loader:
                model(batch).sum().backward()
                opt.step()
"""


@pytest.mark.parametrize("training, other, fires", [("True", "False", True), ("False", "True", False)])
def test_a_builder_called_inside_functions(tmp_path: Path, training: str, other: str, fires: bool):
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF105"]\n', "train.py": SOURCE.format(training=training, other=other)})
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    assert [e for r in results for e in r.errors] == []
    assert [(d.code, d.location.row) for r in results for d in r.diagnostics] == ([("TPF105", 5)] if fires else [])
