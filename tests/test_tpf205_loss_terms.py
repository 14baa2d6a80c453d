"""TPF205 on the terms of a loss (issue 23, new-rules-5's misses by mechanism): the terms a
project method returns beside the loss it computed from them (``total, rank, penalty =
scorer.pair_loss(...)`` in another module, through ``model(x)``'s forward that returns a
call of another method), terms of the backpropagated loss computed in the loop itself
(``rank = -torch.sum(...)``, ``loss = rank + w * penalty``; ``loss += extra``), and a loss
rebound by arithmetic on itself (``loss = loss + aux``, ``step_loss = step_loss``) before
its ``backward()``. Each case is a small project whose marked lines (``#!``) are the
findings; the look-alikes beside them (converted or detached terms, a term that is a
number, totals under no-grad, a total that is backpropagated) stay silent."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

CASES = {
    # A ranking model of its own module returns (total, rank, penalty); the training script
    # unpacks it, backpropagates the total and sums every item after the step.
    "method-returns-its-terms": {
        "ranker.py": """
            import torch
            from torch import nn

            class PairRanker(nn.Module):
                def __init__(self, n, dim, weight):
                    super().__init__()
                    self.table = nn.Embedding(n, dim)
                    self.weight = weight

                def forward(self, a, b, c):
                    return self.table(a), self.table(b), self.table(c)

                def pair_loss(self, a, b, c):
                    good = torch.sum(a * b, dim=1)
                    bad = torch.sum(a * c, dim=1)
                    rank = -1 * torch.mean(torch.log(torch.sigmoid(good - bad)))
                    penalty = self.weight * (a.norm() ** 2 + b.norm() ** 2) / 2
                    return rank + penalty, rank, penalty

                def pair_loss_logged(self, a, b, c):
                    rank = torch.mean(a * b)
                    shown = rank.item()
                    width = 0.5
                    return rank + width, shown, width
        """,
        "fit.py": """
            import torch
            from ranker import PairRanker

            net = PairRanker(100, 8, 1e-4).cuda()
            opt = torch.optim.Adam(net.parameters())
            for epoch in range(5):
                running, rank_sum, pen_sum, shown_sum, width_sum = 0.0, 0.0, 0.0, 0.0, 0.0
                for a, b, c in batches():
                    ea, eb, ec = net(a, b, c)
                    step_total, step_rank, step_pen = net.pair_loss(ea, eb, ec)
                    opt.zero_grad()
                    step_total.backward()
                    opt.step()
                    running += step_total  #!
                    rank_sum += step_rank  #!
                    pen_sum += step_pen  #!
                    logged_total, logged, width = net.pair_loss_logged(ea, eb, ec)
                    logged_total.backward()
                    shown_sum += logged
                    width_sum += width
                print(running, rank_sum, pen_sum, shown_sum, width_sum)
        """,
    },
    # The model's forward returns a call of another of its methods; `_` items are skipped.
    "forward-returns-a-method-call": {
        "graphnet.py": """
            import torch
            from torch import nn

            class GraphNet(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)
                    self.scale = 0.1

                def mixing(self):
                    return self.lin.weight.pow(2).sum()

                def forward(self, batch):
                    out = self.lin(batch)
                    mix = self.mixing()
                    return self.terms(out, mix)

                def terms(self, out, mix):
                    fit = out.pow(2).mean()
                    mix_part = self.scale * mix
                    return fit + mix_part, fit, out, mix
        """,
        "run.py": """
            import torch
            from graphnet import GraphNet

            model = GraphNet().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                total, mix_total = 0, 0
                for batch in stream():
                    step_loss, _, _, step_mix = model(batch)
                    step_loss = step_loss
                    optimizer.zero_grad()
                    step_loss.backward()
                    optimizer.step()
                    total += step_loss  #!
                    mix_total += step_mix  #!
                print(total, mix_total)
        """,
    },
    # Terms computed in the loop itself; the loss rebound by arithmetic on itself.
    "terms-in-the-loop": {
        "train.py": """
            import torch
            import torch.nn.functional as F

            model = build().cuda()
            opt = torch.optim.Adam(model.parameters())
            lam, reg_w = 0.1, 1e-4
            for epoch in range(10):
                total, rank_total, reg_total, count_total, extra_total = 0.0, 0.0, 0.0, 0.0, 0.0
                const_total, plain_total = 0.0, 0.0
                for x, y, z in loader:
                    logits, emb = model(x, y, z)
                    rank = -torch.sum(F.logsigmoid(logits))
                    reg = emb.norm(2).pow(2)
                    const = 0.5
                    count = len(x)
                    loss = rank + lam * const + reg_w * reg
                    extra = torch.mean(emb) * 0.01
                    loss += extra
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    rank_total += rank  #!
                    reg_total += reg_w * reg  #!
                    extra_total += extra  #!
                    const_total += const
                    count_total += count
                    plain_total += rank.item()
                print(rank_total, reg_total, extra_total, const_total, count_total, plain_total)

            def session_train(net, data, optimizer):
                net.train()
                epoch_loss = 0.0
                for part in data.parts():
                    optimizer.zero_grad()
                    scores, contrast = net(part)
                    loss = net.criterion(scores, part.target)
                    loss = loss + contrast
                    loss.backward()
                    optimizer.step()
                    epoch_loss += loss  #!
                print(epoch_loss)

            def detached_train(net, data, optimizer):
                epoch_loss = 0.0
                for part in data.parts():
                    optimizer.zero_grad()
                    scores, contrast = net(part)
                    loss = F.cross_entropy(scores, part.target)
                    loss = loss + contrast
                    loss.backward()
                    optimizer.step()
                    loss = loss.item()
                    epoch_loss += loss
                print(epoch_loss)

            def no_grad_totals(net, data, optimizer):
                epoch_loss = 0.0
                for part in data.parts():
                    optimizer.zero_grad()
                    with torch.no_grad():
                        scores, contrast = net(part)
                        loss = F.cross_entropy(scores, part.target)
                        loss = loss + contrast
                        epoch_loss += loss
                    optimizer.step()
                print(epoch_loss)

            def accumulate_then_backward(net, data, optimizer):
                acc = 0.0
                for part in data.parts():
                    scores, contrast = net(part)
                    loss = F.cross_entropy(scores, part.target)
                    loss = loss + contrast
                    loss.backward()
                    acc += loss
                acc.backward()
                optimizer.step()
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_terms_of_a_backpropagated_loss_carry_its_graph(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF205") == _marked(files)
