"""TPF601 reports training loops only (backward and an optimizer step), so it takes the
project screen of the other rules whose findings need one (``loops_may_train``): a module
whose text spells a step but whose loops cannot train (a scheduler's ``lr_scheduler.py``)
is not parsed with LibCST for it; a loop that trains through a helper of its own still
is, and is reported."""

from __future__ import annotations

import ast

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.registry import rule_by_code

from project_tree import write_project

# The only step runs at module level; the loop calls a helper of its own that does not train.
NO_TRAINING_LOOP = """
    import torch

    model = torch.nn.Linear(2, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.zeros(2, device="cuda")).sum().backward()
    optimizer.step()


    def halve(rate):
        return rate / 2


    for group in optimizer.param_groups:
        group["lr"] = halve(group.setdefault("lr", 0.1))
"""
THROUGH_A_HELPER = """
    import torch

    model = torch.nn.Linear(2, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    def fit_batch(batch):
        model(batch).sum().backward()
        optimizer.step()


    for batch in loader:
        fit_batch(batch.cuda())
"""


def _screen_and_codes(tmp_path, source):
    root = write_project(tmp_path, {"pyproject.toml": "[tool.pytorch-perflint]\npreview = true\n", "train.py": source})
    settings = load_settings([root])
    path = root / "train.py"
    index = index_for(path, settings)
    assert index is not None
    rule = rule_by_code("TPF601")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert rule.could_fire_tree(tree)  # the tree screen lets both through
    screened = rule.could_fire_project(tree, str(path.resolve()), index)
    result = runner.process_file(path, settings, runner.Mode.CHECK, False, None, None, project=index)
    return screened, [d.location.row for d in result.diagnostics if d.code == "TPF601"]


def test_a_module_whose_loops_cannot_train_is_screened_out(tmp_path):
    assert _screen_and_codes(tmp_path, NO_TRAINING_LOOP) == (False, [])


def test_a_loop_that_trains_through_a_helper_is_reported(tmp_path):
    assert _screen_and_codes(tmp_path, THROUGH_A_HELPER) == (True, [12])
