"""TPF301 conv-bias-before-batchnorm: layers with a bias straight before BatchNorm.

BatchNorm subtracts the batch mean, so the bias of the layer before it is cancelled: its
add in the forward, its gradient (a reduction over the whole output) in the backward, and
its optimizer update are wasted. The model is a small self-supervised encoder: conv+BN
blocks, then a SimCLR/BYOL-style projection head of Linear+BatchNorm1d layers (both are
flagged by the rule). Small inputs, so the per-layer bias work is a visible share of a step.
Weights are re-initialised as torchvision does, from their own generator, so both programs
start from the same numbers whether or not the biases drew random values at construction.
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, channels, width, out):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.projector = nn.Sequential(
            nn.Linear(channels, width),
            nn.BatchNorm1d(width),
            nn.ReLU(inplace=True),
            nn.Linear(width, width),
            nn.BatchNorm1d(width),
            nn.ReLU(inplace=True),
            nn.Linear(width, width),
            nn.BatchNorm1d(width),
            nn.ReLU(inplace=True),
            nn.Linear(width, out),
        )

    def forward(self, x):
        return self.projector(self.backbone(x))


def init_weights(model, generator):
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu", generator=generator)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0, 0.01, generator=generator)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


def setup(size, device):
    images = torch.randn(size["batch"], 3, size["resolution"], size["resolution"], device=device)
    labels = torch.randint(0, size["out"], (size["batch"],), device=device)
    model = Encoder(size["channels"], size["width"], size["out"])
    init_weights(model, torch.Generator().manual_seed(size["init_seed"]))
    model = model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
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
'''

SCENARIO = Scenario(
    code="TPF301",
    title="train steps of a conv encoder with a BatchNorm projection head",
    before=BEFORE,
    sizes={
        "quick": {"channels": 4, "width": 8, "out": 8, "batch": 4, "resolution": 8, "steps": 1, "init_seed": 0},
        "cpu": {"channels": 16, "width": 64, "out": 32, "batch": 32, "resolution": 8, "steps": 4, "init_seed": 0},
        "cuda": {"channels": 64, "width": 2048, "out": 256, "batch": 256, "resolution": 32, "steps": 10, "init_seed": 0},
    },
    rtol=1e-4,
    atol=1e-5,
    rationale="small inputs: the bias add, its gradient reduction and its update are a "
    "visible share of each layer's work",
)
