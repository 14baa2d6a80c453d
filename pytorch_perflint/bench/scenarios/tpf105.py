"""TPF105 distributed-sampler-without-set-epoch: every epoch walks the data in one order.

A correctness rule, so the harness reports orders, not a timing: one rank's share of the
data (``num_replicas=2, rank=0``: no process group is needed to build the sampler) is
trained on for two epochs, and ``run`` returns the order of the items each epoch saw.
Before the fix both epochs see the same order; after it the second epoch is reshuffled
(the first is unchanged: ``set_epoch(0)`` is the sampler's starting point).
"""

from ..scenario import Scenario

BEFORE = '''\
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def setup(size, device):
    items = size["items"]
    dataset = TensorDataset(torch.arange(items), torch.randn(items, 1))
    model = nn.Linear(1, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    return dataset, model, optimizer, size["batch_size"], device


def run(state):
    dataset, model, optimizer, batch_size, device = state
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    orders = []
    for epoch in range(2):
        seen = []
        for index, x in loader:
            optimizer.zero_grad()
            model(x.to(device)).pow(2).mean().backward()
            optimizer.step()
            seen.append(index)
        orders.append(torch.cat(seen))
    return orders
'''

SCENARIO = Scenario(
    code="TPF105",
    title="two epochs of one rank's shard through a DistributedSampler",
    before=BEFORE,
    sizes={
        "quick": {"items": 32, "batch_size": 4},
        "cpu": {"items": 256, "batch_size": 16},
        "cuda": {"items": 256, "batch_size": 16},
    },
    orders=True,
    rationale="a correctness rule: the epoch orders are compared (equal before, different after), nothing is timed",
)
