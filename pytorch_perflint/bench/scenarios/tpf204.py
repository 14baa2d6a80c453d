"""TPF204 debug-mode-left-on: anomaly detection switched on at the top of a training script.

An overhead rule: anomaly detection records a Python stack trace for every autograd node and
checks every backward output, a cost per operation, so small steps show it best.
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)


def setup(size, device):
    width = size["width"]
    layers = []
    for _ in range(size["layers"]):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(width, size["classes"])).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(size["batch"], width, device=device)
    targets = torch.randint(0, size["classes"], (size["batch"],), device=device)
    return model, optimizer, inputs, targets, size["steps"]


def run(state):
    model, optimizer, inputs, targets, steps = state
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)
'''

SCENARIO = Scenario(
    code="TPF204",
    title="training steps with anomaly detection on",
    before=BEFORE,
    sizes={
        "quick": {"width": 32, "layers": 2, "classes": 10, "batch": 8, "steps": 2},
        "cpu": {"width": 128, "layers": 6, "classes": 10, "batch": 32, "steps": 4},
        "cuda": {"width": 1024, "layers": 8, "classes": 100, "batch": 256, "steps": 3},
    },
    rtol=1e-4,
    atol=1e-5,
    rationale="an overhead rule: small layers, many autograd nodes per step",
)
