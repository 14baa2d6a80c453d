"""TPF105 across three modules (issue 23, llama-recipes' miss): a helper packs the sampler
into the loader arguments it returns (``kwargs["sampler"] = DistributedSampler(...,
shuffle=mode == "train")``; ``return kwargs``), a caller elsewhere passes ``"train"``,
unpacks the dict into ``DataLoader(ds, **kwargs)`` and hands the loader once to a training
function of a third module whose epoch loop walks it."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from test_cache_project import _findings, _rewrite  # noqa: E402

CONFIG = (
    "from torch.utils.data import DistributedSampler\n\n\n"
    "def get_dataloader_kwargs(cfg, dataset, mode):\n"
    "    kwargs = {}\n"
    "    if cfg.enable_fsdp:\n"
    "        kwargs['sampler'] = DistributedSampler(dataset, shuffle=mode == 'train', drop_last=True)\n"
    "    kwargs['batch_size'] = cfg.batch_size\n"
    "    return kwargs\n"
)
TRAIN = (
    "def train(model, train_dataloader, optimizer, cfg):\n"
    "    for epoch in range(cfg.num_epochs):\n"
    "        for batch in train_dataloader:\n"
    "            model(batch).backward()\n            optimizer.step()\n"
)
MAIN = (
    "import torch\nfrom config_utils import get_dataloader_kwargs\nfrom train_utils import train\n\n\n"
    "def main(cfg, ds, model, optimizer, collator):\n"
    "    train_kwargs = get_dataloader_kwargs(cfg, ds, 'train')\n"
    "    if collator:\n        train_kwargs['collate_fn'] = collator\n"
    "    train_dataloader = torch.utils.data.DataLoader(ds, num_workers=2, **train_kwargs)\n"
    "    return train(model, train_dataloader, optimizer, cfg)\n"
)


def _project(root: Path, files: Dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF105"]\n')
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_sampler_packed_into_loader_arguments_and_walked_in_a_third_module(tmp_path):
    root = _project(tmp_path, {"config_utils.py": CONFIG, "train_utils.py": TRAIN, "finetune.py": MAIN})
    assert _findings(root, ".") == [("config_utils.py", 7, "TPF105")]


def test_look_alikes_stay_silent(tmp_path):
    root = _project(tmp_path, {"config_utils.py": CONFIG, "train_utils.py": TRAIN, "finetune.py": MAIN})
    variants = {
        # only the validation loader is built: its sampler does not shuffle
        "finetune.py": MAIN.replace("'train')", "'val')"),
        # the training function sets the epoch
        "train_utils.py": TRAIN.replace("        for batch", "        train_dataloader.sampler.set_epoch(epoch)\n        for batch"),
        # the loader is walked once (no epoch loop around the walk)
        "train_utils.py ": "def train(model, train_dataloader, optimizer, cfg):\n    for batch in train_dataloader:\n        model(batch).backward()\n",
        # the caller replaces the sampler
        "finetune.py ": MAIN.replace("        train_kwargs['collate_fn'] = collator", "        train_kwargs['sampler'] = None"),
        # the helper does not shuffle
        "config_utils.py": CONFIG.replace("shuffle=mode == 'train'", "shuffle=False"),
        # the helper returns something else than the dict
        "config_utils.py ": CONFIG.replace("    return kwargs\n", "    return dict(kwargs)\n"),
    }
    originals = {"config_utils.py": CONFIG, "train_utils.py": TRAIN, "finetune.py": MAIN}
    for name, text in variants.items():
        name = name.strip()
        _rewrite(root / name, text)
        assert _findings(root, ".") == [], name
        _rewrite(root / name, originals[name])
    assert _findings(root, ".") == [("config_utils.py", 7, "TPF105")]


DATA = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def make_loader(ds):\n    sampler = DistributedSampler(ds)\n    return DataLoader(ds, sampler=sampler, batch_size=8)\n"
)
FIT = (
    "def fit(model, opt, loader, epochs):\n    for epoch in range(epochs):\n"
    "        for x, y in loader:\n            model(x).sum().backward()\n            opt.step()\n"
)
RUN = (
    "from data import make_loader\nfrom fit import fit\n\n\n"
    "def main(ds, model, opt, epochs):\n    loader = make_loader(ds)\n    fit(model, opt, loader, epochs)\n"
)


def test_a_returned_loader_handed_once_to_a_function_whose_epoch_loop_walks_it(tmp_path):
    root = _project(tmp_path, {"data.py": DATA, "fit.py": FIT, "run.py": RUN})
    assert _findings(root, ".") == [("data.py", 5, "TPF105")]
    variants = {
        "fit.py": FIT.replace("        for x, y", "        loader.sampler.set_epoch(epoch)\n        for x, y"),
        "fit.py ": "def fit(model, opt, loader, epochs):\n    for x, y in loader:\n        model(x).sum().backward()\n",
        "run.py": RUN.replace("loader = make_loader(ds)\n    fit(model, opt, loader, epochs)", "val_loader = make_loader(ds)\n    fit(model, opt, val_loader, epochs)"),
    }
    originals = {"fit.py": FIT, "run.py": RUN}
    for name, text in variants.items():
        name = name.strip()
        _rewrite(root / name, text)
        assert _findings(root, ".") == [], name
        _rewrite(root / name, originals[name])
