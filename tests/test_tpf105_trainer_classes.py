"""TPF105 across modules through a trainer object: a builder module returns a loader whose
``DistributedSampler`` shuffles; a caller in another module unpacks it and hands it once to
a project class that keeps it (``self.<attr> = <param>``) and walks ``self.<attr>`` inside
an epoch loop of one of its methods. Look-alikes stay silent: the class's module sets the
epoch; the class walks the loader once; the walking method evaluates; the loader handed is
the other element of the tuple, which no method walks every epoch."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tensors_project import _findings

BUILDERS = """
    import torch
    from torch.utils.data import DistributedSampler


    def build(ds, held, workers):
        fit = torch.utils.data.DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds))
        check = torch.utils.data.DataLoader(held, batch_size=16, shuffle=False)
        return fit, check
"""

RUNNER = """
    import builders


    class Coach:
        def __init__(self, net, opt, stream):
            self.net = net
            self.opt = opt
            self.stream = stream

        def {method}(self, rounds):
            {loop}
                for batch in self.stream:
                    self.net(batch).sum().backward()
                    self.opt.step()
                    {extra}


    def main(net, opt, ds, held):
        fit, check = builders.build(ds, held, 4)
        Coach(net, opt, {handed}).{method}(10)
"""

EPOCHS = "for r in range(rounds):"
ONCE = "if rounds:"

CASES = {
    "walked every epoch by the coach": (dict(method="drill", loop=EPOCHS, extra="pass", handed="fit"), True),
    "the coach's module sets the epoch": (
        dict(method="drill", loop=EPOCHS, extra="self.stream.sampler.set_epoch(r)", handed="fit"),
        False,
    ),
    "walked once": (dict(method="drill", loop=ONCE, extra="pass", handed="fit"), False),
    "the walking method evaluates": (dict(method="evaluate", loop=EPOCHS, extra="pass", handed="fit"), False),
    "the other loader is handed": (dict(method="drill", loop=EPOCHS, extra="pass", handed="check"), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_trainer_object_walks_the_returned_loader_every_epoch(tmp_path: Path, case: str):
    fields, fires = CASES[case]
    files = {"builders.py": BUILDERS, "runner.py": RUNNER.format(**fields)}
    assert _findings(tmp_path, files, "TPF105") == ([("builders.py", 6)] if fires else [])
