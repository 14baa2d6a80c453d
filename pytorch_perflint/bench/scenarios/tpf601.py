"""TPF601 training-without-autocast: a CUDA training loop in float32 (display-only, preview).

Under ``torch.autocast`` matmuls and convolutions run in bfloat16 on tensor cores, which do
several times the float32 throughput and move half the bytes. The hand-written "after"
follows the rule's advice: the forward and the loss under ``torch.autocast``; bfloat16
needs no GradScaler. Reduced precision changes the numbers by design, so the equivalence
tolerance is bfloat16's (about 3 significant digits). GPU-only.
"""

from ..scenario import Need, Scenario

_COMMON = '''\
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
    return torch.stack(losses)
'''

AFTER = _COMMON + '''

def run(state):
    model, optimizer, inputs, targets, steps = state
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type=inputs.device.type, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().float())
    return torch.stack(losses)
'''

SCENARIO = Scenario(
    code="TPF601",
    title="MLP training steps in float32 vs bfloat16 autocast",
    before=BEFORE,
    after=AFTER,
    needs=Need.CUDA,
    sizes={
        "quick": {"width": 32, "depth": 2, "classes": 10, "batch": 8, "steps": 2},
        "cpu": {"width": 256, "depth": 4, "classes": 10, "batch": 64, "steps": 3},
        "cuda": {"width": 4096, "depth": 8, "classes": 1000, "batch": 512, "steps": 5},
    },
    rtol=2e-2,
    atol=2e-2,
    rationale="large matmuls, where tensor cores pay",
)
