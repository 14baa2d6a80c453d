"""Loaders through the cross-module shape of real training code (issue 22, review-11's
misses): an entry script's epoch loop handing its loaders to a train function of another
module (a module-level caller read at its line, a name rebound on an ``if`` arm in the
loop), and a loader kept by a base class's ``__init__`` whose subclasses are built through
``super().__init__(*args, **kwargs)`` and through a class a project factory returns.
Each with the look-alikes that must stay silent: callers that disagree, a forward that
changes what it hands on, a factory result used as a value, a walk once, a rebinding that
always runs."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, Set, Tuple

from project_tree import write_project
from test_dataloader_project import _findings

SELECT = '[tool.pytorch-perflint]\nselect = ["TPF103", "TPF104"]\n'


def _marked(files: Dict[str, str], code: str) -> Set[Tuple[str, int]]:
    """The lines ending in ``# CODE`` (written after the dedent, as the tree holds them)."""
    out = set()
    for name, source in files.items():
        if name.endswith(".py"):
            lines = textwrap.dedent(source).lstrip("\n").splitlines()
            out |= {(name, i + 1) for i, text in enumerate(lines) if text.rstrip().endswith(f"# {code}")}
    return out


def _check(tmp_path: Path, files: Dict[str, str]) -> None:
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, **files})
    for code in ("TPF103", "TPF104"):
        assert _findings(root, code) == _marked(files, code), code
        for name in files:  # each module linted alone sees the same project
            assert _findings(root, code, name) == {f for f in _marked(files, code) if f[0] == name}, (code, name)


FIT = '''
    import torch


    def fit_one_epoch(model, optimizer, gen, gen_val, epoch_step, cuda):
        for iteration, batch in enumerate(gen):
            if iteration >= epoch_step:
                break
            images, labels = batch[0], batch[1]
            with torch.no_grad():
                if cuda:
                    images = images.cuda()  # TPF104
            loss = model(images, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        for iteration, batch in enumerate(gen_val):
            images = batch[0]
            if cuda:
                images = images.cuda()  # TPF104


    def count(gen):
        return len(gen)
'''

ENTRY = '''
    import torch
    from torch.utils.data import DataLoader
    from utils.fit import fit_one_epoch, count

    if __name__ == "__main__":
        workers = 4
        model = torch.nn.Linear(4, 4).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        unfrozen = False
        gen = DataLoader(train_set, batch_size=8, num_workers=workers, pin_memory=True)  # TPF103
        gen_val = DataLoader(val_set, batch_size=8, num_workers=workers, pin_memory=True)  # TPF103
        sized = DataLoader(val_set, batch_size=8, num_workers=workers)
        for epoch in range(100):
            if epoch >= 50 and not unfrozen:
                gen = DataLoader(train_set, batch_size=4, num_workers=workers, pin_memory=True)  # TPF103
                unfrozen = True
            fit_one_epoch(model, optimizer, gen, gen_val, 10, True)
            print(count(sized))
'''


REBUILT_ONCE = """
            if epoch >= 50 and not unfrozen:
                gen = DataLoader(train_set, batch_size=4, num_workers=workers, pin_memory=True)  # TPF103
                unfrozen = True
"""
REBUILT_ALWAYS = """
            gen = DataLoader(train_set, batch_size=4, num_workers=workers, pin_memory=True)
            unfrozen = True
"""


def test_an_entry_scripts_epoch_loop_handing_loaders_to_another_module(tmp_path: Path) -> None:
    _check(tmp_path, {"utils/__init__.py": "", "utils/fit.py": FIT, "train.py": ENTRY})


def test_handed_loaders_that_cannot_be_known_stay_silent(tmp_path: Path) -> None:
    files = {
        "utils/__init__.py": "",
        "utils/fit.py": FIT.replace("  # TPF104", ""),
        # the loader is built anew on every epoch before the call: the one before the loop never reaches it
        "train.py": ENTRY.replace(REBUILT_ONCE, REBUILT_ALWAYS).replace("  # TPF103", ""),
        # another caller hands unpinned loaders: the parameter is not known to be pinned
        "probe.py": '''
            from torch.utils.data import DataLoader
            from utils.fit import fit_one_epoch

            def probe(model, optimizer, ds):
                plain = DataLoader(ds, batch_size=2)
                fit_one_epoch(model, optimizer, plain, plain, 1, True)
        ''',
    }
    assert REBUILT_ONCE in ENTRY
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, **files})
    assert _findings(root, "TPF104") == set()
    # gen_val is still handed every epoch; gen is rebuilt each time round
    assert _findings(root, "TPF103") == {("train.py", 11)}


