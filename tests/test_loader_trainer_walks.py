"""TPF103 for loaders handed to a project trainer class that keeps them on ``self`` and walks
them every epoch (``facts/dataloader/trainer_walks.py``). Look-alikes: a class that walks the
loader once, one whose attribute may be another loader, a loader built inside the loop,
workers that are not known."""

from __future__ import annotations

from pathlib import Path
from typing import Set, Tuple

from project_tree import write_project
from test_loader_options_flow import _findings as _by_code


def _findings(root: Path, code: str) -> Set[Tuple[str, int]]:
    return _by_code(root).get(code, set())


ENGINE = '''
    import torch


    class Runner:
        def __init__(self, net, opt, learn_loader, probe_loader, total=10):
            self.net = net
            self.opt = opt
            self.learn_loader = learn_loader
            self.probe_loader = probe_loader
            self.total = total

        def probe(self):
            with torch.no_grad():
                for x, y in self.probe_loader:
                    self.net(x)

        def learn_once(self):
            for step, (x, y) in enumerate(self.learn_loader):
                self.net(x).sum().backward()
                if step % 100 == 0:
                    self.probe()

        def run(self):
            for epoch in range(self.total):
                self.learn_once()


    class OneShot:
        def __init__(self, net, loader):
            self.net = net
            self.loader = loader

        def score(self):
            for x, y in self.loader:
                self.net(x)


    class Swapping(Runner):
        def swap(self, other):
            self.learn_loader = other


    class Looping:
        def __init__(self, net, loader, epochs):
            self.net = net
            self.loader = loader
            self.epochs = epochs

        def fit(self):
            for epoch in range(self.epochs):
                for i, (x, y) in enumerate(self.loader):
                    self.net(x).sum().backward()


    def tqdm_like(it):
        return it
'''

SCRIPT = '''
    import argparse

    import torch
    from torch.utils.data import DataLoader

    from tools.engine import Looping, OneShot, Runner, Swapping

    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)


    def main(net, opt, train_set, valid_set):
        args = parser.parse_args()
        options = {"num_workers": 4, "pin_memory": True} if torch.cuda.is_available() else {}
        learn_loader = DataLoader(train_set, batch_size=8, shuffle=True, **options)
        probe_loader = DataLoader(valid_set, batch_size=8, num_workers=2)
        Runner(net, opt, learn_loader=learn_loader, probe_loader=probe_loader).run()
        looped = DataLoader(train_set, batch_size=8, num_workers=2)
        Looping(net, looped, 5).fit()

        once = DataLoader(valid_set, batch_size=8, num_workers=2)
        OneShot(net, once).score()
        swapped = DataLoader(train_set, batch_size=8, num_workers=2)
        other = DataLoader(valid_set, batch_size=8, num_workers=2)
        Swapping(net, opt, swapped, other).run()  # `other` is its probe loader: walked every epoch
        unknown = DataLoader(train_set, batch_size=8, num_workers=args.workers)
        Looping(net, unknown, 5).fit()
        for epoch in range(3):
            fresh = DataLoader(train_set, batch_size=8, num_workers=2)
            OneShot(net, fresh).score()
'''


def test_loaders_a_trainer_class_walks_every_epoch(tmp_path):
    files = {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF103"]\n',
        "tools/__init__.py": "",
        "tools/engine.py": ENGINE,
        "scripts/train.py": SCRIPT,
    }
    root = write_project(tmp_path / "p", files)
    assert _findings(root, "TPF103") == {("scripts/train.py", n) for n in (15, 16, 18, 24)}
