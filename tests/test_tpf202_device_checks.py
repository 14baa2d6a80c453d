"""TPF202: a sync under ``if x.is_cuda:`` is no guard. Where the program runs on the GPU the
tensor is there on every step, so the test holds on every step: a metric helper that copies
its predictions to the host when they are on the GPU (``if preds.is_cuda: preds =
preds.cpu()``), called on every step of a full-batch training loop, syncs on every step
(reported at the call, as for any helper that syncs on every call), and so does the same
test written in the loop itself.
Look-alikes: the helper's sync under a step-frequency guard, the call under one, a helper
whose sync is under ``if not preds.is_cuda:`` (never on the GPU) or another test, and the
call after the loop."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

PROJECT = {
    "metrics.py": """
        def acc(output, labels):
            preds = output.max(1)[1].type_as(labels)
            if preds.is_cuda:
                preds = preds.cpu()
                labels = labels.cpu()
            return (preds == labels).float().mean()


        def acc_every(output, labels, step):
            preds = output.max(1)[1]
            if step % 100 == 0:
                preds = preds.cpu()
            return preds


        def acc_on_host(output, labels):
            preds = output.max(1)[1]
            if not preds.is_cuda:
                preds = preds.numpy()
            return preds


        def acc_sparse(output, labels, sparse):
            preds = output.max(1)[1]
            if sparse:
                preds = preds.cpu()
            return preds
    """,
    "train.py": """
        import torch
        from torch import nn
        from metrics import acc, acc_every, acc_on_host, acc_sparse


        def train(features, labels, epochs, sparse):
            model = nn.Linear(8, 2).cuda()
            opt = torch.optim.Adam(model.parameters())
            for epoch in range(epochs):
                opt.zero_grad()
                out = model(features)
                loss = nn.functional.cross_entropy(out, labels)
                score = acc(out, labels)  #!
                acc_every(out, labels, epoch)
                acc_on_host(out, labels)
                acc_sparse(out, labels, sparse)
                if epoch % 10 == 0:
                    acc(out, labels)
                if out.is_cuda:
                    host = out.cpu()  #!
                loss.backward()
                opt.step()
            return acc(model(features), labels)
    """,
}


def test_an_is_cuda_test_is_no_guard(tmp_path: Path) -> None:
    assert _findings(tmp_path, PROJECT, "TPF202") == _marked(PROJECT)
