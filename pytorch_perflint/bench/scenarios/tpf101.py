"""TPF101 dataloader-sync-loading: a DataLoader without workers over I/O-bound items.

Each item waits on storage (a sleep stands in for a disk or network read), so with
``num_workers=0`` the training loop waits for every item in turn; the fix's workers wait in
parallel. Waiting, not computing, is the point: it shows even on a 2-core machine, and it
is timed in wall time because that is what the user waits. The dataset lives at module
level so workers can unpickle it under spawn as well as fork.
"""

from ..scenario import Clock, Scenario

BEFORE = '''\
import time

import torch
from torch.utils.data import DataLoader, Dataset


class RecordDataset(Dataset):
    """Records read one by one from slow storage."""

    def __init__(self, records, features, read_seconds):
        self.records = records
        self.features = features
        self.read_seconds = read_seconds

    def __len__(self):
        return self.records

    def __getitem__(self, index):
        time.sleep(self.read_seconds)  # waiting on the disk or the network
        generator = torch.Generator().manual_seed(index)
        features = torch.randn(self.features, generator=generator)
        return features, index % 10


def setup(size, device):
    dataset = RecordDataset(size["records"], size["features"], size["read_ms"] / 1000)
    return dataset, size["batch_size"], device


def run(state):
    dataset, batch_size, device = state
    loader = DataLoader(dataset, batch_size=batch_size)
    total = torch.zeros((), device=device)
    for features, labels in loader:
        total += features.to(device).sum() + labels.to(device).sum()
    return total
'''

SCENARIO = Scenario(
    code="TPF101",
    title="one epoch over records that each take 3 ms to read",
    before=BEFORE,
    clock=Clock.WALL,
    sizes={
        "quick": {"records": 16, "features": 8, "read_ms": 1, "batch_size": 4},
        "cpu": {"records": 256, "features": 64, "read_ms": 3, "batch_size": 8},
        "cuda": {"records": 64, "features": 64, "read_ms": 3, "batch_size": 8},
    },
    rationale="I/O-bound items: workers overlap the waits even when cores are few",
)
