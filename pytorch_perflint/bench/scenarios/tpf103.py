"""TPF103 dataloader-no-persistent-workers: workers started again for every epoch.

The dataset opens its storage lazily in each worker, as HDF5, LMDB or WebDataset readers
do (a handle cannot be pickled into a worker): the first item a worker loads pays for
opening the file and reading its index. Without ``persistent_workers=True`` every epoch
forks new workers that pay it again. Several short epochs make start-up the cost; timed in
wall time, since start-up is mostly waiting.
"""

from ..scenario import Clock, Scenario

BEFORE = '''\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class ShardDataset(Dataset):
    """Items from a shard file that each worker opens on first use."""

    def __init__(self, items, features, open_seconds):
        self.items = items
        self.features = features
        self.open_seconds = open_seconds
        self.index = None  # opened lazily, once per process

    def _open(self):
        time.sleep(self.open_seconds)  # open the file and read its index
        self.index = list(range(self.items))

    def __len__(self):
        return self.items

    def __getitem__(self, i):
        if self.index is None:
            self._open()
        generator = torch.Generator().manual_seed(self.index[i])
        return torch.randn(self.features, generator=generator)


def setup(size, device):
    dataset = ShardDataset(size["items"], size["features"], size["open_ms"] / 1000)
    return dataset, size["batch_size"], size["epochs"], device


def run(state):
    dataset, batch_size, epochs, device = state
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2)
    total = torch.zeros((), device=device)
    for epoch in range(epochs):
        for batch in loader:
            total += batch.to(device).sum()
    return total
'''

SCENARIO = Scenario(
    code="TPF103",
    title="short epochs with workers that open their shard on start",
    before=BEFORE,
    clock=Clock.WALL,
    sizes={
        "quick": {"items": 8, "features": 4, "open_ms": 5, "batch_size": 4, "epochs": 2},
        "cpu": {"items": 64, "features": 16, "open_ms": 50, "batch_size": 8, "epochs": 4},
        "cuda": {"items": 64, "features": 16, "open_ms": 50, "batch_size": 8, "epochs": 3},
    },
    rationale="worker start-up (fork plus opening the shard) paid once vs every epoch",
)
