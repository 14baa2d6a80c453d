"""A small CIFAR-style training script with the usual performance mistakes left in.

`pytorch-perflint check examples/` finds them; `--fix --unsafe-fixes --diff` shows the fixes.
The script runs as it is (random data, CPU or GPU): `python examples/train_cifar.py`.
"""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RandomImages(Dataset):
    def __init__(self, n: int = 512) -> None:
        rng = np.random.default_rng(0)
        self.images = rng.standard_normal((n, 3, 32, 32)).astype(np.float32)
        self.labels = rng.integers(0, 10, size=n)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        image = np.array(self.images[index])
        return torch.tensor(image), int(self.labels[index])


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, kernel_size=3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def evaluate(model, loader):
    model.eval()
    correct = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        correct += (model(images).argmax(1) == labels).sum().item()
    return correct / len(loader.dataset)


def main() -> None:
    torch.autograd.set_detect_anomaly(True)
    train_loader = DataLoader(RandomImages(), batch_size=64, shuffle=True)
    test_loader = DataLoader(RandomImages(128), batch_size=128)
    model = Net().to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(2):
        model.train()
        running = 0.0
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad(set_to_none=False)
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
        accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch}: loss {running / len(train_loader):.3f}, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
