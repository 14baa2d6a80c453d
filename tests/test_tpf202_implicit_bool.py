"""TPF202: in a training loop on the GPU, an ``if`` whose always-evaluated operand is the
loss the loop backpropagates, or a comparison of it (``if loss == 0 or not
torch.isfinite(loss): continue``), takes the tensor's truth value: an implicit ``bool()``
that waits for the device every step. Look-alikes stay silent: a host number read once
(``value = loss.item()``, reported on its own), a comparison of loop counters, a test under
a sampling guard, after the loop, in a loop that trains nothing, in a module that never
uses an accelerator, and a loss in the right operand of ``or`` only."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "fit.py": """
        import torch


        def fit(model, batches, opt, log_every):
            model.cuda()
            step = 0
            for x, y in batches:
                out = model(x.cuda())
                loss = (out - y.cuda()).pow(2).mean()
                if loss == 0 or not torch.isfinite(loss):  #!
                    continue
                if step == 0 or loss:
                    print("first step")
                if step % log_every == 0:
                    if loss > 10:
                        print("large")
                loss.backward()
                opt.step()
                step += 1
            if loss == 0:
                print("done at zero")


        def score(model, batches):
            model.cuda()
            total = 0
            for x, y in batches:
                error = (model(x.cuda()) - y.cuda()).abs().mean()
                if error > 1:
                    total += 1
            return total


        def fit_host_value(model, batches, opt):
            model.cuda()
            for x, y in batches:
                loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
                loss.backward()
                opt.step()
                value = loss.item()  #!
                if value > 10:
                    print("large")
    """,
    "cpu_fit.py": """
        def fit(model, batches, opt):
            for x, y in batches:
                loss = (model(x) - y).pow(2).mean()
                if loss == 0:
                    continue
                loss.backward()
                opt.step()
    """,
}


def test_the_truth_value_of_the_loss_syncs_every_step(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF202") == _marked(PROJECT)
