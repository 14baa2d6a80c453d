"""TPF205 loss-accumulated-with-graph: a running loss total that keeps every step's graph.

``total += loss`` keeps each step's autograd graph alive until ``total`` is dropped at
the end of the loop, so memory grows with every step; with ``loss.detach()`` only the
current step's graph lives. ``run`` returns every step's loss, so
the equivalence check proves the fixed loop computes the same losses. ``measure`` runs the
loop once more, untimed, and reports how far the process's resident memory grew (sampled
whenever autograd saves a tensor). ``backward()`` frees the activations a graph saved, but
the graph's nodes, the loss tensors and what ops keep outside their saved tensors stay
reachable from ``total``: the growth is per step, so many small steps show it best.
"""

from ..scenario import Scenario

BEFORE = '''\
import ctypes
import gc
import os

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


def measure(state):
    """How much the process's resident memory grows during one run (not timed). Linux
    only (``/proc``): elsewhere it measures nothing. Free heap memory is handed back first
    (glibc's ``malloc_trim``), so a run cannot hide its growth in what an earlier one left."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        statm = open("/proc/self/statm")
    except OSError:
        return {}
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        statm.seek(0)
        return int(statm.read().split()[1]) * page

    with statm:
        gc.collect()
        libc.malloc_trim(0)
        start = rss()
        peak = [start]

        def sample(tensor):  # autograd saves tensors on every step: sample there
            peak[0] = max(peak[0], rss())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(sample, lambda tensor: tensor):
            run(state)
        return {"peak_memory_growth_bytes": max(peak[0], rss()) - start}
'''

SCENARIO = Scenario(
    code="TPF205",
    title="training steps that sum the loss with its graph attached",
    before=BEFORE,
    sizes={
        "quick": {"width": 32, "layers": 2, "classes": 10, "batch": 8, "steps": 8},
        "cpu": {"width": 256, "layers": 4, "classes": 10, "batch": 64, "steps": 512},
        "cuda": {"width": 1024, "layers": 6, "classes": 100, "batch": 256, "steps": 512},
    },
    rtol=1e-5,
    atol=1e-6,
    rationale="many small steps: the graphs kept alive grow memory with every step before the fix; the losses must agree",
)
