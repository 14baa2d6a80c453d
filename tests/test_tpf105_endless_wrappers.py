"""TPF105 through a project iterable class that never ends: its ``__iter__`` restarts the
source it keeps inside ``while True:`` (``except StopIteration: self.it = iter(self.src)``),
so the one ``for`` over the wrapper walks the loader again and again, each round an epoch.
The loader reaches it from a builder whose ``shuffle=`` is a parameter that the training
call passes as ``True`` and the evaluation call as ``False``, rebound to a one-pass staging
wrapper (``loader = Staged(loader)``) and returned in a tuple the caller unpacks.
Look-alikes stay silent: the wrapper walks the evaluation loader; a wrapper that sets the
sampler's epoch itself; one that stops after one pass (``break``); a one-pass wrapper; a
builder every call asks not to shuffle."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_tensors_project import _findings

WRAPPERS = """
    class Forever:
        def __init__(self, source):
            self.source = source
            self.current = iter(source)

        def __iter__(self):
            while True:
                try:
                    item = next(self.current)
                except StopIteration:
                    self.current = iter(self.source)
                    item = next(self.current)
                yield item


    class Staged:
        def __init__(self, source, device):
            self.source = source
            self.device = device

        def __iter__(self):
            pending = iter(self.source)
            batch = next(pending, None)
            while batch is not None:
                yield batch.to(self.device)
                batch = next(pending, None)


    class Capped:
        def __init__(self, source):
            self.source = source

        def __iter__(self):
            while True:
                for item in self.source:
                    yield item
                break
"""

# in a module of its own: a module that mentions `set_epoch` is read as setting it
COUNTING = """
    class Rounds:
        def __init__(self, loader):
            self.loader = loader

        def __iter__(self):
            rounds = 0
            while True:
                self.loader.sampler.set_epoch(rounds)
                for batch in self.loader:
                    yield batch
                rounds += 1

"""

FIT = """
    from torch.utils.data import DataLoader, DistributedSampler
    from wrappers import Forever, Staged, Capped
    from counting import Rounds


    def build_loader(ds, training):
        sampler = DistributedSampler(ds, shuffle=training)
        return DataLoader(ds, sampler=sampler, batch_size=8)


    def build_all(ds, other):
        fit_loader = build_loader(ds, training={fit_shuffles})
        check_loader = build_loader(other, training=False)
        fit_loader = Staged(fit_loader, "cuda")
        check_loader = Staged(check_loader, "cuda")
        return fit_loader, check_loader


    def run(ds, other, model, opt):
        fit_loader, check_loader = build_all(ds, other)
        for step, batch in enumerate({walk}):
            model(batch).sum().backward()
            opt.step()
"""

CASES = {
    "endless wrapper over the training loader": ("True", "Forever(fit_loader)", True),
    "endless wrapper over the evaluation loader": ("True", "Forever(check_loader)", False),
    "a wrapper that sets the epoch": ("True", "Rounds(fit_loader)", False),
    "a wrapper that stops after one pass": ("True", "Capped(fit_loader)", False),
    "a one-pass wrapper": ("True", "Staged(fit_loader, 'cuda')", False),
    "no call shuffles": ("False", "Forever(fit_loader)", False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_endless_wrapper_walks_the_loader_every_epoch(tmp_path: Path, case: str):
    shuffles, walk, fires = CASES[case]
    files = {"wrappers.py": WRAPPERS, "counting.py": COUNTING, "fit.py": FIT.format(fit_shuffles=shuffles, walk=walk)}
    assert _findings(tmp_path, files, "TPF105") == ([("fit.py", 7)] if fires else [])


PLAIN = """
    from torch.utils.data import DataLoader, DistributedSampler
    from wrappers import Staged


    def build_loader(ds):
        sampler = DistributedSampler(ds, shuffle=True)
        return DataLoader(ds, sampler=sampler, batch_size=8)


    def run(ds, model, opt):
        loader = build_loader(ds)
        loader = {rebinding}
        for epoch in range(10):
            for batch in loader:
                model(batch).sum().backward()
                opt.step()
"""


@pytest.mark.parametrize(
    "rebinding, fires",
    [
        ("Staged(loader, 'cuda')", True),  # a one-pass wrapper of the loader bound before
        ("Staged(build_loader(ds), 'cuda')", True),
        ("Staged(other_loader, 'cuda')", False),  # another loader (unknown) replaces it
    ],
)
def test_a_name_rebound_to_a_wrapper_of_itself_keeps_its_loader(tmp_path: Path, rebinding: str, fires: bool):
    files = {"wrappers.py": WRAPPERS, "fit.py": PLAIN.format(rebinding=rebinding)}
    assert _findings(tmp_path, files, "TPF105") == ([("fit.py", 6)] if fires else [])
