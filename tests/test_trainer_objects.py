"""Loaders and devices that reach a trainer object: a loader handed to a public method of a
project class (``o.optimize(model, train_loader)``, then ``self.optimize_epoch(..., loader)``)
whose sibling scripts define their own classes with methods of the same names; a loader an
entry script binds on both arms of an ``if`` and walks every epoch in a ``train(epoch)``
function that reads it as a global; a device chosen in a trainer module the entry script
imports. Each with the look-alikes that must stay silent."""

from __future__ import annotations

from pathlib import Path

from project_tree import write_project
from test_dataloader_project import _findings


def _lines(source: str, mark: str = "# flagged") -> set:
    return {i + 1 for i, text in enumerate(source.lstrip("\n").splitlines()) if text.rstrip().endswith(mark)}


def _check(tmp_path: Path, code: str, files: dict) -> None:
    """Every line ending in ``# flagged`` is reported for ``code``, and no other."""
    select = f'[tool.pytorch-perflint]\nselect = ["{code}"]\n'
    root = write_project(tmp_path / code, {"pyproject.toml": select, **files})
    expected = {(name, line) for name, source in files.items() if name.endswith(".py") for line in _lines(source)}
    assert _findings(root, code) == expected


DATA = '''
    from torch.utils.data import DataLoader


    def pinned_pair(ds, **kwargs):
        train = DataLoader(ds, batch_size=64, pin_memory=True, **kwargs)
        val = DataLoader(ds, batch_size=64, pin_memory=True, **kwargs)
        return train, val


    def plain(ds, workers=4):
        return DataLoader(ds, batch_size=64, num_workers=workers)
'''

# Three scripts, each with its own optimizer class whose public methods share their names
# (``optimize``, ``optimize_epoch``) and whose parameters differ: each script's loader still
# reaches its own class's method. Prose that spells a method's name is no escape.
SCRIPTS = {
    "data.py": DATA,
    "eval_probe.py": '''
        import torch
        import data


        class ProbeOptimizer:
            def __init__(self):
                self.dev = torch.device("cuda:0")
                self.num_epochs = 10

            def optimize(self, model, train_loader, val_loader=None):
                print("will optimize the probes now")
                for epoch in range(self.num_epochs):
                    self.optimize_epoch(model, train_loader, epoch)
                    if val_loader:
                        with torch.no_grad():
                            self.optimize_epoch(model, val_loader, epoch, is_validation=True)

            def optimize_epoch(self, model, loader, epoch, is_validation=False):
                for i, q in enumerate(loader):
                    if len(q) == 3:
                        input, label, _ = q
                    else:
                        input, label = q
                    input = input.to(self.dev)  # flagged
                    label = label.to(self.dev)  # flagged
                    model(input).sum().backward()


        if __name__ == "__main__":
            train_loader, val_loader = data.pinned_pair(None, num_workers=4)
            o = ProbeOptimizer()
            o.optimize(torch.nn.Linear(3, 3), train_loader, val_loader)
    ''',
    "main.py": '''
        import torch
        from data import pinned_pair


        class Optimizer:
            def __init__(self, model, t_loader):
                self.model = model
                self.train_loader = t_loader
                self.dev = torch.device("cuda")

            def optimize(self):
                for epoch in range(10):
                    self.optimize_epoch(None, self.train_loader, epoch)

            def optimize_epoch(self, optimizer, loader, epoch):
                for data, label in loader:
                    data = data.to(self.dev)  # flagged
                    self.model(data).sum().backward()


        if __name__ == "__main__":
            train_loader, _ = pinned_pair(None)
            o = Optimizer(torch.nn.Linear(3, 3), t_loader=train_loader)
            o.optimize()
    ''',
    "mixed.py": '''
        import torch
        import data


        class MixedOptimizer:
            """Its method gets a pinned loader from one caller and a plain one from another."""

            def optimize(self, model, train_loader, val_loader):
                self.optimize_epoch(model, train_loader)
                self.optimize_epoch(model, val_loader)

            def optimize_epoch(self, model, loader):
                for x, y in loader:
                    x = x.to("cuda")
                    model(x).sum().backward()


        if __name__ == "__main__":
            pinned, _ = data.pinned_pair(None)
            o = MixedOptimizer()
            o.optimize(torch.nn.Linear(3, 3), pinned, data.plain(None))
    ''',
}


