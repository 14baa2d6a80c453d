"""TPF105 across files without an explicit epoch loop: a sampler a helper module returns
feeds a loader that a training function rebinds to an endless project generator
(``loader = forever(loader)``, ``while True: for b in loader: yield b``) and steps through
with ``next``: each pass of the generator's ``while True`` is an epoch, and nothing sets
the sampler's epoch. The caller passes the helper's call straight as ``sampler=`` or binds
it to a name first. Look-alikes stay silent: a generator that sets the epoch itself, a
one-pass generator, a caller that asks the helper not to shuffle, an evaluation loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tensors_project import _findings

SAMPLERS = """
    from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler

    def make_sampler(ds, shuffle, distributed):
        if distributed:
            return DistributedSampler(ds, shuffle=shuffle)
        return RandomSampler(ds) if shuffle else SequentialSampler(ds)
"""

STREAMS = """
    def forever(loader):
        while True:
            for batch in loader:
                yield batch

    def once(loader):
        for batch in loader:
            yield batch
"""

STREAMS_WITH_EPOCH = """
    def forever(loader):
        rounds = 0
        while True:
            loader.sampler.set_epoch(rounds)
            for batch in loader:
                yield batch
            rounds += 1
"""

FIT = """
    from streams import {stream}

    def fit(net, loader, steps, opt):
        loader = {stream}(loader)
        for i in range(steps):
            x, y = next(loader)
            net(x).sum().backward()
            opt.step()
"""

RUN_INLINE = """
    from torch.utils.data import DataLoader
    from samplers import make_sampler
    from fit import fit

    def main(net, ds, opt, ddp):
        {name} = DataLoader(ds, batch_size=8, sampler=make_sampler(ds, shuffle={shuffle}, distributed=ddp))
        fit(net, {name}, 1000, opt)
"""

RUN_BOUND = """
    from torch.utils.data import DataLoader
    from samplers import make_sampler
    from fit import fit

    def main(net, ds, opt, ddp):
        chooser = make_sampler(ds, shuffle=True, distributed=ddp)
        batches = DataLoader(ds, batch_size=8, sampler=chooser)
        fit(net, batches, 1000, opt)
"""


def _project(run: str, stream: str = "forever", streams: str = STREAMS) -> dict:
    return {"samplers.py": SAMPLERS, "streams.py": streams, "fit.py": FIT.format(stream=stream), "run.py": run}


CASES = {
    "inline sampler, endless generator": (_project(RUN_INLINE.format(name="batches", shuffle="True")), True),
    "bound sampler, endless generator": (_project(RUN_BOUND), True),
    "the generator sets the epoch": (_project(RUN_INLINE.format(name="batches", shuffle="True"), streams=STREAMS_WITH_EPOCH), False),
    "a one-pass generator": (_project(RUN_INLINE.format(name="batches", shuffle="True"), stream="once"), False),
    "not shuffled": (_project(RUN_INLINE.format(name="batches", shuffle="False")), False),
    "an evaluation loader": (_project(RUN_INLINE.format(name="val_loader", shuffle="True")), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_endless_generator_walks_the_loader_every_epoch(tmp_path: Path, case: str):
    files, fires = CASES[case]
    assert _findings(tmp_path, files, "TPF105") == ([("samplers.py", 5)] if fires else [])
