"""The data-loading rules (TPF101-TPF104) with facts from other modules of the project:
datasets defined elsewhere, loaders built by helpers in other files."""

from __future__ import annotations

from pathlib import Path
from typing import Set, Tuple

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project


def _findings(root: Path, code: str, *names: str) -> Set[Tuple[str, int]]:
    settings = load_settings([root])
    paths = [root / name for name in names] if names else sorted(root.rglob("*.py"))
    results, _ = runner.run(paths, settings, jobs=1)
    found = set()
    for result in results:
        assert not result.errors, result.errors
        found |= {(Path(d.path).resolve().relative_to(root.resolve()).as_posix(), d.location.row) for d in result.diagnostics if d.code == code}
    return found


DATASETS = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101"]\n',
    "pkg/__init__.py": "",
    "pkg/datasets.py": '''
        import h5py
        import torch
        from torch.utils.data import Dataset, TensorDataset


        class Trajectories(Dataset):
            """ikostrikov's ExpertDataset: tensors in a dict filled in __init__, an index list."""

            def __init__(self, path, n=4):
                data = torch.load(path)
                self.trajectories = {}
                for key, value in data.items():
                    self.trajectories[key] = value[:n]
                self.get_idx = []
                for j in range(n):
                    self.get_idx.append((j, 0))

            def __len__(self):
                return len(self.get_idx)

            def __getitem__(self, i):
                traj_idx, i = self.get_idx[i]
                return self.trajectories["states"][traj_idx][i], self.trajectories["actions"][traj_idx][i]


        class Pairs(Dataset):
            def __init__(self, x, y):
                self.x = torch.as_tensor(x).float()
                self.y = torch.as_tensor(y)

            def __getitem__(self, index):
                return self.x[index], self.y[index]


        class MorePairs(Pairs):
            pass


        class Tensors(TensorDataset):
            pass


        class Augmented(Pairs):
            def __getitem__(self, index):
                return self.transform(self.x[index]), self.y[index]


        class Frames(Dataset):
            def __init__(self, path):
                self.frames = h5py.File(path, "r")["frames"]

            def __getitem__(self, index):
                return self.frames[index]


        class Swapped(Dataset):
            def __init__(self, x):
                self.x = torch.as_tensor(x)

            def reload(self, x):
                self.x = x

            def __getitem__(self, index):
                return self.x[index]


        class Branchy(Pairs):
            def __getitem__(self, index):
                if index < 0:
                    index = 0
                return self.x[index]


        class Files(Dataset):
            def __init__(self, files):
                self.files = files

            def __getitem__(self, index):
                return self.files[index]
    ''',
    "train.py": '''
        import torch
        from torch.utils.data import DataLoader

        from pkg import datasets
        from pkg.datasets import Augmented, Branchy, Files, Frames, MorePairs, Pairs, Swapped, Tensors


        def main(x, y, path, files):
            DataLoader(datasets.Trajectories(path), batch_size=8)
            DataLoader(Pairs(x, y), batch_size=8, num_workers=0)
            expert = MorePairs(x, y)
            DataLoader(expert, batch_size=8)
            DataLoader(Tensors(x, y), batch_size=8)
            DataLoader(Augmented(x, y), batch_size=8)
            DataLoader(Frames(path), batch_size=8)
            DataLoader(Swapped(x), batch_size=8)
            DataLoader(Branchy(x, y), batch_size=8)
            DataLoader(Files(files), batch_size=8)


        def shadowed(Pairs, x, y):
            DataLoader(Pairs(x, y), batch_size=8)
    ''',
}


def test_tpf101_is_silent_on_project_datasets_that_serve_items_from_memory(tmp_path):
    root = write_project(tmp_path / "p", DATASETS)
    flagged = {("train.py", line) for line in (14, 15, 16, 17, 18, 22)}
    assert _findings(root, "TPF101") == flagged
    # A pre-commit run that passes only the script reads the datasets module all the same.
    assert _findings(root, "TPF101", "train.py") == flagged


