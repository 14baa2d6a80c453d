"""TPF101 over a dataset that reaches the DataLoader through the value engine (a method or
helper that returns it): a project class serving items from memory stays silent, one that
reads files is still reported."""

from __future__ import annotations

from pathlib import Path
from typing import Set, Tuple

from project_tree import write_project
from test_loader_options_flow import _findings as _by_code


def _findings(root: Path, code: str) -> Set[Tuple[str, int]]:
    return _by_code(root).get(code, set())


PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101"]\n',
    "ratings/__init__.py": "",
    "ratings/sets.py": '''
        import numpy as np
        import torch
        from torch.utils.data import Dataset


        class DenseRatings(Dataset):
            def __init__(self, table):
                self.rows = torch.FloatTensor(np.asarray(table))

            def __len__(self):
                return self.rows.shape[0]

            def __getitem__(self, index):
                return self.rows[index]


        class RatingFiles(Dataset):
            def __init__(self, paths):
                self.paths = paths

            def __getitem__(self, index):
                return np.load(self.paths[index])


        def dense(table):
            return DenseRatings(table)
    ''',
    "ratings/loaders.py": '''
        from torch.utils.data import DataLoader

        from .sets import DenseRatings, RatingFiles, dense


        class Builder:
            def __init__(self, table, paths):
                self.table = table
                self.paths = paths

            def _train_set(self):
                return DenseRatings(self.table)

            def _file_set(self):
                return RatingFiles(self.paths)

            def loaders(self):
                train = DataLoader(self._train_set(), batch_size=64)
                held = self._train_set()
                valid = DataLoader(held, batch_size=64)
                other = DataLoader(dense(self.table), batch_size=64)
                files = DataLoader(self._file_set(), batch_size=64)
                return train, valid, other, files
    ''',
}


def test_tpf101_reads_datasets_returned_by_methods_and_helpers(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    assert _findings(root, "TPF101") == {("ratings/loaders.py", 22)}
