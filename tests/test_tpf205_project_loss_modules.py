"""TPF205 through a project loss module: calling an ``nn.Module`` of the project named like
a loss (``class OverlapLoss(nn.Module)``) gives its graph, as an ``nn.*Loss`` does, when its
``forward`` returns one expression that does not let the graph go last. A method of the
loop's criterion object that returns arithmetic on such a module kept in an attribute
(``return 1.0 - self.overlap(pred, y)``), summed over the epoch, keeps every step's graph.

Look-alikes stay silent: the loss module's ``forward`` returns ``.item()`` (through a name);
a module not named like a loss; a ``forward`` that returns a tuple; the score taken with
``.item()`` before it is summed; the score read under ``no_grad``."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tensors_project import _findings

LOSSES = """
    import torch
    from torch import nn


    class OverlapLoss(nn.Module):
        def __init__(self, eps=1e-6):
            super().__init__()
            self.eps = eps

        def forward(self, pred, target):
            weight = target.detach() * 0.5 + 0.5
            inter = (weight * pred * target).sum()
            value = 1.0 - 2.0 * inter / (pred.sum() + target.sum() + self.eps)
            return value.mean()


    class OverlapLossNumber(nn.Module):
        def forward(self, pred, target):
            value = 1.0 - (pred * target).sum() / (pred.sum() + target.sum())
            return value.item()


    class Overlap(nn.Module):
        def forward(self, pred, target):
            return 1.0 - (pred * target).sum() / (pred.sum() + target.sum())


    class OverlapPartsLoss(nn.Module):
        def forward(self, pred, target):
            inter = (pred * target).sum()
            return inter, pred.sum()


    class Objective(nn.Module):
        def __init__(self):
            super().__init__()
            self.bce = nn.BCELoss()
            self.overlap = {part}()

        def score(self, pred, target):
            return 1.0 - self.overlap(pred, target)

        def forward(self, pred, target):
            return self.bce(pred, target)
"""

EPOCH = """
    import torch
    from losses import Objective


    def run_epoch(loader, net, opt):
        criterion = Objective()
        score_total = 0.0
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = net(x)
            loss = criterion(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            {read}
            score_total += len(x) * score
        return score_total
"""

PLAIN = "score = criterion.score(out, y)"

CASES = {
    "a project loss module's graph": ("OverlapLoss", PLAIN, True),
    "its forward returns a number": ("OverlapLossNumber", PLAIN, False),
    "a module not named like a loss": ("Overlap", PLAIN, False),
    "its forward returns a tuple": ("OverlapPartsLoss", PLAIN, False),
    "the score taken as a number": ("OverlapLoss", "score = criterion.score(out, y).item()", False),
    "the score read under no_grad": ("OverlapLoss", "with torch.no_grad():\n                score = criterion.score(out, y)", False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_project_loss_module_carries_its_graph(tmp_path: Path, case: str):
    part, read, fires = CASES[case]
    files = {"losses.py": LOSSES.format(part=part), "epoch.py": EPOCH.format(read=read)}
    line = 17 if "\n" in read else 16
    assert _findings(tmp_path, files, "TPF205") == ([("epoch.py", line)] if fires else [])
