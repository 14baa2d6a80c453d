"""TPF205 (and every rule that asks for training loops): an optimizer built by a call
handed ``model.parameters()`` first is an optimizer whatever names its class
(``op = optimtype(model.parameters(), lr=lr)`` with ``optimtype`` a parameter), so a loop
that runs backward and ``op.step()`` trains, and a loss summed into a per-epoch total keeps
every step's graph. Look-alikes: a loop whose ``.step()`` is an environment's (built from
something else: a micro-batch loop as far as the rule can tell), and a ``.detach()``ed sum."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "train.py": """
        import torch
        from torch import nn

        def fit(model, loader, epochs, optimtype=torch.optim.RMSprop, lr=0.001):
            criterion = nn.CrossEntropyLoss()
            op = optimtype(model.parameters(), lr=lr)
            for epoch in range(epochs):
                running = 0.0
                for x, y in loader:
                    op.zero_grad()
                    loss = criterion(model(x), y)
                    running += loss * len(y)  #!
                    loss.backward()
                    op.step()
                print(running / len(loader))

        def fit_detached(model, loader, optimtype, lr=0.001):
            criterion = nn.CrossEntropyLoss()
            op = optimtype(model.parameters(), lr=lr)
            running = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                op.step()
                running += loss.detach()
            return running

        def rollout(model, env, steps, make_env):
            criterion = nn.MSELoss()
            world = make_env(env)
            running = 0.0
            for _ in range(steps):
                x, y = world.step(model)
                loss = criterion(model(x), y)
                loss.backward()
                running += loss
            return running.item()
    """,
}


def test_an_optimizer_built_from_parameters_makes_the_loop_train(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF205") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