def test_a_loader_handed_to_a_public_method_reaches_its_own_class(tmp_path):
    _check(tmp_path, "TPF104", SCRIPTS)


def test_a_method_name_that_escapes_in_code_keeps_its_callers_unknown(tmp_path):
    """A bound method taken as a value (``step = o.optimize_epoch``) or named in an f-string's
    field may be called anywhere: the callers are not all known, so nothing is flagged."""
    files = dict(SCRIPTS)
    files["eval_probe.py"] = files["eval_probe.py"].replace("  # flagged", "") + '''
        def log(o):
            print(f"{o.optimize_epoch}")
    '''
    files["main.py"] = files["main.py"].replace("  # flagged", "") + '''
        step = Optimizer.optimize_epoch
    '''
    _check(tmp_path, "TPF104", files)


GLOBAL_WALK = '''
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(3, 3).cuda()
    if args.kind == 10:
        trainloader = DataLoader(ds10, batch_size=4, num_workers=8)  # flagged
        testloader = DataLoader(ds10, batch_size=4, num_workers=2)
    else:
        trainloader = DataLoader(ds100, batch_size=4, num_workers=8)  # flagged
        testloader = DataLoader(ds100, batch_size=4, num_workers=2)
    testloader = DataLoader(ds, batch_size=4, num_workers=2)


    def train(epoch, labels):
        for i, (inputs, targets) in enumerate(trainloader):
            model(inputs).sum().backward()
        return labels


    def test(epoch):
        for inputs, targets in testloader:
            model(inputs)


    for epoch in range(10):
        labels = train(epoch, None)
        test(epoch)
'''


def test_a_loader_bound_on_both_arms_is_walked_by_a_function_reading_it_as_a_global(tmp_path):
    """``trainloader`` is bound on each arm of one ``if`` and walked by ``train(epoch)`` every
    epoch. ``testloader`` is bound on the arms and again after them: which of its bindings
    the function reads is not known to this mechanism, so none is flagged."""
    _check(tmp_path, "TPF103", {"cifar.py": GLOBAL_WALK})


def test_a_global_some_function_rebinds_is_not_known(tmp_path):
    """A function that declares the loader ``global`` and rebinds it: the arms' bindings may
    not be the one ``train`` walks, so the arms' loaders are not flagged."""
    source = GLOBAL_WALK.replace("  # flagged", "") + '''

    def reload():
        global trainloader
        trainloader = make()
    '''
    _check(tmp_path, "TPF103", {"cifar.py": source})


TRAINER_MODULES = {
    "train_rnn.py": '''
        import torch
        from torch.utils.data import DataLoader as Loader
        from model import Net
        from trainer import trainer_gpu


        def make_loaders(ds):
            train = Loader(ds, batch_size=4)  # flagged
            val = Loader(ds, batch_size=4, shuffle=False)  # flagged
            return train, val


        def main():
            model = Net()
            train, val = make_loaders(None)
            trainer = trainer_gpu.Trainer(train, val, model, [0])
            trainer.run()
    ''',
    "train_cpu.py": '''
        from torch.utils.data import DataLoader
        from model import Net
        from trainer import trainer_cpu


        def main():
            loader = DataLoader(None, batch_size=4)
            trainer_cpu.Trainer(loader, Net()).run()
    ''',
    "model.py": '''
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(1, 4, 3)
                self.lstm = nn.LSTM(4, 4)

            def forward(self, x):
                return self.lstm(self.conv(x))
    ''',
    "trainer/__init__.py": "",
    "trainer/trainer_gpu.py": '''
        import torch


        class Trainer:
            def __init__(self, train_loader, val_loader, net, gpuid):
                self.train_loader = train_loader
                self.val_loader = val_loader
                self.device = torch.device("cuda:{}".format(gpuid[0]))
                self.net = net.to(self.device)
                self.optimizer = torch.optim.Adam(self.net.parameters())

            def train(self, epoch):
                total = 0
                for mix, ref in self.train_loader:
                    mix = mix.to(self.device)
                    loss = self.net(mix).sum()
                    self.optimizer.zero_grad()
                    total += loss.item()  # flagged
                    loss.backward()
                    self.optimizer.step()
                return total

            def validation(self, epoch):
                total = 0
                with torch.no_grad():
                    for mix, ref in self.val_loader:
                        total += self.net(mix.to(self.device)).sum().item()
                return total

            def run(self):
                for epoch in range(10):
                    self.train(epoch)
                    self.validation(epoch)
    ''',
    "trainer/trainer_cpu.py": '''
        import torch


        class Trainer:
            def __init__(self, loader, net):
                self.loader = loader
                self.net = net
                self.optimizer = torch.optim.Adam(net.parameters())
                print("not on cuda:{}".format(0))

            def run(self):
                for epoch in range(10):
                    for x, y in self.loader:
                        loss = self.net(x).sum()
                        loss.backward()
                        self.optimizer.step()
                        print(loss.item())
    ''',
}


