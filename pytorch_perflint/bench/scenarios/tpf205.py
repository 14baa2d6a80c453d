"""TPF205 loss-accumulated-with-graph: a running loss total that keeps every step's graph.

``total += loss`` keeps each step's autograd graph alive until ``total`` is dropped at
the end of the loop, so memory grows with every step; with ``loss.detach()`` only the
current step's graph lives. ``run`` returns every step's loss, so
the equivalence check proves the fixed loop computes the same losses, and the harness
reports each program's peak memory beside its times (``measure_memory``). ``backward()``
frees the activations a graph saved, but the graph's nodes, the loss tensors and what ops
keep outside their saved tensors stay reachable from ``total``: the growth is per step, so
many small steps show it best. That growth is host memory: on CUDA the peak device memory
this reports is the same before and after (1.06 MiB on an H200, 2026-11-28), since only the
loss scalars stay on the device.
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
import torch.nn.functional as F
from torch import nn


def setup(size, device):
    width = size["width"]
    layers = []
    for _ in range(size["layers"]):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, size["classes"])).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(size["steps"], size["batch"], width, device=device)
    targets = torch.randint(0, size["classes"], (size["steps"], size["batch"]), device=device)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    return model, optimizer, inputs, targets, start


def run(state):
    model, optimizer, inputs, targets, start = state
    model.load_state_dict(start)  # every run trains the same steps from the same weights
    total = 0.0
    losses = []
    for x, y in zip(inputs, targets):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
        losses.append(loss.detach())
    return torch.stack(losses), total / len(losses)
'''

SCENARIO = Scenario(
    code="TPF205",
    title="training steps that sum the loss with its graph attached",
    before=BEFORE,
    sizes={
        # Small, but enough steps for the kept graphs to show in --quick's memory line
        # (8 steps read 8.27 MiB before and after alike; 512 read 12.3 MiB before, 8.4 after).
        "quick": {"width": 32, "layers": 2, "classes": 10, "batch": 8, "steps": 512},
        "cpu": {"width": 256, "layers": 4, "classes": 10, "batch": 64, "steps": 512},
        "cuda": {"width": 1024, "layers": 6, "classes": 100, "batch": 256, "steps": 128},
    },
    rtol=1e-5,
    atol=1e-6,
    rationale="many small steps: the graphs kept alive grow memory with every step before the fix; the losses must agree",
    measure_memory=True,
)
