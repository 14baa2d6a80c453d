"""A function's own imports, functions defined inside the caller's function, and ``if`` arms
whose test the engine decides (``project/local_values.py``), on scratch projects with the
look-alikes that must stay silent (TPF403: a model chosen by ``args.arch``)."""

from __future__ import annotations

import pytest

from test_cache_project import _findings
from test_module_values import _project

WIDE = "import torch.nn as nn\n\n\nclass WideResNet(nn.Module):\n    def __init__(self, depth):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 16, 3)\n\n    def forward(self, x):\n        return self.conv(x)\n\n\ndef build_wideresnet(depth):\n    return WideResNet(depth)\n"
MLP = "import torch.nn as nn\n\n\ndef build_mlp(depth):\n    return nn.Linear(3, 3)\n"
TRAIN = """import argparse
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--arch', default='wideresnet', type=str)
    args = parser.parse_args()

    def create_model(args):
        if args.arch == 'wideresnet':
            import models.wideresnet as models
            net = models.build_wideresnet(depth=28)
        elif args.arch == 'mlp':
            import models.mlp as models
            net = models.build_mlp(depth=1)
        return net

    device = torch.device('cuda')
    model = create_model(args)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x.to(device)).sum().backward()
        optimizer.step()


if __name__ == '__main__':
    main()
"""
# FixMatch's `models/resnext.py` does not parse: an arm the default does not take may be unknown.
FILES = {"models/__init__.py": "", "models/wideresnet.py": WIDE, "models/mlp.py": MLP, "train.py": TRAIN}
FOUND = [("train.py", 20, "TPF403")]  # `model = create_model(args)` in `main`


def _check(tmp_path, *changes, files=FILES):
    files = dict(files)
    for old, new in changes:
        assert old in files["train.py"], old
        files["train.py"] = files["train.py"].replace(old, new)
    return _findings(_project(tmp_path, files, "TPF403"), ".")


def test_a_nested_factory_whose_command_line_default_takes_the_conv_arm(tmp_path):
    # `create_model(args)` is read at its call in `main`: `args.arch` is the default
    # 'wideresnet', so the `mlp` arm is not taken; its local import gives the module.
    assert _check(tmp_path) == FOUND


def test_the_arm_left_out_may_be_unknown(tmp_path):
    broken = {**FILES, "models/mlp.py": "def build_mlp(depth:\n"}
    assert _check(tmp_path, files=broken) == FOUND


@pytest.mark.parametrize(
    "changes",
    [
        [("default='wideresnet'", "default='mlp'")],  # the default takes the arm without convolutions
        [(", default='wideresnet'", "")],  # no default: either arm
        [("if args.arch == 'wideresnet':", "if args.arch.startswith('wide'):"), ("elif args.arch == 'mlp':", "else:")],  # undecided
        [("    args = parser.parse_args()\n", "    args = parser.parse_args()\n    args.arch = input()\n")],  # changed
    ],
)
def test_an_arm_that_may_be_taken_keeps_its_model(tmp_path, changes):
    assert _check(tmp_path, *changes) == []


def test_an_elif_the_default_does_not_name_is_not_taken(tmp_path):
    # `startswith` is not decided, but the `elif` needs `args.arch == 'mlp'`: not the default.
    assert _check(tmp_path, ("if args.arch == 'wideresnet':", "if args.arch.startswith('wide'):")) == FOUND


def test_a_not_equal_test_is_decided_too(tmp_path):
    assert _check(tmp_path, ("if args.arch == 'wideresnet':", "if args.arch != 'mlp':")) == FOUND


def test_a_module_level_function_reads_its_own_import(tmp_path):
    train = TRAIN.replace("    def create_model(args):\n", "    def unused(args):\n")
    lifted = (
        "import argparse\nimport torch\n\n\ndef create_model(args):\n"
        "    import models.wideresnet as wide\n    return wide.build_wideresnet(depth=28)\n\n\n"
        + train[train.index("def main"):]
    )
    files = {**FILES, "train.py": lifted}
    assert _check(tmp_path, files=files) == [("train.py", 25, "TPF403")]
    rebound = lifted.replace("    return wide.build_wideresnet", "    wide = other()\n    return wide.build_wideresnet")
    assert _check(tmp_path, files={**FILES, "train.py": rebound}) == []


def test_a_closure_reads_only_names_bound_once(tmp_path):
    # `make()` reads `net` of `main`, which `main` binds twice: not known.
    train = (
        "import torch\nimport torch.nn as nn\nfrom models.wideresnet import WideResNet\n\n\n"
        "def main():\n    net = WideResNet(28)\n\n    def make():\n        return net\n\n"
        "    net = nn.Linear(3, 3)\n    model = make()\n    model.cuda()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x in loader:\n"
        "        model(x.cuda()).sum().backward()\n        optimizer.step()\n\n\nmain()\n"
    )
    assert _check(tmp_path, files={**FILES, "train.py": train}) == []
    once = train.replace("    net = nn.Linear(3, 3)\n", "")
    assert _check(tmp_path, files={**FILES, "train.py": once}) == [("train.py", 12, "TPF403")]