def test_tpf101_in_memory_dataset_of_the_same_module_beyond_one_return(tmp_path):
    source = DATASETS["pkg/datasets.py"] + '''
        def make(path):
            return torch.utils.data.DataLoader(Trajectories(path), batch_size=8)


        def make_augmented(x, y):
            return torch.utils.data.DataLoader(Augmented(x, y), batch_size=8)
    '''
    root = write_project(tmp_path / "p", {"pyproject.toml": DATASETS["pyproject.toml"], "datasets.py": source})
    lines = source.lstrip("\n").splitlines()
    expected = {("datasets.py", i + 1) for i, text in enumerate(lines) if "Augmented(x, y)" in text and "DataLoader" in text}
    assert _findings(root, "TPF101") == expected


LOADERS = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n',
    "data.py": '''
        import torch
        from torch.utils.data import DataLoader


        def pinned(ds):
            loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
            return loader


        def pinned_on_cuda(ds, device):
            kwargs = {"batch_size": 8, "num_workers": 2}
            if device.type == "cuda":
                kwargs.update({"pin_memory": True})
            return DataLoader(ds, **kwargs)


        def pinned_by_item(ds, use_cuda):
            kwargs = {"batch_size": 8}
            if use_cuda:
                kwargs["pin_memory"] = True
            return DataLoader(ds, **kwargs)


        def pair(train, val):
            return DataLoader(train, pin_memory=True), DataLoader(val)


        def unpinned(ds):
            return DataLoader(ds, batch_size=8)


        def pinned_if_fast(ds, fast):
            kwargs = {"batch_size": 8}
            if fast:
                kwargs.update({"pin_memory": True})
            return DataLoader(ds, **kwargs)


        def unpinned_on_cuda(ds, device):
            kwargs = {"pin_memory": True}
            if device.type == "cuda":
                kwargs.update(pin_memory=False)
            return DataLoader(ds, **kwargs)


        def handed_on(ds, device):
            kwargs = {"pin_memory": True}
            tune(kwargs)
            return DataLoader(ds, **kwargs)


        def from_caller(ds, **kwargs):
            return DataLoader(ds, **kwargs)


        def maybe(ds, pin):
            if pin:
                return DataLoader(ds, pin_memory=True)
            return DataLoader(ds)


        def tune(kwargs):
            kwargs["pin_memory"] = False
    ''',
    "train.py": '''
        import torch

        import data
        from data import handed_on, maybe, pair, pinned, pinned_by_item, pinned_on_cuda, pinned_if_fast, unpinned, unpinned_on_cuda


        def main(ds, model, device, accelerator):
            for x, y in pinned(ds):
                x = x.to(device)
                y = y.to(device, non_blocking=True)
            for x, y in data.pinned_on_cuda(ds, device):
                x = x.cuda()
            loader = pinned_by_item(ds, True)
            for batch in loader:
                images = [t.to(device) for t in batch[0]]
                stacked = torch.stack(batch[1]).to(device)
            train, val = pair(ds, ds)
            for x, y in train:
                x = x.to(device)
            for x, y in val:
                x = x.to(device)
            for x, y in unpinned(ds):
                x = x.to(device)
            for x, y in pinned_if_fast(ds, True):
                x = x.to(device)
            for x, y in unpinned_on_cuda(ds, device):
                x = x.to(device)
            for x, y in handed_on(ds, device):
                x = x.to(device)
            for x, y in data.from_caller(ds, pin_memory=True):
                x = x.to(device)
            for x, y in maybe(ds, True):
                x = x.to(device)
            for x, y in accelerator.prepare(pinned(ds)):
                x = x.to(device)


        def shadowed(pinned, ds, device):
            for x, y in pinned(ds):
                x = x.to(device)
    ''',
}


def test_tpf104_follows_loaders_that_project_helpers_build(tmp_path):
    root = write_project(tmp_path / "p", LOADERS)
    # 31: `from_caller(ds, **kwargs)` is pinned by its only caller's `pin_memory=True` (a
    # `**kwargs` parameter holds the keywords every caller passes, issue 22); 33:
    # `maybe(ds, True)` reaches only the `if pin:` arm's pinned loader (``call_arms``)
    flagged = {("train.py", line) for line in (9, 12, 15, 19, 31, 33)}
    assert _findings(root, "TPF104") == flagged
    assert _findings(root, "TPF104", "train.py") == flagged


