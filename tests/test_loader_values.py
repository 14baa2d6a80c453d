"""The value engine's DataLoader family (``project/loader_values.py``) on multi-module
projects: each mechanism TPF104 asks about, with the look-alikes it must leave silent, and
the engine's answers for loaders and datasets."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from pytorch_perflint.project.kinds import Batch, Loader, Number, Unknown
from pytorch_perflint.project.scopes import build_scope, expression_form
from pytorch_perflint.project.values import Where, engine_for

from project_tree import index_of, write_project
from test_dataloader_project import _findings

SELECT = '[tool.pytorch-perflint]\nselect = ["TPF104"]\n'


def _lines(source: str, mark: str = "# flagged") -> set:
    return {i + 1 for i, text in enumerate(source.lstrip("\n").splitlines()) if text.rstrip().endswith(mark)}


def _check(tmp_path: Path, files: dict) -> None:
    """Every line ending in ``# flagged`` is flagged, and no other (linting the whole project
    and each file alone, as a pre-commit run does)."""
    root = write_project(tmp_path / "p", {"pyproject.toml": SELECT, **files})
    expected = {(name, line) for name, source in files.items() if name.endswith(".py") for line in _lines(source)}
    assert _findings(root, "TPF104") == expected
    for name in files:
        if name.endswith(".py"):
            assert _findings(root, "TPF104", name) == {found for found in expected if found[0] == name}


WRAPPERS = {
    "data/__init__.py": '''
        def loader_kwargs(workers):
            return {"num_workers": workers, "pin_memory": True}
    ''',
    "data/wrappers.py": '''
        class MixUp:
            """timm-style: walks the loader it holds and yields device tensors."""

            def __init__(self, dataloader, alpha):
                self.dataloader = dataloader
                self.alpha = alpha

            def __iter__(self):
                for input, target in self.dataloader:
                    input = input.cuda()  # flagged
                    target = target.cuda(non_blocking=True)
                    yield input, target


        class Plain:
            def __init__(self, loader):
                self.loader = loader

            def __iter__(self):
                yield from self.loader


        class Mixing:
            """A wrapper whose __iter__ hands the loader it holds to a public generator method."""

            def __init__(self, alpha, loader, device):
                self.dataloader = loader
                self.device = device

            def mix_loader(self, loader):
                for input, target in loader:
                    input = input.cuda(self.device)  # flagged
                    yield input, target

            def __iter__(self):
                return self.mix_loader(self.dataloader)


        class Shared:
            def __init__(self, loader):
                self.loader = loader

            def feed(self, loader):
                for input, target in loader:
                    yield input.cuda(), target

            def __iter__(self):
                return self.feed(self.loader)


        class Prefetcher:
            def __init__(self, loader):
                self.loader = loader

            def __iter__(self):
                for batch in self.loader:
                    yield [t.cuda(non_blocking=True) for t in batch]
    ''',
    "train.py": '''
        import torch
        from torch.utils.data import DataLoader

        import data
        from data.wrappers import Mixing, MixUp, Plain, Prefetcher, Shared


        def validate(model, loader, device):
            for images, labels in loader:
                images = images.to(device)  # flagged
                model(images)


        def main(train_set, val_set, model, device):
            train_loader = DataLoader(train_set, batch_size=8, **data.loader_kwargs(4))
            val_loader = DataLoader(val_set, batch_size=8, **data.loader_kwargs(2))
            for x, y in MixUp(train_loader, 0.2):
                x = x.to(device)  # already on the device: not a pinned batch
            for x, y in Plain(val_loader):
                x = x.to(device)  # flagged
            for x, y in Prefetcher(train_loader):
                x = x.to(device)
            validate(model, val_loader, device)
            for x, y in Mixing(0.2, train_loader, device):
                model(x)
            shared = Shared(train_loader)
            for x, y in shared.feed(other_batches()):  # `feed` is called on another object: not known
                model(x)
            for batch in val_loader:
                batch = {k: v.to(device) for k, v in batch.items()}  # flagged
    ''',
}


def test_project_iterables_validation_loaders_and_kwargs_from_a_package_helper(tmp_path):
    _check(tmp_path, WRAPPERS)


HOLDERS = {
    "loaders.py": '''
        from torch.utils.data import DataLoader


        def make(ds):
            return DataLoader(ds, batch_size=8, pin_memory=True), DataLoader(ds, batch_size=8)


        def keep(loader, accelerator):
            if accelerator is None:
                return loader
            return loader


        def maybe_wrap(loader, wrap):
            if wrap:
                return wrap(loader)
            return loader
    ''',
    "trainer.py": '''
        import torch


        class Trainer:
            def __init__(self, loader, device):
                self.loader = loader
                self.device = device

            def epoch(self, model):
                for step, (images, labels) in enumerate(self.loader):
                    images = images.to(self.device)  # flagged
                    labels = torch.cat([labels, labels]).to(self.device)
                    model(images, labels)


        def _fit(model, loader, device):
            for batch in loader:
                batch = [t.float() for t in batch]
                model(batch[0].to(device))
            it = iter(loader)
            first = next(it)
            model(first["image"].cuda())  # flagged
            model((first["image"] * 2).cuda())
    ''',
    "main.py": '''
        from loaders import keep, make, maybe_wrap
        from trainer import Trainer, _fit


        def main(ds, model, device, accelerator):
            train, val = make(ds)
            Trainer(keep(train, accelerator), device).epoch(model)
            _fit(model, train, device)
            for x, y in maybe_wrap(train, None):
                x = x.to(device)
            for x, y in keep(val, accelerator):
                x = x.to(device)
    ''',
}


def test_loaders_in_attributes_parameters_and_pass_through_helpers(tmp_path):
    _check(tmp_path, HOLDERS)


def test_a_parameter_whose_callers_pass_different_loaders_is_not_known(tmp_path):
    files = dict(HOLDERS)
    files["other.py"] = '''
        from loaders import make
        from trainer import _fit


        def again(ds, model, device):
            train, val = make(ds)
            _fit(model, val, device)
    '''
    files["trainer.py"] = files["trainer.py"].replace("  # flagged\n            model((", "\n            model((")
    _check(tmp_path, files)


def _kind(tmp_path: Path, files: dict, expression: str):
    index = index_of(tmp_path, files)
    path = os.path.abspath(tmp_path / "main.py")
    text = index.text(path)
    scope = build_scope(ast.parse(text), {}, path, None)
    form = expression_form(ast.parse(expression, mode="eval").body, scope)
    return engine_for(index).answer(form, Where(path, scope, len(text.splitlines()) + 1)).kind


DATASETS = {
    "data.py": '''
        import torch
        from torch.utils.data import TensorDataset


        def tensors(n):
            x = torch.randn(n, 3)
            return TensorDataset(x, x)
    ''',
    "main.py": '''
        import torch.utils.data as tud
        from tqdm import tqdm
        from data import tensors

        NUM_WORKERS = 0
        OPTIONS = dict(pin_memory=True, persistent_workers=False)
        in_memory = tud.DataLoader(tensors(8), batch_size=4, num_workers=NUM_WORKERS, **OPTIONS)
        elsewhere = tud.DataLoader(dataset, 4, True, None, None, 2)
        unknown = tud.DataLoader(dataset, **options)
        batch = next(iter(in_memory))
        for step, (images, labels) in enumerate(tqdm(in_memory)):
            pass
    ''',
}


def test_loader_arguments_and_dataset_kinds(tmp_path):
    loader = _kind(tmp_path, DATASETS, "in_memory")
    assert type(loader) is Loader and loader.dataset == "memory"  # a TensorDataset a project function returns
    assert loader.pinned and loader.argument("num_workers") == "0"  # a `dict(...)` spread, a module constant
    assert loader.argument("collate_fn") is None and not loader.custom_collate
    assert loader.argument("persistent_workers") == "False"
    elsewhere = _kind(tmp_path, DATASETS, "elsewhere")
    assert elsewhere.argument("num_workers") == "2" and elsewhere.dataset == "" and not elsewhere.pinned
    unknown = _kind(tmp_path, DATASETS, "unknown")
    assert unknown.argument("pin_memory") == "?" and unknown.argument("num_workers") == "?"
    assert _kind(tmp_path, DATASETS, "batch") == Batch(loader)
    assert _kind(tmp_path, DATASETS, "batch[0]") == Batch(loader, (0,))
    assert type(_kind(tmp_path, DATASETS, "batch[0].float()")) is Unknown
    assert _kind(tmp_path, DATASETS, "images") == Batch(loader, (0,))  # through enumerate(tqdm(...))
    assert type(_kind(tmp_path, DATASETS, "tqdm(in_memory)")) is not Loader  # it yields batches, it is no loader


ARGUMENTS = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF102"]\n',
    "data/__init__.py": '''
        import torch
        from torch.utils.data import TensorDataset


        def loader_kwargs():
            return {"batch_size": 8, "num_workers": 2}


        def cached(path):
            x = torch.load(path)
            return TensorDataset(x, x)
    ''',
    "loaders.py": '''
        import torch
        from torch.utils.data import DataLoader

        import data

        device = torch.device("cuda")


        def make(ds, workers=0):
            return DataLoader(ds, num_workers=workers, pin_memory=True)


        def chosen(ds, workers=0):
            return DataLoader(ds, num_workers=workers, pin_memory=True)


        def from_helper(ds):
            return DataLoader(ds, **data.loader_kwargs())


        def in_memory(path):
            return DataLoader(data.cached(path), batch_size=8, pin_memory=True)
    ''',
    "main.py": '''
        from loaders import chosen, from_helper, in_memory, make

        make(None)
        chosen(None, workers=4)
        from_helper(None)
        in_memory("x.pt")
    ''',
}


def _coded(root: Path, code: str) -> set:
    return {(name, line) for name, line in _findings(root, code)}


def test_tpf101_and_tpf102_read_loader_arguments_through_the_engine(tmp_path):
    """TPF101: a helper's ``workers=0`` default that no caller overrides (issue 22), and not
    a loader over a ``TensorDataset`` a project function returns; TPF102: ``**`` a dict a
    package helper returns, without ``pin_memory``."""
    root = write_project(tmp_path / "p", ARGUMENTS)
    assert _coded(root, "TPF101") == {("loaders.py", 10)}
    assert _coded(root, "TPF102") == {("loaders.py", 18)}
    assert _findings(root, "TPF101", "loaders.py") == {("loaders.py", 10)}


def test_the_kind_of_a_project_dataset_class(tmp_path):
    files = {
        "data.py": '''
            from torch.utils.data import Dataset, IterableDataset, TensorDataset


            class Images(Dataset):
                def __getitem__(self, index):
                    return index


            class Stream(IterableDataset):
                def __iter__(self):
                    return iter(range(3))


            class Cached(TensorDataset):
                pass


            class Deeper(Images):
                pass


            class FromDisk(TensorDataset):
                def __getitem__(self, index):
                    return open(self.paths[index]).read()
        ''',
        "main.py": '''
            from torch.utils.data import DataLoader
            from data import Cached, Deeper, FromDisk, Images, Stream

            images = DataLoader(Images())
            stream = DataLoader(Stream())
            cached = DataLoader(Cached())
            deeper = DataLoader(Deeper())
            other = DataLoader(dataset)
            disk = DataLoader(FromDisk())
        ''',
    }
    kinds = {name: _kind(tmp_path, files, name).dataset for name in ("images", "stream", "cached", "deeper", "other", "disk")}
    assert kinds == {"images": "map", "stream": "iterable", "cached": "memory", "deeper": "map", "other": "", "disk": "map"}


def test_a_function_walking_a_train_and_a_validation_loader(tmp_path):
    """Both loaders pin memory (their workers differ): the batches are pinned; with one
    pageable loader among the callers, pinning is not known."""
    files = {
        "train.py": '''
            from torch.utils.data import DataLoader


            def run_epoch(model, loader, device, training):
                for images, labels in loader:
                    images = images.to(device)  # flagged
                    model(images)


            def other_epoch(model, loader, device):
                for images, labels in loader:
                    images = images.to(device)
                    model(images)


            def main(model, train_set, val_set, device):
                train = DataLoader(train_set, batch_size=8, num_workers=4, pin_memory=True, shuffle=True)
                val = DataLoader(val_set, batch_size=8, num_workers=2, pin_memory=True)
                pageable = DataLoader(val_set, batch_size=8)
                run_epoch(model, train, device, True)
                run_epoch(model, val, device, False)
                other_epoch(model, train, device)
                other_epoch(model, pageable, device)
        ''',
    }
    _check(tmp_path, files)


def test_an_attribute_a_method_may_set_by_name_is_not_known(tmp_path):
    """A config object whose ``_parse`` does ``setattr(self, k, v)`` for command-line
    options: its class attribute ``num_workers = 8`` may be anything at run time."""
    files = {
        "main.py": '''
            from torch.utils.data import DataLoader


            class Config:
                num_workers = 8
                pin = True

                def _parse(self, kwargs):
                    for k, v in kwargs.items():
                        setattr(self, k, v)


            class Fixed:
                num_workers = 8

                def load(self, state):
                    self.__dict__.update(state)


            class Plain:
                num_workers = 8


            opt = Config()
            fixed = Fixed()
            plain = Plain()
            loader = DataLoader(ds, num_workers=opt.num_workers)
        ''',
    }
    assert type(_kind(tmp_path, files, "opt.num_workers")) is Unknown
    assert type(_kind(tmp_path, files, "fixed.num_workers")) is Unknown
    assert _kind(tmp_path, files, "plain.num_workers") == Number(8)
    assert _kind(tmp_path, files, "loader").argument("num_workers") == "?"
