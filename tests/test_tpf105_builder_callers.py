"""TPF105 through a project loader builder called with ``**options`` (issue 23, new-rules-7's
misses by mechanism): ``make_loader(**data_cfg, num_gpus=n)`` in another module returns a
loader whose sampler is a ``DistributedSampler``, and the caller walks it in an epoch loop
counted by iterations (``while step < total:``). A ``**`` argument fills the builder's other
parameters; it does not change which loader comes back, so the caller counts as one with
plain arguments (TPF103 reads the same callers: the loader's workers restart every epoch).
Look-alikes stay silent: a caller that walks the loader once, one that sets the epoch, and
a ``*args`` call (its positions are not known)."""

from __future__ import annotations

import pytest

from test_tensors_project import _findings, _marked

BUILDER = """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    def make_loader(root, split, batch_size, num_gpus=1):
        dataset = AudioPairs(root, split)
        if num_gpus > 1:
            sampler = DistributedSampler(dataset)  #!
            return DataLoader(dataset, sampler=sampler, batch_size=batch_size)
        return DataLoader(dataset, shuffle=True, batch_size=batch_size)
"""

CASES = {
    "walked-every-epoch-by-iterations": {
        "audio_data.py": BUILDER,
        "train.py": """
            import torch
            from audio_data import make_loader

            def train(data_cfg, model, opt, total, num_gpus):
                loader = make_loader(**data_cfg, batch_size=8, num_gpus=num_gpus)
                step = 0
                while step < total:
                    for clean, noisy in loader:
                        loss = (model(noisy.cuda()) - clean.cuda()).abs().mean()
                        loss.backward()
                        opt.step()
                        step += 1
        """,
    },
}

QUIET = {
    "walked-once": """
        import torch
        from audio_data import make_loader

        def export(data_cfg, model):
            loader = make_loader(**data_cfg, batch_size=8, num_gpus=2)
            for clean, noisy in loader:
                save(model(noisy))
    """,
    "sets-the-epoch": """
        import torch
        from audio_data import make_loader

        def train(data_cfg, model, opt, epochs):
            loader = make_loader(**data_cfg, batch_size=8, num_gpus=2)
            for epoch in range(epochs):
                loader.sampler.set_epoch(epoch)
                for clean, noisy in loader:
                    model(noisy).mean().backward()
                    opt.step()
    """,
    "star-arguments": """
        import torch
        from audio_data import make_loader

        def train(parts, model, opt, epochs):
            loader = make_loader(*parts)
            for epoch in range(epochs):
                for clean, noisy in loader:
                    model(noisy).mean().backward()
                    opt.step()
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_builder_called_with_options_feeds_an_epoch_loop(tmp_path, name):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF105") == _marked(files)


@pytest.mark.parametrize("name", sorted(QUIET))
def test_builder_callers_that_do_not_walk_every_epoch_stay_silent(tmp_path, name):
    files = {"audio_data.py": BUILDER.replace("  #!", ""), "train.py": QUIET[name]}
    assert _findings(tmp_path, files, "TPF105") == []
