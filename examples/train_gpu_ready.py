"""A small convolutional trainer written for a GPU, with the usual GPU-side mistakes.

Runs offline on synthetic data, on a GPU when there is one, else on the CPU:
`python examples/train_gpu_ready.py`. Its findings only cost time on a GPU:

- TPF102 / TPF104: batches not pinned, copied to the device without `non_blocking=True`;
- TPF402: noise made on the host and then copied to the device;
- TPF403: cuDNN's autotuner never switched on for a convolutional model;
- TPF202: `.item()` on every step waits for the GPU.

`pytorch-perflint bench examples/train_gpu_ready.py --unsafe-fixes` on a machine without CUDA
still runs everything (before, after, control) and checks the fixed script computes the same,
but reports the per-rule rows as "needs CUDA": a CPU number would say nothing about them.
"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class StoredImages(Dataset):
    """8-bit images decoded to normalised floats item by item, as an image folder would be."""

    def __init__(self, items: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (items, 3, 32, 32), dtype=torch.uint8, generator=generator)
        self.labels = torch.randint(0, 10, (items,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        image = self.images[index].float().div(255).sub(0.5).div(0.25)
        return image, self.labels[index]


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--items", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--noise", type=float, default=0.05)
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = DataLoader(StoredImages(args.items), batch_size=args.batch_size, shuffle=True, num_workers=2, persistent_workers=True)
    model = ConvNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        for step, (batch, target) in enumerate(loader):
            batch, target = batch.to(device), target.to(device)
            noise = torch.randn(batch.shape).to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(batch + args.noise * noise), target)
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
