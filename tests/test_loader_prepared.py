"""Loaders, models and optimizers handed to Hugging Face Accelerate's ``prepare`` and taken
back under their names: the value engine reads each returned name as what was handed at
that position (``project/accelerate_values.py``), so the loader rules follow the loader:
TPF103 sees it walked every epoch; TPF104 does not treat its batches as pinned (Accelerate
places them), TPF105 leaves its sampler's epoch to Accelerate. Look-alikes: an object that
only has a ``prepare`` method, a name rebound to something else, a loader taken back at
another position."""

from __future__ import annotations

from test_loader_options_flow import _findings
from project_tree import write_project

PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF103", "TPF104", "TPF105"]\n',
    "fit.py": '''
        import torch
        from accelerate import Accelerator
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler


        def run(data, net, opt, epochs, wide):
            runner = Accelerator()
            feed = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
            if wide:
                (net, opt, feed) = runner.prepare(net, opt, feed)
            else:
                net, opt, feed = runner.prepare(net, opt, feed)
            for epoch in range(epochs):
                for inputs, labels in feed:
                    loss = net(inputs.cuda()).sum()
                    runner.backward(loss)
                    opt.step()


        def run_single(data, net, epochs):
            runner = Accelerator()
            spread = DistributedSampler(data)
            feed = DataLoader(data, batch_size=8, num_workers=2, sampler=spread)
            feed = runner.prepare(feed)
            for epoch in range(epochs):
                for inputs in feed:
                    net(inputs)


        class Stager:
            def prepare(self, *things):
                return things


        def run_other(data, net, epochs):
            stager = Stager()
            feed = DataLoader(data, batch_size=8, num_workers=2)
            net, feed = stager.prepare(net, feed)
            for epoch in range(epochs):
                for inputs in feed:
                    net(inputs)


        def run_swapped(data, net, epochs):
            runner = Accelerator()
            feed = DataLoader(data, batch_size=8, num_workers=2)
            feed, net = runner.prepare(net, feed)
            for epoch in range(epochs):
                for inputs in feed:
                    net(inputs)


        def run_plain(data, net, epochs):
            feed = DataLoader(data, batch_size=8, num_workers=2, pin_memory=True)
            for epoch in range(epochs):
                for inputs, labels in feed:
                    net(inputs.cuda())
    ''',
}


def test_prepared_loaders_are_the_loaders_handed_in(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    found = _findings(root)
    # TPF103: the prepared loaders (9, 24), walked every epoch; not the loader handed to a
    # project object's `prepare` (38) or taken back at another position (47); the plain one (55).
    assert found.get("TPF103", set()) == {("fit.py", 9), ("fit.py", 24), ("fit.py", 55)}
    # TPF104: only the plain pinned loader's batch (58); Accelerate places prepared batches.
    assert found.get("TPF104", set()) == {("fit.py", 58)}
    # TPF105: Accelerate sets a prepared loader's sampler epoch.
    assert found.get("TPF105", set()) == set()
