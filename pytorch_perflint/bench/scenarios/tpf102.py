"""TPF102 dataloader-no-pin-memory: batches copied to the GPU from pageable memory.

A copy from pageable host memory goes through a driver staging buffer; from pinned memory
it is a direct DMA at full bus speed, and the DataLoader's pin thread does the pinning off
the training thread. The items are ready-made batches (``batch_size=None``) of several
megabytes, so the host-to-device copy is the cost. GPU-only: on a CPU nothing is copied.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class BatchFile(Dataset):
    """Pre-collated batches, as read from a batch-per-record file."""

    def __init__(self, batches, batch, resolution):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randn(batches, batch, 3, resolution, resolution, generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index]


def setup(size, device=DEVICE):
    dataset = BatchFile(size["batches"], size["batch"], size["resolution"])
    model = nn.Conv2d(3, 8, 1).to(device)
    return dataset, model, device


@torch.no_grad()
def run(state):
    dataset, model, device = state
    loader = DataLoader(dataset, batch_size=None, num_workers=2)
    total = torch.zeros((), device=device)
    for images in loader:
        images = images.to(device)
        total += model(images).sum()
    return total
'''

SCENARIO = Scenario(
    code="TPF102",
    title="host-to-device copies of 12 MiB batches from a loader",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"batches": 2, "batch": 2, "resolution": 8},
        "cpu": {"batches": 16, "batch": 64, "resolution": 128},
        "cuda": {"batches": 8, "batch": 64, "resolution": 128},
    },
    rtol=1e-4,
    atol=1e-3,
    rationale="a copy rule: megabyte batches, a cheap model, so the copy is the cost",
)
