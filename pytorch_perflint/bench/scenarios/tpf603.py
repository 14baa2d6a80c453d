"""TPF603 fp32-matmul-precision: a float32 MLP trained on CUDA with IEEE float32 matmuls.

On Ampere and later GPUs, TF32 tensor cores run float32 matmuls several times faster; the
fix inserts the setting of the target torch version's API at the top of the script, where
the harness's flag fence picks it up at import. Large square matmuls, where the tensor
cores pay. GPU-only (TF32 does not exist on the CPU). TF32 rounds each product's inputs to
a 10-bit mantissa, so the equivalence tolerance is TF32's.
"""

from ..scenario import Need, Scenario

BEFORE = '''\
import torch
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_model(width, depth, classes):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def setup(size, device=DEVICE):
    model = build_model(size["width"], size["depth"], size["classes"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
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


if __name__ == "__main__":  # an entry script: the harness imports it, a user would run it
    print(run(setup({"width": 64, "depth": 2, "classes": 10, "batch": 8, "steps": 2})))
'''

SCENARIO = Scenario(
    code="TPF603",
    title="MLP training steps, float32 matmuls without TF32",
    before=BEFORE,
    needs=Need.CUDA,
    sizes={
        "quick": {"width": 32, "depth": 2, "classes": 10, "batch": 8, "steps": 2},
        "cpu": {"width": 256, "depth": 4, "classes": 10, "batch": 64, "steps": 3},
        "cuda": {"width": 4096, "depth": 8, "classes": 1000, "batch": 512, "steps": 5},
    },
    rtol=1e-2,
    atol=1e-2,
    rationale="large square matmuls, where TF32 tensor cores pay",
)
