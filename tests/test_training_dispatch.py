"""TPF202 through the value engine's call and method dispatch (``project/call_values.py``):
each project is a scratch reproduction of one mechanism of issue 22's TPF202 misses."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project

_PROJECTS = {
"fwd": {
 "model.py": """
import torch.nn as nn
class Sub(nn.Module):
    def forward(self, x):
        self.last = x.max().item()
        return x
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()
    def forward(self, x):
        return self.sub(x)
class Plain(nn.Module):
    def forward(self, x):
        return x * 2
""",
 "train.py": """
import torch
from model import Net, Plain
model = Net().cuda()
plain = Plain().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x).sum() + plain(x).sum()
    loss.backward()
    opt.step()
""",
},
"meter": {
 "metrics.py": """
class Meter:
    def __init__(self):
        self.vals = []
    def add(self, pred):
        self.vals.append(pred.cpu().numpy())
    def reset(self):
        self.vals = []
""",
 "utils/__init__.py": "",
 "utils/tools.py": """
def scalar(t):
    return t.item()
""",
 "trainer.py": """
import torch
import utils.tools as at
from metrics import Meter
class Trainer:
    def __init__(self, model):
        self.model = model.cuda()
        self.meter = Meter()
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
    def fit(self, loader):
        for x in loader:
            loss = self.model(x).sum()
            loss.backward()
            self.opt.step()
            self.meter.add(loss)
            at.scalar(loss)
            self.meter.reset()
""",
},
"factory": {
 "models/__init__.py": """
from models.pix import Pix
def create_model(opt):
    return Pix(opt)
""",
 "models/pix.py": """
import torch
class Base:
    def set_input(self, d):
        self.d = d
class Pix(Base):
    def __init__(self, opt):
        self.net = torch.nn.Linear(2, 2).cuda()
        self.optimizer = torch.optim.Adam(self.net.parameters())
    def optimize_parameters(self):
        loss = self.net(self.d).sum()
        loss.backward()
        self.optimizer.step()
""",
 "train.py": """
import torch
from models import create_model
model = create_model(opt)
for data in loader:
    model.set_input(data)
    model.optimize_parameters()
    if len(opt.gpu_ids) > 0:
        torch.cuda.synchronize()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
""",
},
"engine": {
 "engine.py": """