def test_a_device_chosen_in_a_trainer_module_reaches_the_entry_scripts_loaders(tmp_path):
    """The trainer module moves batches to ``torch.device("cuda:{}".format(...))``: the entry
    script that imports it runs on the accelerator (TPF102), and the trainer's step loop
    syncs (TPF202). A trainer module that only logs a device template stays on the CPU."""
    _check(tmp_path, "TPF102", {name: (s if name == "train_rnn.py" else s.replace("  # flagged", "")) for name, s in TRAINER_MODULES.items()})
    _check(tmp_path, "TPF202", {name: (s if name == "trainer/trainer_gpu.py" else s.replace("  # flagged", "")) for name, s in TRAINER_MODULES.items()})


BARS = '''
    from torch.utils.data import DataLoader
    from tqdm import tqdm

    train_loader = DataLoader(train_ds, batch_size=8, num_workers=4)  # flagged
    valid_loader = DataLoader(valid_ds, batch_size=1, num_workers=4)  # flagged
    probe_loader = DataLoader(probe_ds, batch_size=1, num_workers=4)
    other_loader = DataLoader(other_ds, batch_size=1, num_workers=4)

    for epoch in range(10):
        with tqdm(train_loader) as bar:
            for batch in bar:
                model(batch).sum().backward()
        with tqdm(valid_loader) as bar:
            for batch in bar:
                model(batch)
        with tqdm(probe_loader) as bar:
            bar = tqdm(other_loader) if epoch == 0 else bar
            for batch in bar:
                model(batch)
'''


def test_a_bar_name_entered_by_several_withs_is_the_one_around_the_read(tmp_path):
    """Each ``with tqdm(loader) as bar:`` binds ``bar`` for the loop in its body, though the
    script binds ``bar`` three times. A body that rebinds the bar before its loop hides
    which loader the loop walks: ``probe_loader`` is not flagged (nor ``other_loader``)."""
    _check(tmp_path, "TPF103", {"train.py": BARS})


PREPARED = '''
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    accelerator = Accelerator()


    def train(model, opt, loader, epochs):
        model, opt, loader = accelerator.prepare(model, opt, loader)
        for epoch in range(epochs):
            for batch in loader:
                accelerator.backward(model(batch).sum())
                opt.step()


    def shuffled(model, opt, loader, epochs):
        model, loader, opt = accelerator.prepare(model, opt, loader)
        for epoch in range(epochs):
            for batch in loader:
                model(batch)


    def wrapped(model, loader, epochs):
        loader = other.prepare(loader)
        for epoch in range(epochs):
            for batch in loader:
                model(batch)


    def main(model, opt):
        train(model, opt, DataLoader(ds, batch_size=8, num_workers=4), 10)  # flagged
        shuffled(model, opt, DataLoader(ds, batch_size=8, num_workers=4), 10)
        wrapped(model, DataLoader(ds, batch_size=8, num_workers=4), 10)
'''


def test_a_loader_parameter_taken_back_from_prepare_is_the_callers_loader(tmp_path):
    """``model, opt, loader = accelerator.prepare(model, opt, loader)`` in a training
    function wraps the loader its caller passes, which the epoch loop then walks. Taken back
    at another position, or from a ``prepare`` of something not an ``Accelerator``, the name
    may hold something else: not flagged."""
    _check(tmp_path, "TPF103", {"train.py": PREPARED})
