"""TPF205 of a loss that a backward helper proves has a graph (issue 23, new-rules-7's misses
by mechanism): a step returns its loss from code the engine cannot read
(``loss = self._step(batch)``), the loop backpropagates it through
``self.accelerator.backward(loss)``, a mixed-precision scaler
(``scaler.scale(loss).backward()``) or Lightning's ``self.manual_backward(loss)``, and then
adds it to a sum that outlives the iteration. Only a tensor with a graph can be
backpropagated, so the sum keeps every step's graph. Look-alikes stay silent: ``.item()``
and ``.detach()`` of it, a gradient handed to a tensor's own ``backward(grad)`` (the
argument is no graph), and a helper's argument whose receiver is not known to backpropagate
(``logger.backward(loss)`` of something named otherwise).

A project helper that backpropagates its parameter (``def backward(self, loss):
loss.backward()``, ``def optimize(self, loss): ... self.scaler.scale(loss).backward()``)
proves the same of the name a loop hands it. A helper that only logs its parameter, or
backpropagates another one, proves nothing."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

CASES_HELPERS = {
    "project-backward-helper": {
        "agent.py": """
            import torch

            class Agent:
                def backward(self, loss):
                    loss.backward()

                def optimize(self, loss, scale=1.0):
                    self.opt.zero_grad()
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.opt)

                def note(self, value):
                    self.log.append(float(value))

                def learn_from(self, loss, extra):
                    extra.backward()

                def train(self, loader):
                    total = 0.0
                    seen = 0.0
                    noted = 0.0
                    other = 0.0
                    for batch in loader:
                        loss, extra = self.compute(batch)
                        self.backward(loss)
                        self.opt.step()
                        total += loss  #!
                        step_loss = self.compute_other(batch)
                        self.optimize(step_loss)
                        seen += step_loss  #!
                        value = self.compute_value(batch)
                        self.note(value)
                        noted += value
                        first, second = self.compute(batch)
                        self.learn_from(first, second)
                        other += first
                    return total, seen, noted, other
        """,
    },
}

CASES = {
    "accelerator-backward": {
        "trainer.py": """
            import torch

            class Trainer:
                def __init__(self, accelerator, net, opt):
                    self.accelerator = accelerator
                    self.net = net
                    self.opt = opt

                def _step(self, batch):
                    return self.net.compute_loss(batch)

                def run_epoch(self, loader):
                    running = 0.0
                    plain = 0.0
                    kept = 0.0
                    for batch in loader:
                        loss = self._step(batch)
                        self.accelerator.backward(loss)
                        self.opt.step()
                        self.opt.zero_grad()
                        running += loss  #!
                        plain += loss.item()
                        kept += loss.detach()
                    return running, plain, kept

                def run_parts(self, loader):
                    total = 0
                    for batch in loader:
                        parts = self._step(batch)
                        summed = 0
                        for name, value in parts.items():
                            summed += value
                        self.accelerator.backward(summed)
                        self.opt.step()
                        total += summed  #!
                    return total
        """,
    },
    "scaler-and-manual-backward": {
        "loops.py": """
            import torch

            def train(model, loader, opt, scaler, compute):
                history = []
                for batch in loader:
                    with torch.autocast("cuda"):
                        loss, logs = compute(model, batch)
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                    history.append(loss)  #!
                return history

            class Module:
                def fit(self, loader, compute):
                    seen = 0.0
                    opt = self.optimizers()
                    for batch in loader:
                        loss = compute(self, batch)
                        self.manual_backward(loss)
                        opt.step()
                        seen += loss  #!
                    return seen

            def probe(net, loader, logger):
                grads = 0.0
                noted = 0.0
                for x in loader:
                    out = net(x)
                    grad = torch.ones_like(out)
                    out.backward(grad)
                    grads += grad
                    note = logger.record(x)
                    logger.backward(note)
                    noted += note
                return grads, noted
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES_HELPERS))
def test_a_loss_handed_to_a_project_backward_helper_carries_its_graph(tmp_path, name):
    files = CASES_HELPERS[name]
    assert _findings(tmp_path, files, "TPF205") == _marked(files)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_loss_backpropagated_by_a_helper_carries_its_graph(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF205") == _marked(files)
