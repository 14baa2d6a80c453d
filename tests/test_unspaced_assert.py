"""``assert(a if c else b)`` (no space after ``assert``) is valid Python that LibCST's parser accepts
but its node validation refuses; the engine parses without validation, so a walk must not
rebuild nodes (``node.children`` does; ``analysis.walk.child_nodes`` does not). A file with
one used to stop TPF105 with an internal error (new-rules-5: wanda's ``main.py``) and
TPF205's walks could too: each rule still reports, and no error is raised."""

from __future__ import annotations

from pathlib import Path

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project

SOURCE = """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler


    class Coach:
        def __init__(self, loader):
            self.loader = loader

        def fit(self, net, opt, epochs):
            for epoch in range(epochs):
                for x, y in self.loader:
                    net(x).sum().backward()
                    opt.step()


    def probe(ds, net, opt):
        assert(len(ds) > 0 if net.training else True)
        check = DataLoader(ds, batch_size=8)
        Coach(check).fit(net, opt, 1)


    def main(ds, net, opt, args):
        assert(args.epochs > 0)
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        total = 0
        for epoch in range(args.epochs):
            for x, y in loader:
                assert(x is not None)
                loss = torch.nn.functional.mse_loss(net(x.cuda()), y.cuda())
                loss.backward()
                opt.step()
                total += loss
"""


def test_an_unspaced_assert_stops_no_rule(tmp_path: Path):
    write_project(tmp_path, {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF105", "TPF205"]\n', "train.py": SOURCE})
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    assert [e for r in results for e in r.errors] == []
    assert sorted((d.code, d.location.row) for r in results for d in r.diagnostics) == [("TPF105", 24), ("TPF205", 32)]


SPARSE_SOURCE = """
    import torch
    import torch.nn as nn


    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(1000, 32, sparse=False)
            self.head = nn.Linear(32, 4)

        def forward(self, x):
            assert(x.dim() == 2 if self.training else True)
            return self.head(self.embed(x).mean(1))


    def train(loader):
        model = Tagger().cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(3):
            for x, y in loader:
                assert(len(x) > 0 if epoch else True)
                loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
"""


def test_an_unspaced_assert_stops_no_preview_rule(tmp_path: Path):
    """TPF602's walk of a module that spells ``sparse`` and the other walks over whole
    statements (host tensors, TPF502's guards) read the same unvalidated nodes."""
    config = '[tool.pytorch-perflint]\npreview = true\nselect = ["TPF4", "TPF5", "TPF6"]\n'
    write_project(tmp_path, {"pyproject.toml": config, "train.py": SPARSE_SOURCE})
    results, _ = runner.run(sorted(tmp_path.rglob("*.py")), load_settings([tmp_path]), jobs=1)
    assert [e for r in results for e in r.errors] == []
    codes = {d.code for r in results for d in r.diagnostics}
    assert "TPF602" in codes  # the optimizer is still reported: no sparse embedding here
