"""TPF202 through a model's forward into its submodules' forwards (``model(x)`` runs
``Net.forward``, which runs ``self.trunk(x)``, which runs ``self.gate(x)``): an implicit
sync there, ``int(n)`` or ``if n > k:`` of a tensor the forward computed from its inputs
by torch operations, waits for the device on every step, reported at the loop's
``model(...)`` call. Look-alikes stay silent: the truth of a host tensor a factory made,
``int()`` of an integer argument, a forward that uses NumPy, a sync under a condition, and
a submodule's dict input's methods."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "parts/__init__.py": "",
    "parts/gates.py": """
        import numpy as np
        import torch
        from torch import nn


        class Gate(nn.Module):
            def forward(self, x):
                live = (x > 0).sum()
                if live > 3:
                    x = x * 2
                return x


        class Counter(nn.Module):
            def forward(self, x, steps):
                kept = int(torch.arange(4).sum())
                if torch.zeros(2).sum() > 0:
                    x = x + 1
                return x * int(steps) * kept


        class Meter(nn.Module):
            def forward(self, x):
                peak = x.max()
                scale = float(np.float32(2.0))
                return x / float(peak) * scale


        class Sometimes(nn.Module):
            def __init__(self, check):
                super().__init__()
                self.check = check

            def forward(self, x, extras):
                keys = extras.keys()
                if keys:
                    x = x + 1
                if self.check:
                    if int(x.sum()) > 0:
                        x = x - 1
                return x


        class Widen(nn.Module):
            def forward(self, x):
                wide = x.view(x.size(0), -1)
                return wide * float(wide.mean())
    """,
    "parts/trunks.py": """
        from torch import nn
        from parts.gates import Gate, Counter, Meter, Sometimes, Widen


        class Trunk(nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = Gate()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                return self.lin(self.gate(x))


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.trunk = Trunk()

            def forward(self, x):
                return self.trunk(x)


        class Calm(nn.Module):
            def __init__(self):
                super().__init__()
                self.count = Counter()
                self.meter = Meter()
                self.some = Sometimes(False)

            def forward(self, x):
                return self.some(self.meter(self.count(x, 3)), {})


        class Wide(nn.Module):
            def __init__(self):
                super().__init__()
                self.widen = Widen()

            def forward(self, x):
                return self.widen(x)
    """,
    "train.py": """
        import torch
        from parts.trunks import Net, Calm, Wide


        def fit(loader, epochs):
            net = Net().cuda()
            calm = Calm().cuda()
            wide = Wide().cuda()
            opt = torch.optim.SGD([*net.parameters(), *calm.parameters()], lr=0.1)
            for epoch in range(epochs):
                for x in loader:
                    x = x.cuda()
                    out = net(x)  #!
                    quiet = calm(x)
                    broad = wide(x)  #!
                    loss = (out + quiet + broad).mean()
                    loss.backward()
                    opt.step()
    """,
}


def test_implicit_syncs_in_submodule_forwards(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF202") == _marked(PROJECT)