def test_tpf102_on_a_helper_beside_a_cuda_script_in_a_subfolder(tmp_path):
    """yunjey's image captioning tutorial: ``train.py`` selects CUDA and does ``from
    data_loader import get_loader`` from its own folder, two levels below the root."""
    root = write_project(
        tmp_path / "p",
        {
            "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF102"]\n',
            "tutorials/captioning/data_loader.py": '''
                from torch.utils.data import DataLoader


                def get_loader(dataset, batch_size):
                    return DataLoader(dataset, batch_size=batch_size, num_workers=2)
            ''',
            "tutorials/captioning/train.py": '''
                import torch
                from data_loader import get_loader

                device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                loader = get_loader(None, 8)
            ''',
            "tutorials/basics/data_loader.py": '''
                from torch.utils.data import DataLoader


                def get_loader(dataset, batch_size):
                    return DataLoader(dataset, batch_size=batch_size, num_workers=2)
            ''',
            "tutorials/basics/cpu_only.py": '''
                from data_loader import get_loader

                loader = get_loader(None, 8)
            ''',
        },
    )
    flagged = {("tutorials/captioning/data_loader.py", 5)}
    assert _findings(root, "TPF102") == flagged
    assert _findings(root, "TPF102", "tutorials/captioning/data_loader.py") == flagged
    assert _findings(root, "TPF102", "tutorials/basics/data_loader.py") == set()


EPOCHS = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF103"]\n',
    "data.py": '''
        from torch.utils.data import DataLoader


        def get_loaders(train_set, val_set):
            train_loader = DataLoader(train_set, batch_size=64, num_workers=4)
            val_loader = DataLoader(val_set, batch_size=64, num_workers=4)
            return train_loader, val_loader


        def get_test_loader(test_set):
            return DataLoader(test_set, batch_size=64, num_workers=4)


        def get_fresh_loader(ds):
            return DataLoader(ds, batch_size=64, num_workers=4)


        def get_persistent(ds):
            return DataLoader(ds, batch_size=64, num_workers=4, persistent_workers=True)


        def get_main_process(ds):
            return DataLoader(ds, batch_size=64)
    ''',
    "train.py": '''
        from data import get_fresh_loader, get_loaders, get_main_process, get_persistent, get_test_loader


        def main(train_set, val_set, test_set, model, epochs=10):
            train_loader, val_loader = get_loaders(train_set, val_set)
            test_loader = get_test_loader(test_set)
            persistent = get_persistent(train_set)
            single = get_main_process(train_set)
            for epoch in range(epochs):
                for step, (x, y) in enumerate(train_loader):
                    model(x)
                fresh = get_fresh_loader(train_set)
                for x, y in fresh:
                    model(x)
                for x in persistent:
                    model(x)
                for x in single:
                    model(x)
            for x, y in val_loader:
                model(x)
            for x, y in test_loader:
                model(x)
    ''',
}


def test_tpf103_loaders_returned_to_an_epoch_loop_in_another_module(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", EPOCHS)
    flagged = {("data.py", 5)}  # val_loader and test_loader are walked once, after the epochs
    assert _findings(root, "TPF103") == flagged
    assert _findings(root, "TPF103", "data.py") == flagged
    monkeypatch.chdir(root)  # paths as a command line gives them: relative
    assert _findings(Path("."), "TPF103", "data.py") == flagged


def test_tpf104_a_same_module_helper_pinned_through_kwargs_update(tmp_path):
    source = """
        import torch
        from torch.utils.data import DataLoader


        def make_loader(ds, device):
            kwargs = {"batch_size": 8, "num_workers": 2}
            if device.type == "cuda":
                kwargs.update({"pin_memory": True})
            return DataLoader(ds, **kwargs)


        def make_fast_loader(ds, fast):
            kwargs = {"batch_size": 8}
            if fast:
                kwargs.update({"pin_memory": True})
            return DataLoader(ds, **kwargs)


        def main(ds, device):
            for x, y in make_loader(ds, device):
                x = x.to(device)
            for x, y in make_fast_loader(ds, True):
                x = x.to(device)
    """
    root = write_project(tmp_path / "p", {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF104"]\n', "train.py": source})
    assert _findings(root, "TPF104") == {("train.py", 21)}
