"""TPF205 for a loss bound on each arm of an ``if``/``else`` and then backpropagated
(new-rules-6's graph-network trainer): ``if plain: loss = model.cost(y, t) else: loss =
model.cost(y, t, adj)``; ``loss.backward()``; ``total += loss``. Whichever arm ran, the loop
backpropagates it, so it carries a graph and the sum keeps every step's graph alive.
Look-alikes stay silent: the sum of ``loss.item()``, a name rebound to a number after its
backward on the same path (``loss = loss.item()``: three bindings, not one per arm)."""

from __future__ import annotations

from test_tensors_project import _findings, _marked

STEP = """
    import torch


    def fit(model, batches, opts):
        optim = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(opts.epochs):
            total = 0.0
            for i, item in enumerate(batches):
                out = model(item["x"].cuda())
                if opts.plain:
                    loss = model.cost(out, item["y"])
                elif opts.scaled:
                    loss = 2 * model.cost(out, item["y"])
                else:
                    loss = model.cost(out, item["y"], item["adj"])
                loss.backward()
                optim.step()
                {accumulate}
            print(total / (i + 1))
"""


def _step(accumulate: str) -> dict:
    return {"train.py": STEP.replace("{accumulate}", accumulate)}


def test_a_loss_bound_on_each_arm_then_backpropagated_carries_a_graph(tmp_path):
    files = _step("total += loss  #!")
    assert len(_marked(files)) == 1
    assert _findings(tmp_path, files, "TPF205") == _marked(files)


def test_look_alikes_of_the_loss_bound_per_arm_stay_silent(tmp_path):
    cases = (
        _step("total += loss.item()"),
        _step("loss = loss.item()\n                total += loss"),
    )
    for n, files in enumerate(cases):
        assert _findings(tmp_path / str(n), files, "TPF205") == []
