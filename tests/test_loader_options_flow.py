"""Loader options in a conditional ``**`` dict (``{...} if cuda else {}``) read on the
accelerator path (``project/loader_options.py``), and their loaders handed to a project
trainer class that walks them from ``self`` attributes: TPF104 reports the blocking copies.
Look-alikes: a test that may mean the CPU (``no_cuda``), one that is not about the
accelerator, a dict changed in place after it is built, workers from argparse."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Set, Tuple

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings

from project_tree import write_project


def _findings(root: Path) -> Dict[str, Set[Tuple[str, int]]]:
    settings = load_settings([root])
    results, _ = runner.run(sorted(root.rglob("*.py")), settings, jobs=1)
    found: Dict[str, Set[Tuple[str, int]]] = {}
    for result in results:
        assert not result.errors, result.errors
        for d in result.diagnostics:
            found.setdefault(d.code, set()).add((Path(d.path).resolve().relative_to(root.resolve()).as_posix(), d.location.row))
    return found


TRAINER = '''
    import torch


    class Fitter:
        def __init__(self, use_gpu, net, opt, fit_loader, check_loader):
            self.use_gpu = use_gpu
            self.net = net
            self.opt = opt
            self.fit_loader = fit_loader
            self.check_loader = check_loader

        def check(self):
            for image, mask in self.check_loader:
                if self.use_gpu:
                    image, mask = image.cuda(), mask.cuda()
                self.net(image)

        def fit_epoch(self):
            for image, mask in self.fit_loader:
                if self.use_gpu:
                    image, mask = image.cuda(), mask.cuda()
                loss = self.net(image).sum()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()

        def fit(self, epochs):
            for epoch in range(epochs):
                self.fit_epoch()
                self.check()
'''

SCRIPT = '''
    import argparse

    import torch
    from torch.utils.data import DataLoader

    from segment.fitting import Fitter

    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)


    def run(net, train_set, valid_set):
        args = parser.parse_args()
        gpu = torch.cuda.is_available()
        extra = {KWARGS}
        fit_loader = DataLoader(train_set, batch_size=2, shuffle=True, **extra)
        check_loader = DataLoader(valid_set, batch_size=2, **extra)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        Fitter(gpu, net, opt, fit_loader, check_loader).fit(10)
'''


def _project(kwargs: str) -> Dict[str, str]:
    return {
        "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF101", "TPF104"]\n',
        "segment/__init__.py": "",
        "segment/fitting.py": TRAINER,
        "scripts/fit.py": SCRIPT.replace("{KWARGS}", kwargs),
    }


COPIES = {("segment/fitting.py", 15), ("segment/fitting.py", 21)}


def test_a_conditional_dict_is_read_on_the_accelerator_path(tmp_path):
    root = write_project(tmp_path / "a", _project("{'num_workers': 4, 'pin_memory': True} if gpu else {}"))
    found = _findings(root)
    assert found.get("TPF104") == COPIES
    assert "TPF101" not in found  # four workers on the accelerator path


def test_a_negated_accelerator_test_picks_the_other_arm(tmp_path):
    root = write_project(tmp_path / "b", _project("{} if not gpu else {'pin_memory': True, 'num_workers': 2}"))
    assert _findings(root).get("TPF104") == COPIES


def test_look_alikes_stay_unknown(tmp_path):
    lookalikes = (
        "{} if args.no_cuda else {'pin_memory': True, 'num_workers': 2}",  # may be the CPU arm
        "{'pin_memory': True, 'num_workers': 2} if args.workers else {}",  # not about the accelerator
    )
    for number, kwargs in enumerate(lookalikes):
        found = _findings(write_project(tmp_path / f"l{number}", _project(kwargs)))
        assert "TPF104" not in found and "TPF101" not in found, (kwargs, found)
    # pinned on the accelerator path; its workers come from argparse: not known
    found = _findings(write_project(tmp_path / "argv", _project("{'pin_memory': True, 'num_workers': args.workers} if gpu else {}")))
    assert found.get("TPF104") == COPIES and "TPF101" not in found
    # pinned, but the dict is changed in place afterwards: not known
    changed = _project("{'pin_memory': True, 'num_workers': 2} if gpu else {}")
    changed["scripts/fit.py"] = changed["scripts/fit.py"].replace(
        "        fit_loader = DataLoader(", "        extra['pin_memory'] = args.workers > 0\n        fit_loader = DataLoader(", 1
    )
    found = _findings(write_project(tmp_path / "changed", changed))
    assert "TPF104" not in found, found
