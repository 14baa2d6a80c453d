"""TPF104 blocking-host-to-device-copy: pinned batches copied with a blocking ``.to()``.

With ``non_blocking=True`` a copy from pinned memory is queued on the stream and the host
goes on queueing the step's kernels, so the copy overlaps the previous step's compute; a
blocking copy makes the host wait for it. GPU-only: on a CPU there is no copy to overlap.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ImageFile(Dataset):
    def __init__(self, items, resolution, classes):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randn(items, 3, resolution, resolution, generator=generator)
        self.labels = torch.randint(0, classes, (items,), generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


def build_model(classes):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, classes),
    )


def setup(size, device=DEVICE):
    dataset = ImageFile(size["items"], size["resolution"], size["classes"])
    model = build_model(size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    return dataset, model, optimizer, size["batch_size"], device


def run(state):
    dataset, model, optimizer, batch_size, device = state
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2, pin_memory=True)
    losses = []
    for images, labels in loader:
        images = images.to(device)
        labels = labels.to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)
'''

SCENARIO = Scenario(
    code="TPF104",
    title="training epoch with blocking copies of pinned batches",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"items": 8, "resolution": 8, "classes": 10, "batch_size": 4},
        "cpu": {"items": 256, "resolution": 64, "classes": 10, "batch_size": 32},
        "cuda": {"items": 512, "resolution": 128, "classes": 10, "batch_size": 64},
    },
    rtol=1e-4,
    atol=1e-5,
    rationale="megabyte batches and a step long enough for the copy to hide behind",
)
