"""TPF203: a loop after ``obj.eval()`` that calls a method of that object, whose body runs
a torch module forward with autograd on (``coder.encode(x)`` of a project module;
``runner.encode(x)`` of a plain object holding one), is an evaluation loop. Look-alikes stay
silent: a method that trains, one that runs its forward under no_grad or is decorated, one
the project does not define (``load_state_dict``), an object switched back to train mode, a
loop already under no_grad, an object whose class is unknown."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "coders.py": """
        import torch
        import torch.nn as nn


        class Coder(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Linear(4, 2)
                self.dec = nn.Linear(2, 4)

            def encode(self, x):
                return self.enc(x)

            @torch.no_grad()
            def quiet_encode(self, x):
                return self.enc(x)

            def guarded_encode(self, x):
                with torch.no_grad():
                    return self.enc(x)

            def forward(self, x):
                return self.dec(self.enc(x))


        class Runner:
            def __init__(self, net, opt):
                self.net = net
                self.opt = opt

            def eval(self):
                self.net.eval()

            def train(self):
                self.net.train()

            def encode(self, x):
                return self.net.encode(x)

            def fit(self, x):
                loss = self.net(x).sum()
                loss.backward()
                self.opt.step()
    """,
    "score.py": """
        import sys
        import torch
        from coders import Coder, Runner

        net = Coder()
        runner = Runner(net, torch.optim.SGD(net.parameters(), lr=0.1))
        coder = Coder()
        coder.eval()
        for x in torch.randn(5, 3, 4):  #!
            code = coder.encode(x)
        for x in torch.randn(5, 3, 4):
            code = coder.quiet_encode(x)
        for x in torch.randn(5, 3, 4):
            code = coder.guarded_encode(x)
        for path in sys.argv[1:]:
            coder.load_state_dict(torch.load(path))
        with torch.no_grad():
            for x in torch.randn(5, 3, 4):
                code = coder.encode(x)

        runner.eval()
        for x in torch.randn(5, 3, 4):  #!
            code = runner.encode(x)
        for x in torch.randn(5, 3, 4):
            runner.fit(x)


        def later(runner, stranger):
            runner.eval()
            runner.train()
            for x in torch.randn(5, 3, 4):
                code = runner.encode(x)
            stranger.eval()
            for x in torch.randn(5, 3, 4):
                code = stranger.encode(x)
    """,
}


def test_a_method_of_an_object_in_eval_mode_evaluates(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF203") == _marked(PROJECT)
