"""TPF403 cudnn-benchmark-disabled: a CUDA conv training script without the autotuner.

With ``torch.backends.cudnn.benchmark = True`` cuDNN times its algorithms for each input
shape once and keeps the fastest; without it, a heuristic picks one. Fixed input shapes, so
the tuning (done in the harness's warm-up run) pays off in every timed step. GPU-only. The
program is an entry script (it has a ``__main__`` block), so the fix puts the setting at its
top, after the imports, where the harness's flag fence picks it up at import.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConvNet(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(2 * channels, 2 * channels, 5, padding=2),
            nn.ReLU(inplace=True),
        )
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x):
        return self.head(self.features(x).mean(dim=(2, 3)))


def setup(size, device=DEVICE):
    model = ConvNet(size["channels"], size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(size["batch"], 3, size["resolution"], size["resolution"], device=device)
    labels = torch.randint(0, size["classes"], (size["batch"],), device=device)
    return model, optimizer, images, labels, size["steps"]


def run(state):
    model, optimizer, images, labels, steps = state
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)


if __name__ == "__main__":  # an entry script: the harness imports it, a user would run it
    print(run(setup({"channels": 16, "classes": 10, "batch": 8, "resolution": 32, "steps": 2})))
'''

SCENARIO = Scenario(
    code="TPF403",
    title="conv training steps, cuDNN autotuner off",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"channels": 4, "classes": 10, "batch": 2, "resolution": 8, "steps": 1},
        "cpu": {"channels": 16, "classes": 10, "batch": 8, "resolution": 32, "steps": 2},
        "cuda": {"channels": 64, "classes": 100, "batch": 64, "resolution": 112, "steps": 5},
    },
    # Different cuDNN algorithms round differently.
    rtol=1e-3,
    atol=1e-4,
    rationale="fixed shapes, so tuning once pays in every step",
)
