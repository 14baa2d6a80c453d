"""TPF402 through a helper that moves what its callers hand it: ``def on_gpu(t): return
Variable(t).cuda()`` called with ``torch.randn(...)`` written in the call is a tensor made on
the host and copied to the device, reported at the helper's move (RULES.md's anchor), once
for all its callers. Look-alikes stay silent: a helper that moves under a flag named for
something else, one that does more than move, one whose callers only pass batches or
names, and a helper that keeps the tensor where it is."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "moves.py": """
        import torch
        from torch.autograd import Variable


        def on_gpu(t):
            return Variable(t).cuda()  #!


        def maybe_pinned(t, pinned):
            if pinned:
                return t.cuda()
            return t


        def scaled(t, device):
            t = t * 2
            return t.to(device)


        def only_batches(t):
            return t.cuda()


        def stays(t):
            return t.float()


        class Sampler:
            def __init__(self, use_gpu):
                self.use_gpu = use_gpu

            def place(self, t):
                if self.use_gpu:
                    return Variable(t).cuda()  #!
                else:
                    return Variable(t)

            def draw(self, n):
                return self.place(torch.randn(n, 8))
    """,
    "fit.py": """
        import torch
        from moves import on_gpu, maybe_pinned, scaled, only_batches, stays, Sampler


        def fit(model, batches, opt, device):
            sampler = Sampler(True)
            for x in batches:
                noise = on_gpu(torch.randn(x.size(0), 16))
                x = only_batches(x)
                a = maybe_pinned(torch.zeros(4), False)
                b = scaled(torch.ones(4), device)
                c = stays(torch.ones(4))
                z = sampler.place(torch.randn(x.size(0), 8))
                loss = model(x, noise, z).mean() + a.sum() + b.sum() + c.sum()
                loss.backward()
                opt.step()
    """,
}


def test_a_helper_moves_the_factory_tensor_its_caller_makes(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF402") == _marked(PROJECT)
