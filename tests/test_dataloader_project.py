"""The data-loading rules (TPF101-TPF104) with facts from other modules of the project:
datasets defined elsewhere, loaders built by helpers in other files."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Set, Tuple

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
        found |= {(Path(d.path).name, d.location.row) for d in result.diagnostics if d.code == code}
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
