"""Training on a dataset read item by item from slow storage, loaded in the main process.

Runs offline on synthetic data, on the CPU: `python examples/train_io_bound.py`.
`pytorch-perflint bench examples/train_io_bound.py --steps 30 --unsafe-fixes` measures what
the tool's fixes buy here (both are unsafe, so they need `--unsafe-fixes`):

- TPF101: the DataLoader loads in the main process (`num_workers` left at 0) while every item
  waits `--read-latency` seconds on storage (a sleep stands for the disk or network read);
  worker processes overlap those waits, which pays even on 2 cores;
- TPF401: each item's NumPy array copied with `torch.tensor` (small arrays: little to gain).

Each item is made from its own index (a generator seeded with it), never from shared random
state, so loading in worker processes gives the same batches and the fixed script trains to
the same weights: bench checks that.
"""

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class SlowStorage(Dataset):
    """Feature vectors that each take `read_latency` seconds to read."""

    def __init__(self, size: int, features: int, classes: int, read_latency: float) -> None:
        self.size = size
        self.features = features
        self.classes = classes
        self.read_latency = read_latency

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        time.sleep(self.read_latency)  # the read
        rng = np.random.default_rng(index)
        features = np.array(rng.standard_normal(self.features), dtype=np.float32)
        label = int(rng.integers(self.classes))
        return torch.tensor(features), label


def make_model(features: int, classes: int, width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, classes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--items", type=int, default=4096)
    # Few, long waits rather than many short ones: on a busy machine every wake-up also waits
    # for a core, which would swamp millisecond sleeps.
    parser.add_argument("--read-latency", type=float, default=0.005, help="seconds per item")
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset = SlowStorage(args.items, features=32, classes=10, read_latency=args.read_latency)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    model = make_model(32, 10, width=64)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        started = time.perf_counter()
        total = torch.zeros(())
        for features, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(features), labels)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        seconds = time.perf_counter() - started
        print(f"epoch {epoch}: mean loss {total.item() / len(loader):.4f}, {seconds:.1f} s")


if __name__ == "__main__":
    main()
