"""TPF202 host-sync-in-training-loop: ``loss.item()`` every step (display-only rule).

``.item()`` waits for the GPU to finish the step before the host can queue the next one, so
the GPU idles while Python catches up. The hand-written "after" follows the rule's message:
accumulate on the device, read it once. GPU-only: on a CPU there is no queue to drain.
"""

from ..scenario import Need, Scenario

_COMMON = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(features, hidden, classes):
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def setup(size, device=DEVICE):
    model = build_model(size["features"], size["hidden"], size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [
        (
            torch.randn(size["batch"], size["features"], device=device),
            torch.randint(0, size["classes"], (size["batch"],), device=device),
        )
        for _ in range(size["steps"])
    ]
    return model, optimizer, batches
'''

BEFORE = _COMMON + '''

def run(state):
    model, optimizer, batches = state
    running_loss = 0.0
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    return running_loss / len(batches)
'''

AFTER = _COMMON + '''

def run(state):
    model, optimizer, batches = state
    running_loss = torch.zeros((), device=batches[0][0].device)
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
    return running_loss.item() / len(batches)
'''

SCENARIO = Scenario(
    code="TPF202",
    title="training loop reading the loss with .item() every step",
    before=BEFORE,
    after=AFTER,
    needs=Need.CUDA,
    sizes={
        "quick": {"features": 16, "hidden": 32, "classes": 10, "batch": 4, "steps": 4},
        "cpu": {"features": 256, "hidden": 512, "classes": 10, "batch": 32, "steps": 20},
        "cuda": {"features": 1024, "hidden": 1024, "classes": 100, "batch": 64, "steps": 50},
    },
    rtol=1e-5,
    atol=1e-6,
    rationale="many short steps, so each sync's idle GPU time adds up",
)
