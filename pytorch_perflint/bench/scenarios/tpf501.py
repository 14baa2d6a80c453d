"""TPF501 data-parallel: a model wrapped in ``nn.DataParallel`` (display-only rule).

The effect needs 2+ GPUs, and the rule's advice (DDP, one process per GPU, ``torchrun``)
cannot be timed inside one process, so timing is always skipped. The programs still run on
one device to show that the hand-written "after" computes the same thing.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(features, hidden, classes):
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def setup(size, device=DEVICE):
    model = build_model(size["features"], size["hidden"], size["classes"]).to(device)
    model = nn.DataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(size["batch"], size["features"], device=device)
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

# Following the rule's message: DistributedDataParallel, one process per GPU, started by
# torchrun. Run without torchrun (no process group), it is the plain single-device model.
AFTER = '''\
import os

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
        local_rank = int(os.environ["LOCAL_RANK"])
        model = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(size["batch"], size["features"], device=device)
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
    code="TPF501",
    title="training steps of a DataParallel-wrapped MLP",
    before=BEFORE,
    after=AFTER,
    needs=Need.MULTI_GPU,
    sizes={
        "quick": {"features": 32, "hidden": 64, "classes": 10, "batch": 16, "steps": 2},
        "cpu": {"features": 256, "hidden": 1024, "classes": 100, "batch": 256, "steps": 5},
        "cuda": {"features": 1024, "hidden": 4096, "classes": 1000, "batch": 1024, "steps": 10},
    },
    rationale="DataParallel replicates the model and scatters inputs from GPU 0 every step; "
    "only measurable with 2+ GPUs against DDP under torchrun.",
)
