"""Project subclasses of ``DataLoader`` (``project/loader_classes.py``): a call of a class that
forwards its arguments to ``DataLoader.__init__`` builds a loader with the arguments that reach
it, so TPF101/TPF102 read it as they read ``DataLoader(...)``; look-alikes stay silent."""

from __future__ import annotations

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project
from test_loader_options_flow import _findings


PROJECT = {
    "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF102", "TPF104"]\n',
    "speech/__init__.py": "",
    "speech/loading.py": '''
        import torch
        import torch.utils.data as tud


        def pad_clips(items):
            return torch.stack([torch.as_tensor(i) for i in items])


        class ClipDataLoader(tud.DataLoader):
            """Forwards everything; sets its own collate function afterwards."""

            def __init__(self, *args, **kwargs):
                super(ClipDataLoader, self).__init__(*args, **kwargs)
                self.collate_fn = pad_clips


        class GraphDataLoader(torch.utils.data.DataLoader):
            """Named parameters with defaults, the rest through **kwargs."""

            def __init__(self, dataset, batch_size=1, shuffle=True, **kwargs):
                super().__init__(dataset, batch_size, shuffle, collate_fn=pad_clips, **kwargs)


        class FastGraphDataLoader(GraphDataLoader):
            """A project subclass of the project subclass: workers by default."""

            def __init__(self, dataset, workers=3, **kwargs):
                GraphDataLoader.__init__(self, dataset, num_workers=workers, **kwargs)


        class StreamDataLoader(tud.DataLoader):
            """Changes how it is iterated: not read as a plain DataLoader."""

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)

            def __iter__(self):
                for batch in super().__iter__():
                    yield batch


        class DefaultsDataLoader(tud.DataLoader):
            """Changes what it forwards: not known."""

            def __init__(self, *args, **kwargs):
                kwargs.setdefault("num_workers", 4)
                kwargs["pin_memory"] = True
                super().__init__(*args, **kwargs)


        class FixedDataLoader(tud.DataLoader):
            """Its own worker count, whatever the caller passes."""

            def __init__(self, dataset, **kwargs):
                super().__init__(dataset, num_workers=2, pin_memory=True)
    ''',
    "train.py": '''
        import argparse

        import torch

        from speech.loading import ClipDataLoader, DefaultsDataLoader, FastGraphDataLoader, FixedDataLoader, GraphDataLoader, StreamDataLoader

        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=0)
        args = parser.parse_args()
        device = torch.device("cuda")


        def main(train_set, valid_set, graphs):
            train = ClipDataLoader(train_set, batch_size=4, shuffle=True)
            valid = ClipDataLoader(valid_set, batch_size=4, num_workers=0)
            busy = ClipDataLoader(valid_set, 4, True, None, None, 2, None, True)
            pretrain = GraphDataLoader(graphs, batch_size=32)
            tuned = GraphDataLoader(graphs, 32, False, num_workers=args.workers, pin_memory=True)
            fast = FastGraphDataLoader(graphs, batch_size=32)
            stream = StreamDataLoader(train_set, batch_size=4)
            fixed = FixedDataLoader(train_set, batch_size=4)
            unknown = ClipDataLoader(*parts)
            defaults = DefaultsDataLoader(train_set)
            for x in train:
                x = x.to(device)
            for x in fixed:
                x = x.to(device)
            return train, valid, busy, pretrain, tuned, fast, stream, fixed, unknown
    ''',
}


def test_project_dataloader_subclasses_are_read_as_the_loaders_they_build(tmp_path):
    root = write_project(tmp_path / "p", PROJECT)
    found = _findings(root)
    # no workers reach DataLoader: the two forwarding classes, a 0 passed through **kwargs
    assert found.get("TPF101") == {("train.py", 14), ("train.py", 15), ("train.py", 17)}
    # no pin_memory: also the one with workers by default; not an explicit True (positional
    # through *args, keyword through **kwargs), nor one the class sets itself
    assert found.get("TPF102") == {("train.py", 14), ("train.py", 15), ("train.py", 17), ("train.py", 19)}
    # FixedDataLoader pins whatever it is given: its batches are pinned; ClipDataLoader's are not
    assert found.get("TPF104") == {("train.py", 27)}


def test_a_subclass_over_an_unsharded_stream_says_so_and_offers_no_fix(tmp_path):
    files = {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101"]\n',
        "feed.py": '''
            import torch
            from torch.utils.data import DataLoader, IterableDataset


            class LineStream(IterableDataset):
                def __iter__(self):
                    return iter(range(100))


            class StreamDataLoader(DataLoader):
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **kwargs)


            loader = StreamDataLoader(LineStream(), batch_size=8)
        ''',
    }
    root = write_project(tmp_path / "s", files)
    results, _ = runner.run([root / "feed.py"], load_settings([root]), jobs=1)
    (found,) = [d for r in results for d in r.diagnostics]
    assert found.location.row == 15 and "IterableDataset" in found.message and found.fix is None
