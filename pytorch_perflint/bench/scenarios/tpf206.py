"""TPF206 empty-cache-in-loop: ``torch.cuda.empty_cache()`` after every training step.

Each step allocates large activations; with the cache emptied every step, the next step
gets its blocks from ``cudaMalloc`` again instead of the caching allocator. The hand-written
"after" follows the rule's message: the call is gone. GPU-only: on the CPU there is no
caching allocator to empty (the call does nothing without CUDA).
"""

from ..scenario import Need, Scenario

_COMMON = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(width, depth, classes):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def setup(size, device=DEVICE):
    model = build_model(size["width"], size["depth"], size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(size["batch"], size["width"], device=device)
    targets = torch.randint(0, size["classes"], (size["batch"],), device=device)
    return model, optimizer, inputs, targets, size["steps"]
'''

BEFORE = _COMMON + '''

def run(state):
    model, optimizer, inputs, targets, steps = state
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
        torch.cuda.empty_cache()
    return torch.stack(losses)
'''

AFTER = _COMMON + '''

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
    code="TPF206",
    title="MLP training steps with the CUDA cache emptied after each step",
    before=BEFORE,
    after=AFTER,
    needs=Need.CUDA,
    sizes={
        "quick": {"width": 32, "depth": 2, "classes": 10, "batch": 8, "steps": 2},
        "cpu": {"width": 256, "depth": 2, "classes": 10, "batch": 64, "steps": 3},
        "cuda": {"width": 2048, "depth": 4, "classes": 1000, "batch": 1024, "steps": 5},
    },
    rationale="large activations freed and allocated again every step",
    measure_memory=True,
)
