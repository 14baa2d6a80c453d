"""TPF203 eval-without-no-grad: an evaluation loop that records autograd graphs.

Outside ``torch.no_grad()`` every forward op records a graph node and keeps its inputs alive
for a backward that never comes. An overhead rule: many small batches through a small model.
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
from torch import nn


def build_model(features, hidden, classes):
    return nn.Sequential(
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    )


def evaluate(model, batches):
    model.eval()
    total_loss = 0.0
    correct = 0
    seen = 0
    for inputs, targets in batches:
        logits = model(inputs)
        total_loss += nn.functional.cross_entropy(logits, targets, reduction="sum").item()
        correct += (logits.argmax(dim=1) == targets).sum().item()
        seen += targets.numel()
    return total_loss / seen, correct / seen


def setup(size, device):
    model = build_model(size["features"], size["hidden"], size["classes"]).to(device)
    batches = [
        (
            torch.randn(size["batch"], size["features"], device=device),
            torch.randint(0, size["classes"], (size["batch"],), device=device),
        )
        for _ in range(size["batches"])
    ]
    return model, batches


def run(state):
    model, batches = state
    return evaluate(model, batches)
'''

SCENARIO = Scenario(
    code="TPF203",
    title="evaluation loop over small batches, autograd on",
    before=BEFORE,
    sizes={
        "quick": {"features": 16, "hidden": 32, "classes": 10, "batch": 4, "batches": 4},
        "cpu": {"features": 32, "hidden": 64, "classes": 10, "batch": 8, "batches": 50},
        "cuda": {"features": 1024, "hidden": 4096, "classes": 1000, "batch": 256, "batches": 50},
    },
    rtol=1e-5,
    atol=1e-6,
    rationale="an overhead rule: graph recording costs per op, so small batches",
)
