"""Loaders walked together and loaders reached through star imports (review-5's misses):
``zip(train_in, train_out)`` yields a batch of each loader and walks each of them
(TPF103, TPF104), and ``torch`` bound only by ``from utils import *`` still names
``torch.utils.data.DataLoader`` for the value engine (the SSD tutorial's ``eval.py``).
Each mechanism with the look-alikes that must stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict

from project_tree import write_project
from test_dataloader_project import _findings


def _lines(source: str, mark: str) -> set:
    return {i + 1 for i, text in enumerate(source.lstrip("\n").splitlines()) if text.rstrip().endswith(mark)}


def _check(tmp_path: Path, code: str, files: Dict[str, str], mark: str = "# flagged") -> None:
    """Every line ending in ``mark`` is flagged with ``code``, and no other (the whole
    project, and each file alone as a pre-commit run lints it)."""
    select = f'[tool.pytorch-perflint]\nselect = ["{code}"]\n'
    root = write_project(tmp_path / "p", {"pyproject.toml": select, **files})
    expected = {(name, line) for name, source in files.items() if name.endswith(".py") for line in _lines(source, mark)}
    assert _findings(root, code) == expected
    for name in files:
        if name.endswith(".py"):
            assert _findings(root, code, name) == {found for found in expected if found[0] == name}


def test_elements_of_a_zip_are_batches_of_each_loader(tmp_path):
    """outlier-exposure's ``oe_scratch.py``: ``target = in_set[1]`` is a part of a pinned
    batch; ``torch.cat`` rebuilds ``data``; an unknown iterable in the zip stays unknown."""
    files = {
        "train.py": '''
            import torch
            from torch.utils.data import DataLoader

            train_in = DataLoader(a, batch_size=8, shuffle=True, num_workers=1, pin_memory=True)
            train_out = DataLoader(b, batch_size=8, num_workers=3, pin_memory=True)
            pageable = DataLoader(b, batch_size=8)


            def train(net, other, loaders):
                for in_set, out_set in zip(train_in, train_out):
                    data = torch.cat((in_set[0], out_set[0]), 0)
                    target = in_set[1]
                    data, target = data.cuda(), target.cuda()  # flagged
                    out_set[1].cuda()  # flagged
                for i, (x, (y, z)) in enumerate(zip(train_in, other)):
                    x[0].cuda()  # flagged
                    y.cuda()
                    z.cuda()
                for x, y in zip(pageable, train_in, strict=True):
                    x[0].cuda()
                    y[0].cuda()  # flagged
                for x, y in zip(*loaders):
                    x[0].cuda()
                for x, y in zip(other, net):
                    x.cuda()
                pairs = zip(train_in, other)
                for x, _ in pairs:
                    x[1].cuda()  # flagged
        ''',
        "shadowed.py": '''
            import torch
            from torch.utils.data import DataLoader

            train_in = DataLoader(a, batch_size=8, num_workers=1, pin_memory=True)


            def zip(*iterables):
                return iterables


            for x, y in zip(train_in, train_in):
                x[0].cuda()
        ''',
    }
    _check(tmp_path, "TPF104", files)


def test_a_zip_walked_every_epoch_walks_each_loader(tmp_path):
    """``train()`` walks ``zip(train_in, train_out)`` and runs once per epoch: both loaders
    restart their workers every epoch; a zip walked once, a loader with persistent workers,
    ``zip(*loaders)`` and a project function named ``zip`` do not count."""
    files = {
        "train.py": '''
            from torch.utils.data import DataLoader

            train_in = DataLoader(a, batch_size=8, num_workers=1)  # flagged
            train_out = DataLoader(b, batch_size=8, num_workers=3)  # flagged
            kept = DataLoader(b, batch_size=8, num_workers=2, persistent_workers=True)
            once = DataLoader(b, batch_size=8, num_workers=2)
            starred = DataLoader(b, batch_size=8, num_workers=2)


            def train(other):
                for i, (in_set, out_set) in enumerate(zip(train_in, train_out)):
                    pass
                for in_set, out_set in zip(kept, other):
                    pass
                for batches in zip(*[starred]):
                    pass


            for epoch in range(10):
                train(None)
            for x, y in zip(once, train_in):
                pass
        ''',
        "shadowed.py": '''
            from torch.utils.data import DataLoader

            loader = DataLoader(b, batch_size=8, num_workers=2)


            def zip(*iterables):
                return [1, 2]


            for epoch in range(10):
                for x in zip(loader):
                    pass
        ''',
    }
    _check(tmp_path, "TPF103", files)


def test_a_zip_in_another_module_walks_a_returned_loader(tmp_path):
    """``get_loaders()`` returns the loaders; ``train.py`` zips them in its epoch loop."""
    files = {
        "data.py": '''
            from torch.utils.data import DataLoader


            def get_loaders(a, b):
                train_in = DataLoader(a, batch_size=8, num_workers=4)  # flagged
                train_out = DataLoader(b, batch_size=8, num_workers=4)  # flagged
                test = DataLoader(b, batch_size=8, num_workers=4)
                return train_in, train_out, test
        ''',
        "train.py": '''
            from data import get_loaders

            train_in, train_out, test = get_loaders(a, b)
            for epoch in range(10):
                for x, y in zip(train_in, train_out):
                    pass
            for x in test:
                pass
        ''',
    }
    root = write_project(tmp_path / "p", {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF103"]\n', **files})
    assert _findings(root, "TPF103") == {("data.py", line) for line in _lines(files["data.py"], "# flagged")}


STAR_UTILS = '''
    import os
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''


def test_torch_from_a_star_import_names_the_dataloader(tmp_path):
    """The SSD tutorial's ``eval.py``: ``torch`` comes from ``from utils import *``; its
    loader (a custom ``collate_fn`` of lists of tensors) is walked through
    ``enumerate(tqdm(test_loader, desc=...))``, and the list parts are moved one tensor at
    a time. Look-alikes: a name a star import binds to something else, an external star
    import (it may bind anything), a local ``torch``."""
    loop = '''

        def evaluate(test_loader, model):
            for i, (images, boxes, labels) in enumerate(tqdm(test_loader, desc="Evaluating")):
                images = images.to(device){mark}
                boxes = [b.to(device) for b in boxes]{mark}
                labels = [l.to(device) for l in labels]{mark}
                model(images)


        if __name__ == "__main__":
            evaluate(test_loader, model)
    '''
    loader = '''
        test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=8, shuffle=False,
                                                  collate_fn=test_dataset.collate_fn, num_workers=4, pin_memory=True)
    '''
    head = "from tqdm import tqdm\n"
    files = {
        "utils.py": STAR_UTILS,
        "fake.py": "torch = make_fake_torch()\ndevice = 'cuda'\n",
        "eval.py": "from utils import *\n" + head + _dedent(loader) + _dedent(loop.format(mark="  # flagged")),
        "eval_fake.py": "from fake import *\n" + head + _dedent(loader) + _dedent(loop.format(mark="")),
        "eval_external.py": "from somelib import *\n" + head + _dedent(loader) + _dedent(loop.format(mark="")),
        "eval_local.py": "from utils import *\n" + head + "torch = load_plugin()\n" + _dedent(loader) + _dedent(loop.format(mark="")),
    }
    _check(tmp_path, "TPF104", files)


def _dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_a_change_inside_what_a_loader_holds_keeps_the_loader(tmp_path):
    """outlier-exposure's MNIST ``train()``: ``train_loader_out.dataset.offset = ...`` before
    the zip changes the dataset, not which loader the name holds nor its workers. A write
    to the loader's own attribute (``loader.num_workers = 0``) or a rebinding leaves it
    unknown."""
    files = {
        "train.py": '''
            import numpy as np
            from torch.utils.data import DataLoader

            train_in = DataLoader(a, batch_size=8, num_workers=1)  # flagged
            train_out = DataLoader(b, batch_size=8, num_workers=3)  # flagged
            changed = DataLoader(b, batch_size=8, num_workers=3)
            changed.num_workers = 0
            items = DataLoader(b, batch_size=8, num_workers=3)
            items.__dict__["num_workers"] = 0
            updated = DataLoader(b, batch_size=8, num_workers=3)
            updated.__dict__.update(num_workers=0)


            def train():
                train_out.dataset.offset = np.random.randint(len(train_out.dataset))
                for in_set, out_set in zip(train_in, train_out):
                    pass
                for batch in changed:
                    pass
                for batch in items:
                    pass
                for batch in updated:
                    pass


            for epoch in range(10):
                train()
        ''',
    }
    _check(tmp_path, "TPF103", files)
