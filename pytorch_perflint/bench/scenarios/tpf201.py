"""TPF201 zero-grad-without-set-to-none: ``zero_grad(set_to_none=False)`` every step.

Zeroing writes every gradient tensor each step, and the next backward must then read it
and add into it; with ``set_to_none=True`` backward writes fresh gradients instead. On a GPU
each zeroing is also a kernel launch per parameter tensor; on a CPU the cost is per gradient
byte, so the model has large weights, and the batch is small so the arithmetic does not
hide them.
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
from torch import nn


def build_model(width, depth, classes):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def setup(size, device):
    model = build_model(size["width"], size["depth"], size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(size["batch"], size["width"], device=device)
    targets = torch.randint(0, size["classes"], (size["batch"],), device=device)
    return model, optimizer, inputs, targets, size["steps"]


def run(state):
    model, optimizer, inputs, targets, steps = state
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=False)
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)
'''

SCENARIO = Scenario(
    code="TPF201",
    title="training steps of a deep MLP, gradients zeroed in place",
    before=BEFORE,
    sizes={
        "quick": {"width": 32, "depth": 2, "classes": 10, "batch": 4, "steps": 2},
        "cpu": {"width": 1024, "depth": 8, "classes": 10, "batch": 4, "steps": 1},
        "cuda": {"width": 2048, "depth": 24, "classes": 100, "batch": 16, "steps": 5},
    },
    rtol=1e-4,
    atol=1e-6,
    rationale="gradient bytes dominate: 8 layers of 1024x1024 weights (32 MiB of gradients) "
    "and a batch of 4",
)
