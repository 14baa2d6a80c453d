"""TPF502 ddp-accumulation-without-no-sync: DDP micro-steps that all-reduce (display-only).

The saving is the all-reduce of every micro-step but the last, which exists only with a
process group over 2+ GPUs (one process each, under ``torchrun``): timing is always skipped
in this in-process harness. The programs still run on one device, where the model is not
wrapped (no process group), to show that the hand-written "after" computes the same thing.
"""

from ..scenario import Need, Scenario

_COMMON = '''\
import contextlib

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(features, hidden, classes):
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def setup(size, device=DEVICE):
    model = build_model(size["features"], size["hidden"], size["classes"]).to(device)
    if dist.is_available() and dist.is_initialized():  # launched by torchrun
        model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(size["steps"] * size["accum"], size["batch"], size["features"], device=device)
    targets = torch.randint(0, size["classes"], (size["steps"] * size["accum"], size["batch"]), device=device)
    return model, optimizer, inputs, targets, size["accum"]
'''

BEFORE = _COMMON + '''

def run(state):
    model, optimizer, inputs, targets, accum = state
    losses = []
    for i in range(inputs.shape[0]):
        loss = nn.functional.cross_entropy(model(inputs[i]), targets[i]) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)
'''

# Following the rule's message: the micro-steps that do not step run under no_sync().
AFTER = _COMMON + '''

def run(state):
    model, optimizer, inputs, targets, accum = state
    losses = []
    for i in range(inputs.shape[0]):
        stepping = (i + 1) % accum == 0
        wrapped = isinstance(model, DistributedDataParallel)
        with model.no_sync() if wrapped and not stepping else contextlib.nullcontext():
            loss = nn.functional.cross_entropy(model(inputs[i]), targets[i]) / accum
            loss.backward()
        if stepping:
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)
'''

SCENARIO = Scenario(
    code="TPF502",
    title="DDP training with gradient accumulation over micro-steps",
    before=BEFORE,
    after=AFTER,
    needs=Need.MULTI_GPU,
    sizes={
        "quick": {"features": 32, "hidden": 64, "classes": 10, "batch": 8, "accum": 2, "steps": 2},
        "cpu": {"features": 256, "hidden": 1024, "classes": 100, "batch": 64, "accum": 4, "steps": 3},
        "cuda": {"features": 1024, "hidden": 8192, "classes": 1000, "batch": 256, "accum": 8, "steps": 5},
    },
    rationale="a large model whose gradients are all-reduced on every micro-step before; "
    "only measurable with 2+ GPUs under torchrun.",
)
