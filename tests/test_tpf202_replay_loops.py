"""TPF202: a batch loop whose body replays each batch in an inner counted loop that trains
("free" adversarial training: ``for _ in range(args.minibatch_replays):`` with backward and
a step) still runs once per batch, so a sync after the replay is a per-step sync
(fast_adversarial's ``train_free.py``). The look-alikes: an epoch loop around a batch loop
(the outer loop counts, the inner one walks data), an outer loop over something not known
to be a loader, and an inner training loop that walks data."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_DATA = """
    import torch
    from torch.utils.data import DataLoader

    def get_loaders(dataset, batch_size):
        train = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=2)
        test = DataLoader(dataset, batch_size=batch_size, num_workers=2)
        return train, test
"""

REPLAY = {
    "data.py": _DATA,
    "train_free.py": """
        import torch
        from data import get_loaders

        def main(args, model, opt, criterion, dataset):
            train_loader, test_loader = get_loaders(dataset, 128)
            model.cuda()
            for epoch in range(args.epochs):
                train_loss = 0
                for i, (X, y) in enumerate(train_loader):
                    X, y = X.cuda(), y.cuda()
                    for _ in range(args.minibatch_replays):
                        output = model(X)
                        loss = criterion(output, y)
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                    train_loss += loss.item() * y.size(0)  #!
                    train_acc = (output.max(1)[1] == y).sum().item()  #!
                    if i % 10 == 0:
                        print(loss.item())
                print(train_loss)
    """,
}

LOOKALIKES = {
    "data.py": _DATA,
    # The outer loop counts epochs; the inner one walks the loader: per epoch.
    "epochs.py": """
        import torch
        from data import get_loaders

        def main(args, model, opt, dataset):
            train_loader, _ = get_loaders(dataset, 128)
            model.cuda()
            for epoch in range(args.epochs):
                for X, y in train_loader:
                    loss = model(X.cuda()).sum()
                    loss.backward()
                    opt.step()
                print(loss.item())
    """,
    # What the outer loop walks is not known to be a loader's batches.
    "unknown.py": """
        import torch

        def main(args, model, opt, source):
            model.cuda()
            for X, y in source:
                for _ in range(args.replays):
                    loss = model(X.cuda()).sum()
                    loss.backward()
                    opt.step()
                total = loss.item()
    """,
    # The inner training loop walks data (a loader per task): not a replay of the batch.
    "tasks.py": """
        import torch
        from data import get_loaders

        def main(args, model, opt, dataset):
            task_loader, inner_loader = get_loaders(dataset, 8)
            model.cuda()
            for task in task_loader:
                for X, y in inner_loader:
                    loss = model(X.cuda()).sum()
                    loss.backward()
                    opt.step()
                total = loss.item()
    """,
}


def test_a_sync_after_a_replay_loop_runs_every_batch(tmp_path: Path):
    assert _findings(tmp_path, REPLAY, "TPF202") == _marked(REPLAY)


def test_epoch_loops_unknown_iterables_and_data_walking_inner_loops_stay_silent(tmp_path: Path):
    assert _findings(tmp_path, LOOKALIKES, "TPF202") == []