RUNNING = '''
    import torch


    class BaseRunner(object):
        def __init__(self, model, dataloader, device, optimizer=None):
            self.model = model
            self.dataloader = dataloader
            self.device = device
            self.optimizer = optimizer


    class UnsupervisedRunner(BaseRunner):
        def train_epoch(self):
            for i, batch in enumerate(self.dataloader):
                X, targets, masks = batch
                targets = targets.to(self.device)  # TPF104
                masks = masks.to(self.device)  # TPF104
                out = self.model(X.to(self.device))  # TPF104


    class SupervisedRunner(BaseRunner):
        def __init__(self, *args, **kwargs):
            super(SupervisedRunner, self).__init__(*args, **kwargs)
            self.classification = isinstance(args[3], torch.nn.CrossEntropyLoss)

        def evaluate(self):
            for X, targets in self.dataloader:
                targets = targets.to(self.device)  # TPF104


    def pipeline_factory(config):
        if config["task"] == "imputation":
            return config["dataset"], UnsupervisedRunner
        return config["dataset"], SupervisedRunner


    def fold_evaluate(dataset, model, device):
        loader = torch.utils.data.DataLoader(dataset, batch_size=4, pin_memory=True)
        UnsupervisedRunner(model, loader, device).train_epoch()
'''

MAIN = '''
    import torch
    from torch.utils.data import DataLoader
    from running import pipeline_factory


    def main(config, model):
        device = torch.device("cuda")
        dataset_class, runner_class = pipeline_factory(config)
        train_loader = DataLoader(dataset_class("train"), batch_size=8, shuffle=True, pin_memory=True)
        val_loader = DataLoader(dataset_class("val"), batch_size=8, pin_memory=True)
        trainer = runner_class(model, train_loader, device, torch.optim.SGD(model.parameters(), lr=0.1))
        evaluator = runner_class(model, val_loader, device)
        for epoch in range(10):
            trainer.train_epoch()
            evaluator.evaluate()
'''


def test_a_base_classs_loader_through_forwarded_and_factory_made_constructors(tmp_path: Path) -> None:
    _check(tmp_path, {"running.py": RUNNING, "main.py": MAIN})


def test_a_base_classs_loader_through_an_explicit_super_call(tmp_path: Path) -> None:
    explicit = RUNNING.replace(
        "        def __init__(self, *args, **kwargs):\n            super(SupervisedRunner, self).__init__(*args, **kwargs)\n            self.classification = isinstance(args[3], torch.nn.CrossEntropyLoss)",
        "        def __init__(self, model, dataloader, device, optimizer=None, classes=2):\n            super().__init__(model, dataloader, device, optimizer)\n            self.classes = classes",
    )
    assert explicit != RUNNING
    _check(tmp_path, {"running.py": explicit, "main.py": MAIN})


def test_constructors_that_cannot_be_followed_stay_silent(tmp_path: Path) -> None:
    silent = RUNNING.replace("  # TPF104", "")
    cases = {
        # the forward changes what it hands on before the call
        "popped": (silent.replace("super(SupervisedRunner, self).__init__(*args, **kwargs)", "kwargs.pop('optimizer', None)\n        super(SupervisedRunner, self).__init__(*args, **kwargs)"), MAIN),
        # the factory's result is handed on, not only called: its calls elsewhere are unknown
        "escaped": (silent, MAIN.replace("for epoch in range(10):", "registry.append(runner_class)\n    for epoch in range(10):")),
        # one caller's loader is not pinned
        "unpinned": (silent, MAIN.replace('DataLoader(dataset_class("val"), batch_size=8, pin_memory=True)', 'DataLoader(dataset_class("val"), batch_size=8)')),
    }
    for name, (running, main) in cases.items():
        root = write_project(tmp_path / name, {"pyproject.toml": SELECT, "running.py": running, "main.py": main})
        # (a forward that cannot be followed leaves the base's parameter unknown for every subclass)
        assert _findings(root, "TPF104") == set(), name


