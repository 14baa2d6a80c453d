"""TPF602 optimizer-not-fused: Adam on a CUDA model without ``fused=``.

The fused Adam updates every parameter in one kernel per group instead of a handful of
(foreach) kernels; the gain is per parameter tensor, so the model has many of them.
GPU-only: the measured claim is about CUDA kernels (preview rule).
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(width, depth, classes):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def setup(size, device=DEVICE):
    model = build_model(size["width"], size["depth"], size["classes"]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs = torch.randn(size["batch"], size["width"], device=device)
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
    code="TPF602",
    title="Adam steps on a model with many parameter tensors",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"width": 16, "depth": 2, "classes": 10, "batch": 4, "steps": 2},
        "cpu": {"width": 128, "depth": 16, "classes": 10, "batch": 16, "steps": 3},
        "cuda": {"width": 1024, "depth": 32, "classes": 100, "batch": 64, "steps": 5},
    },
    # The fused kernel rounds differently from the foreach path.
    rtol=1e-4,
    atol=1e-5,
    rationale="many parameter tensors: the fused kernel's saving is per tensor",
)
