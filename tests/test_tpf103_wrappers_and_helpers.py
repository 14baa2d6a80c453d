"""TPF103: loaders walked every epoch through a project iterable, and loaders a helper
builds with the worker count its callers pass.

* ``for x, y in Staging(loader, device)`` in an epoch loop, where the class keeps its
  argument (``self.source = source``) and its ``__iter__`` walks it: every pass over the
  wrapper restarts the loader's workers (also when the wrapper is built once, before the
  loop). Look-alikes: a wrapper that takes one iterator of its source for its whole life
  (``self.stream = iter(source)``), a wrapper walked once, one whose attribute another
  method rebinds.
* ``build_feed(dataset, workers)`` returning ``DataLoader(..., num_workers=workers)``,
  walked every epoch by callers in another module that all pass 4. Look-alike: a helper
  one of whose callers passes ``args.workers`` (not known).
* ``checks = build_checks(ds, 4)`` at a script's top level, and ``check(model, epoch)`` in
  its epoch loop, where ``check`` walks ``checks`` as a global. Look-alike: a function whose
  parameter of the same name receives something else."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "feeding.py": """
        import torch
        from torch.utils.data import DataLoader


        class Staging:
            def __init__(self, source, device):
                self.source = source
                self.device = device

            def __iter__(self):
                for inputs, targets in self.source:
                    yield inputs.to(self.device), targets.to(self.device)


        class OneShot:
            def __init__(self, source):
                self.stream = iter(source)

            def __iter__(self):
                return self

            def __next__(self):
                return next(self.stream)


        class Swappable:
            def __init__(self, source):
                self.source = source

            def swap(self, other):
                self.source = other

            def __iter__(self):
                return iter(self.source)


        def build_feed(dataset, workers, batch=32):
            return DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers)  #!


        def build_feed_open(dataset, workers):
            return DataLoader(dataset, batch_size=16, num_workers=workers)


        def build_checks(dataset, workers):
            return DataLoader(dataset, batch_size=16, num_workers=workers)  #!


        def build_shadowed(dataset, workers):
            return DataLoader(dataset, batch_size=16, num_workers=workers)
    """,
    "script.py": """
        import torch

        from feeding import build_checks, build_shadowed


        def check(model, epoch):
            for inputs, targets in enumerate(checks):
                model(inputs)


        def check_shadowed(model, shadowed):
            for inputs, targets in shadowed:
                model(inputs)


        if __name__ == "__main__":
            model = torch.nn.Linear(4, 1)
            checks = build_checks(torch.zeros(8, 4), 4)
            shadowed = build_shadowed(torch.zeros(8, 4), 4)
            for epoch in range(10):
                check(model, epoch)
                check_shadowed(model, [])
    """,
    "train.py": """
        import torch
        from torch.utils.data import DataLoader

        from feeding import OneShot, Staging, Swappable, build_feed, build_feed_open


        def fit(model, opt, dataset, epochs):
            loader = DataLoader(dataset, batch_size=64, num_workers=3)  #!
            for epoch in range(epochs):
                for inputs, targets in Staging(loader, "cuda"):
                    opt.zero_grad()
                    model(inputs).sum().backward()
                    opt.step()


        def fit_staged(model, opt, dataset, epochs):
            loader = DataLoader(dataset, batch_size=64, num_workers=2)  #!
            staged = Staging(loader, "cuda")
            for epoch in range(epochs):
                for inputs, targets in staged:
                    model(inputs).sum().backward()
                    opt.step()


        def fit_once(model, opt, dataset, epochs):
            loader = DataLoader(dataset, batch_size=64, num_workers=3)
            stream = OneShot(loader)
            for epoch in range(epochs):
                inputs, targets = next(stream)
                model(inputs).sum().backward()


        def fit_single(model, dataset):
            loader = DataLoader(dataset, batch_size=64, num_workers=3)
            for inputs, targets in Staging(loader, "cuda"):
                model(inputs).sum().backward()


        def fit_swapped(model, opt, dataset, epochs):
            loader = DataLoader(dataset, batch_size=64, num_workers=3)
            for epoch in range(epochs):
                for inputs, targets in Swappable(loader):
                    model(inputs).sum().backward()


        def fit_built(model, opt, dataset, epochs):
            feed = build_feed(dataset, 4)
            for epoch in range(epochs):
                for inputs, targets in feed:
                    model(inputs).sum().backward()
                    opt.step()


        def evaluate_built(model, dataset, epochs):
            feed = build_feed(dataset, 4, batch=8)
            for epoch in range(epochs):
                for inputs, targets in feed:
                    model(inputs)


        def fit_open(model, opt, dataset, epochs, args):
            feed = build_feed_open(dataset, args.workers)
            for epoch in range(epochs):
                for inputs, targets in feed:
                    model(inputs).sum().backward()
                    opt.step()


        def fit_open_again(model, opt, dataset, epochs):
            feed = build_feed_open(dataset, 4)
            for epoch in range(epochs):
                for inputs, targets in feed:
                    model(inputs).sum().backward()
    """,
}


def test_wrappers_walked_every_epoch_and_helpers_given_workers(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF103") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