OPTIONS = '''
    import platform


    def os_kwargs():
        kwargs = {}
        if platform.system() == "Darwin":
            kwargs = {"multiprocessing_context": "forkserver", "persistent_workers": True}
        return kwargs


    def cuda_kwargs(cuda):
        kwargs = {}
        if cuda:
            kwargs = {"pin_memory": True}
        return kwargs


    def either_kwargs(fast):
        if fast:
            return {"pin_memory": True, "num_workers": 4}
        return {"pin_memory": False, "num_workers": 4}
'''

LOADERS = '''
    import torch
    from torch.utils.data import DataLoader
    from options import cuda_kwargs, either_kwargs, os_kwargs

    device = torch.device("cuda")


    def loaders(train_set, val_set, fast):
        train = DataLoader(train_set, batch_size=8, num_workers=2, **os_kwargs())  # TPF102
        opts = os_kwargs()
        val = DataLoader(val_set, batch_size=8, **opts)  # TPF102
        maybe = DataLoader(val_set, **cuda_kwargs(True))
        chosen = DataLoader(val_set, **either_kwargs(fast))
        return train, val, maybe, chosen
'''


def test_keyword_dicts_a_helper_returns_on_two_arms(tmp_path: Path) -> None:
    """A helper's ``**`` dict bound on two arms is the dicts' join: a key neither holds is
    absent (no ``pin_memory``: TPF102), a key one arm holds or the arms disagree on is
    unknown (silent)."""
    files = {"options.py": OPTIONS, "loaders.py": LOADERS}
    root = write_project(tmp_path / "p", {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF102"]\n', **files})
    assert _findings(root, "TPF102") == _marked(files, "TPF102")


REBOUND = '''
    from torch.utils.data import DataLoader


    def on_an_arm(ds, epochs, small):
        loader = DataLoader(ds, batch_size=8, num_workers=2)  # TPF103
        if small:
            loader = DataLoader(ds, batch_size=2, num_workers=2)  # TPF103
        for epoch in range(epochs):
            for batch in loader:
                pass


    def on_every_arm(ds, epochs, small):
        loader = DataLoader(ds, batch_size=8, num_workers=2)
        if small:
            loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
        else:
            loader = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
        for epoch in range(epochs):
            for batch in loader:
                pass


    def in_a_handler(ds, epochs):
        loader = DataLoader(ds, batch_size=8, num_workers=2)
        try:
            loader = DataLoader(ds, batch_size=2, num_workers=2)
        except RuntimeError:
            for epoch in range(epochs):
                for batch in loader:
                    pass


    def once_under_a_flag(ds, epochs):
        built = False
        for epoch in range(epochs):
            if epoch >= 2 and not built:
                loader = DataLoader(ds, batch_size=2, num_workers=2)  # TPF103
                built = True
            if built:
                for batch in loader:
                    pass


    def flag_reset(ds, epochs):
        built = False
        for epoch in range(epochs):
            if not built:
                loader = DataLoader(ds, batch_size=2, num_workers=2)
                built = True
            for batch in loader:
                pass
            built = epoch % 2 == 0


    def flag_never_set(ds, epochs):
        built = False
        for epoch in range(epochs):
            if not built:
                loader = DataLoader(ds, batch_size=2, num_workers=2)
            for batch in loader:
                pass


    def after_the_walk(ds, epochs):
        loader = DataLoader(ds, batch_size=8, num_workers=2)
        for epoch in range(epochs):
            for batch in loader:
                pass
            loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
'''


def test_names_rebound_on_arms_reach_the_walk(tmp_path: Path) -> None:
    """Each plain binding that may reach the walk is followed (an arm that may not run lets
    the binding before it through); one on every arm replaces it; a binding in a handler,
    or in the loop after the walk (it reaches round the loop), leaves the name unknown. A
    loader built in the loop under a one-shot flag is walked every epoch after; one whose
    flag is reset, or never set, is built anew."""
    _check(tmp_path, {"loops.py": REBOUND})
