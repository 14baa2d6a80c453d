"""TPF402 tensor-created-then-moved: position ids made on the host, then copied to the GPU.

Every forward builds its position ids with ``torch.arange(...).to(device)``: a host
allocation, a host fill and a synchronous copy, where ``device=`` makes them on the GPU
directly. GPU-only: on a CPU ``.to("cpu")`` is free. The factory is not random, so both
programs draw the same numbers on any device.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Embedder(nn.Module):
    def __init__(self, vocab, max_len, width):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(max_len, width)

    def forward(self, ids):
        device = ids.device
        positions = torch.arange(ids.shape[1]).to(device)
        return self.tokens(ids) + self.positions(positions)


def setup(size, device=DEVICE):
    model = Embedder(size["vocab"], size["length"], size["width"]).to(device)
    ids = torch.randint(0, size["vocab"], (size["batch"], size["length"]), device=device)
    return model, ids, size["steps"]


@torch.no_grad()
def run(state):
    model, ids, steps = state
    total = torch.zeros((), device=ids.device)
    for _ in range(steps):
        total += model(ids).sum()
    return total
'''

SCENARIO = Scenario(
    code="TPF402",
    title="embedding forward that builds position ids on the host",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"vocab": 100, "length": 16, "width": 8, "batch": 2, "steps": 2},
        "cpu": {"vocab": 1000, "length": 128, "width": 64, "batch": 8, "steps": 20},
        "cuda": {"vocab": 32000, "length": 2048, "width": 512, "batch": 8, "steps": 50},
    },
    rtol=1e-4,
    atol=1e-4,
    rationale="an overhead rule on a GPU: the host-side factory and the synchronous copy "
    "stall every forward",
)
