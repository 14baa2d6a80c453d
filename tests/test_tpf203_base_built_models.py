"""TPF203 through a model a base class builds for its subclass: ``Exp_Basic.__init__`` runs
``self.model = self._build_model().cuda()``, a subclass overrides ``_build_model`` with
project networks, and its ``valid()`` puts ``self.model`` in eval mode, then runs a loop
calling a sibling method (``self._process_one_batch(data, x)``) that runs ``self.model(x)``.
The base's binding is read for the subclass's object (``attribute_values``), so the sibling
runs a model forward.
Look-alikes: the same loop inside ``with torch.no_grad():``; an evaluation method its every
caller runs inside no-grad; the training loop (backward and step); a subclass whose
``_build_model`` builds no torch module."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "exp_basic.py": """
        import torch


        class ExpBasic(object):
            def __init__(self, args):
                self.args = args
                self.model = self._build_model().cuda()

            def _build_model(self):
                raise NotImplementedError
                return None
    """,
    "nets.py": """
        from torch import nn


        class Net(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.conv = nn.Conv1d(width, width, 3)

            def forward(self, x):
                return self.conv(x)


        class Wide(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.conv = nn.Conv1d(width, 2 * width, 3)

            def forward(self, x):
                return self.conv(x)
    """,
    "exp_series.py": """
        import torch
        from exp_basic import ExpBasic
        from nets import Net, Wide


        class ExpSeries(ExpBasic):
            def _build_model(self):
                if self.args.wide:
                    model = Wide(self.args.width)
                else:
                    model = Net(self.args.width)
                return model.double()

            def _process_one_batch(self, data, x):
                x = x.double().cuda()
                out = self.model(x)
                return out, data.scale(out)

            def valid(self, data, loader):
                self.model.eval()
                losses = []
                for x in loader:  #!
                    out, scaled = self._process_one_batch(data, x)
                    losses.append(out.detach().cpu())
                return losses

            def test(self, data, loader):
                self.model.eval()
                outs = []
                with torch.no_grad():
                    for x in loader:
                        outs.append(self._process_one_batch(data, x)[0])
                return outs

            def score(self, data, loader):
                self.model.eval()
                return [self._process_one_batch(data, x)[0] for x in loader]

            def predict(self, data, loader):
                self.model.eval()
                outs = []
                for x in loader:
                    outs.append(self._process_one_batch(data, x)[0])
                return outs

            def train(self, data, loader, valid_loader, opt):
                self.model.train()
                for x in loader:
                    out, _ = self._process_one_batch(data, x)
                    out.mean().backward()
                    opt.step()
                self.valid(data, valid_loader)
                with torch.no_grad():
                    self.predict(data, valid_loader)
    """,
    "exp_lists.py": """
        from exp_basic import ExpBasic


        class Table:
            def cuda(self):
                return self

            def __call__(self, x):
                return [x]


        class ExpLists(ExpBasic):
            def _build_model(self):
                return Table()

            def _run(self, x):
                return self.model(x)

            def valid(self, loader):
                self.model.eval()
                return [self._run(x) for x in loader]

            def check(self, loader):
                self.model.eval()
                out = []
                for x in loader:
                    out.append(self._run(x))
                return out
    """,
}


def test_a_sibling_method_runs_the_model_a_base_built(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF203") == _marked(PROJECT)
