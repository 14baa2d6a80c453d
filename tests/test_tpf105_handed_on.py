"""TPF105 across modules through functions that only hand the loader on: a maker returns
``(dataset, loader, sampler)``; a hub in another module unpacks it on one branch and
returns ``(loader, sampler)``; a builder drops the sampler (``loader, _ = open_data(...)``)
and returns the loader; its caller walks it every epoch through a project function it
hands it to by keyword. Nothing sets the epoch (``project_iterations._forwarded``).

Look-alikes stay silent: the hub's module sets the epoch; the builder rebinds the loader
before returning it; the loader is walked once; the builder hands on the sampler, not the
loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tensors_project import _findings

MAKER = """
    import torch


    def make_set(ds, batch):
        sampler = torch.utils.data.distributed.DistributedSampler(dataset=ds)
        loader = torch.utils.data.DataLoader(ds, sampler=sampler, batch_size=batch)
        return ds, loader, sampler
"""

HUB = """
    from maker import make_set
    from clips import make_clips


    def open_data(kind, ds, batch):
        if kind == "folder":
            _, loader, sampler = make_set(ds, batch)
        else:
            _, loader, sampler = make_clips(ds, batch)
        {extra}
        return (loader, sampler)
"""

PROBE = """
    from hub import open_data


    def build(ds):
        {build}


    def one_epoch(net, opt, loader):
        for x, y in loader:
            net(x.cuda()).sum().backward()
            opt.step()


    def main(ds, net, opt):
        fit_loader = build(ds)
        {walk}
"""

BUILD = "loader, _ = open_data('folder', ds, 32)\n        return loader"
EPOCHS = "for epoch in range(10):\n            one_epoch(net=net, opt=opt, loader=fit_loader)"

CASES = {
    "handed on twice, walked every epoch": ("pass", BUILD, EPOCHS, True),
    "the hub's module sets the epoch": ("sampler.set_epoch(0)", BUILD, EPOCHS, False),
    "rebound before it is returned": ("pass", "loader, _ = open_data('folder', ds, 32)\n        loader = list(loader)\n        return loader", EPOCHS, False),
    "walked once": ("pass", BUILD, "one_epoch(net=net, opt=opt, loader=fit_loader)", False),
    "the sampler handed on": ("pass", "_, sampler = open_data('folder', ds, 32)\n        return sampler", EPOCHS, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_loader_handed_on_by_builders_is_walked_every_epoch(tmp_path: Path, case: str):
    extra, build, walk, fires = CASES[case]
    files = {"maker.py": MAKER, "hub.py": HUB.format(extra=extra), "probe.py": PROBE.format(build=build, walk=walk)}
    assert _findings(tmp_path, files, "TPF105") == ([("maker.py", 5)] if fires else [])
