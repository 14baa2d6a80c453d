"""TPF205: a loss bound more than once in a training loop is judged by the binding that
reaches the accumulation (``facts/training/reaching.py``): ``step_cost = 0`` at the top of
the iteration then ``step_cost = a + b`` before ``epoch_cost += step_cost``; a ``cost``
bound under ``no_grad`` in a validation pass inside the loop and again in the training step.
An optimizer built from a filtered list of a model's parameters (``opt_cls([p for p in
net.parameters() if p.requires_grad] + extra)``) makes the loop train, and a loss a project
objective helper returns (``score(objective, pred, gold)``) carries a graph once the loop
backpropagates it.

Look-alikes stay silent: ``.item()`` and ``.detach()`` sums, a name whose last binding
before the read is a float made after the backward, a term that only an ``if`` may bind
(the ``0`` may reach), a name a nested loop rebinds, a sum under ``no_grad``, and a name
rebound from itself by a method (``score = score.mean()``), which defers to its earlier
binding (an unknown critic's output here)."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "objectives.py": """
        import torch

        def score(objective, pred, gold, extra=None):
            if extra is None:
                return objective(pred, gold.float())
            return objective(pred, gold, extra)
    """,
    "fit.py": """
        import torch
        from torch import nn
        from objectives import score

        def fit_filtered(net, batches, rounds, extra_modules, opt_cls=torch.optim.Adam, objective=nn.MSELoss()):
            extra = [q for m in extra_modules for q in m.parameters()]
            updater = opt_cls([p for p in net.parameters() if p.requires_grad] + extra, lr=0.01)
            for r in range(rounds):
                epoch_cost = 0.0
                seen = 0
                for feats, gold in batches:
                    updater.zero_grad()
                    cost = score(objective, net(feats), gold)
                    epoch_cost += cost * len(gold)  #!
                    seen += len(gold)
                    cost.backward()
                    updater.step()
                print(epoch_cost / seen)

        def fit_two_heads(net, batches, rounds, opt_cls, head_a_crit=nn.L1Loss(), head_b_crit=nn.MSELoss()):
            updater = opt_cls(list(net.parameters()), lr=0.01)
            for r in range(rounds):
                sum_cost = 0
                sum_head_b = 0
                for feats, gold in batches:
                    head_a = 0
                    head_b = 0
                    step_cost = 0
                    updater.zero_grad()
                    out_a, out_b = net(feats)
                    for k, piece in enumerate(out_a):
                        head_a += head_a_crit(piece, gold[k])
                    head_b = head_b_crit(out_b, gold)
                    step_cost = 0.5 * head_a + head_b
                    sum_cost += step_cost  #!
                    sum_head_b += head_b  #!
                    step_cost.backward()
                    updater.step()
                print(sum_cost, sum_head_b)

        def fit_with_probe(net, batches, probe_batches, rounds, opt):
            for r in range(rounds):
                running = 0
                for feats, gold in batches:
                    if len(probe_batches) > 3:
                        with torch.no_grad():
                            pf, pg = probe_batches[0]
                            cost = nn.functional.mse_loss(net(pf), pg)
                        print(cost.item())
                    opt.zero_grad()
                    pred = net(feats)
                    cost = (pred - gold).abs().mean() * 2
                    cost.backward()
                    opt.step()
                    running += cost  #!
                print(running)

        def fit_quiet(net, batches, rounds, opt, objective=nn.MSELoss()):
            for r in range(rounds):
                as_items = 0.0
                detached = 0.0
                after_float = 0.0
                maybe_aux = 0.0
                nested = 0.0
                for feats, gold in batches:
                    opt.zero_grad()
                    cost = objective(net(feats), gold)
                    as_items += cost.item()
                    detached += cost.detach()
                    aux = 0
                    if r > 2:
                        aux = objective(net(feats), gold * 2)
                    maybe_aux += aux
                    cost.backward()
                    opt.step()
                    part = objective(net(feats), gold)
                    for k in range(2):
                        nested += part
                        part = float(k)
                    cost = cost.item()
                    after_float += cost
                print(as_items, detached, after_float, maybe_aux, nested)

        def fit_rescored(net, critic, batches, opt):
            scores = []
            for feats, gold in batches:
                score = -critic(net(feats), gold)
                score = score.mean()
                score.backward()
                opt.step()
                scores.append(score)
            return scores

        def fit_validated(net, batches, rounds, opt, objective=nn.MSELoss()):
            for r in range(rounds):
                for feats, gold in batches:
                    cost = objective(net(feats), gold)
                    cost.backward()
                    opt.step()
                with torch.no_grad():
                    val_total = 0
                    for feats, gold in batches:
                        cost = 0
                        cost = objective(net(feats), gold)
                        val_total += cost
                print(val_total)
    """,
}


def test_the_binding_that_reaches_the_accumulation_decides(tmp_path: Path):
    assert _findings(tmp_path, PROJECT, "TPF205") == sorted((Path(n).name, r) for n, r in _marked(PROJECT))
