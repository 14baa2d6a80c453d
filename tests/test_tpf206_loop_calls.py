"""TPF206 asks whether a call empties the cache before it builds the module's training
facts (which dispatch every project call of the module): a call outside any loop of its
function is never asked about, and a call in a loop's header inside a training step loop
is still found. Each case runs the rule on a project, so an order that drops a finding
(say, one that skips every call not in a loop's body) fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project.linted import index_for

from project_tree import write_project

HELPERS = """
    import torch

    def free_memory():
        torch.cuda.empty_cache()
        return []

    def log(x):
        return x
"""
IN_BODY = """
    import torch
    from helpers import free_memory

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            free_memory()
"""
# The inner loop does not train: its header runs once per step of the outer loop.
IN_HEADER = """
    import torch
    from helpers import free_memory

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            for name in free_memory():
                print(name)
"""
OUTSIDE = """
    import torch
    from helpers import free_memory

    def train(model, loader, opt):
        model.cuda()
        free_memory()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
"""
NOT_EMPTYING = """
    import torch
    from helpers import log

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            log(x)
"""


def _lines(tmp_path: Path, train: str):
    root = write_project(tmp_path, {"helpers.py": HELPERS, "train.py": train})
    settings = load_settings([root])
    path = root / "train.py"
    index = index_for(path, settings)
    result = runner.process_file(path, settings, runner.Mode.CHECK, False, None, None, project=index)
    return [d.location.row for d in result.diagnostics if d.code == "TPF206"]


@pytest.mark.parametrize(
    ("train", "lines"),
    [(IN_BODY, [10]), (IN_HEADER, [10]), (OUTSIDE, []), (NOT_EMPTYING, [])],
    ids=["in-the-step-loop", "in-a-loop-header-inside-the-step-loop", "before-the-loop", "a-helper-that-does-not-empty"],
)
def test_helper_calls_in_step_loops(tmp_path, train, lines):
    assert _lines(tmp_path, train) == lines