import math, sys
import torch
def train_one_epoch(model, criterion, loader, optimizer, device):
    model.train()
    for samples, targets in loader:
        samples = samples.to(device)
        loss = criterion(model(samples), targets)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            sys.exit(1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
""",
 "main.py": """
import argparse, torch
from engine import train_one_epoch
def main(args):
    device = torch.device(args.device)
    for epoch in range(10):
        train_one_epoch(model, criterion, loader, optimizer, device)
if __name__ == '__main__':
    p = argparse.ArgumentParser()
    p.add_argument('--device', default='cuda')
    main(p.parse_args())
""",
},
"fullbatch": {
 "train.py": """
import torch
model = Net().cuda()
optimizer = torch.optim.Adam(model.parameters())
def train(epoch):
    model.train()
    optimizer.zero_grad()
    output = model(features)
    loss_train = F.nll_loss(output[idx], labels[idx])
    loss_train.backward()
    optimizer.step()
    print('Epoch: {:04d}'.format(epoch + 1), 'loss_train: {:.4f}'.format(loss_train.item()))
    print(float(loss_train))
for epoch in range(200):
    train(epoch)
""",
},
"adv": {
 "attack.py": """
def pgd(model, x, y, steps=10):
    x_adv = x.clone().requires_grad_()
    for _ in range(steps):
        loss = model(x_adv).sum()
        loss.backward()
        x_adv = x_adv + 0.01 * x_adv.grad.sign()
    return x_adv
""",
 "train.py": """
import torch
from attack import pgd
model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0
for x, y in loader:
    x_adv = pgd(model, x, y)
    loss = model(x_adv).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss.item()
""",
},
"inneropt": {
 "train.py": """
import torch
model = Net().cuda()
for x in loader:
    loss = model(x).sum()
    loss.backward()
    for optimizer in optimizers:
        optimizer.step()
    meter.update(loss.data.item())
""",
},
"fmt": {
 "train.py": """
import torch
model = Net().cuda()
pbar = tqdm(loader)
for x in pbar:
    cls_loss, reg_loss = model(x)
    cls_loss = cls_loss.mean()
    reg_loss = reg_loss.mean()
    loss = cls_loss + reg_loss
    if bool(loss == 0):
        continue
    loss.backward()
    optimizer.step()
    pbar.set_postfix_str('loss %.3f' % loss)
    print('cls {:.3f}'.format(float(cls_loss)))
""",
},
"branches": {
 "algo/__init__.py": "from .a2c import A2C\nfrom .ppo import PPO\n",
 "algo/a2c.py": """
import torch
class A2C:
    def __init__(self, net):
        self.optimizer = torch.optim.Adam(net.parameters())
    def update(self, r):
        loss = r.loss()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()
""",
 "algo/ppo.py": "class PPO:\n    def update(self, r):\n        return 0\n",
 "main.py": """
import torch
from algo import A2C, PPO
def main(args):
    net = Net().cuda()
    if args.algo == 'a2c':
        agent = A2C(net)
    else:
        agent = PPO()
    for j in range(100):
        for step in range(5):
            obs = envs.step(act)
        loss = agent.update(rollouts)
""",
},
}


def _findings(root: Path, select: str = "TPF202") -> List[Tuple[str, int]]:
    settings = dataclasses.replace(load_settings([root]), select=(select,))
    results, _ = runner.run(sorted(root.rglob("*.py")), settings, jobs=1)
    return sorted((Path(r.path).name, d.location.row) for r in results for d in r.diagnostics)


@pytest.mark.parametrize(
    "name, expected",
    [
        # `model(x)` runs Net.forward, whose submodule's forward syncs (`.cuda()` keeps the module).
        ("fwd", [("train.py", 7)]),
        # a method of an object held in an attribute; a function through a module alias.
        ("meter", [("trainer.py", 14), ("trainer.py", 15)]),
        # the loop trains only through `model.optimize_parameters()` of a factory's object,
        # and a device-availability `if` is no sampling guard.
        ("factory", [("train.py", 8), ("train.py", 10)]),
        ("engine", [("engine.py", 8), ("engine.py", 14)]),
        ("fullbatch", [("train.py", 14)]),
        # a helper with its own backward loop (an attack) leaves the outer loop per step.
        ("adv", [("train.py", 12)]),
        # the optimizers stepped in an inner loop: the outer loop is still the step loop.
        ("inneropt", [("train.py", 8)]),
        # a comparison of a tensor, `%` into a progress bar, a term of the loss unpacked
        # from the model's output.
        ("fmt", [("train.py", 9), ("train.py", 13), ("train.py", 14)]),
        # a step method called after a rollout, on an object one branch makes: its own sync.
        ("branches", [("a2c.py", 10)]),
    ],
)
def test_tpf202_reaches_syncs_through_dispatch(tmp_path, name, expected):
    root = write_project(tmp_path / name, _PROJECTS[name])
    assert _findings(root) == expected


def test_unknown_receivers_and_guards_stay_silent(tmp_path):
    root = write_project(
        tmp_path / "quiet",
        {
            "model.py": """
                import torch.nn as nn
                class Net(nn.Module):
                    def forward(self, x):
                        if self.debug:
                            print(x.max().item())
                        return x
                def build(kind):
                    return Net() if kind == "a" else make_other()
            """,
            "train.py": """
                import torch
                from model import Net, build
                model = Net().cuda()
                other = build(args.kind)
                for i, x in enumerate(loader):
                    loss = model(x).sum() + other(x).sum()
                    loss.backward()
                    opt.step()
                    if len(history) > 0:
                        print(loss.item())
                    if epoch > 3:
                        torch.cuda.synchronize()
                    scale = float(args.scale)
            """,
        },
    )
    # the forward syncs only under a flag; `other` may be anything; `len(history)` is no
    # device list. `if epoch > 3` is invariant in the loop but an ordering: a guard, as before.
    assert _findings(root) == []


def _check(root: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", "check", "--select", "TPF202", "--output-format", "concise", "."],
        capture_output=True, text=True, cwd=root,
    ).stdout


def test_a_finding_through_dispatch_depends_on_the_module_it_read(tmp_path):
    """The cache: editing the submodule's forward (another module) re-lints train.py."""
    root = write_project(tmp_path / "fwd", _PROJECTS["fwd"])
    assert "train.py:7:" in _check(root)
    assert (root / ".pytorch_perflint_cache").exists()  # the second run goes through the cache
    model = root / "model.py"
    model.write_text(model.read_text().replace("self.last = x.max().item()", "self.last = x.max()"))
    assert "train.py:7:" not in _check(root)
