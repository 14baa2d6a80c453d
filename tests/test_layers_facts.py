"""The module-structure facts: which layer feeds which, and which models are convolutional."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import libcst as cst

from pytorch_perflint.context import FileContext
from pytorch_perflint.file_values import FileValues
from pytorch_perflint.facts.layers.trained_models import model_builds
from pytorch_perflint.facts.layers.module_facts import module_facts
from pytorch_perflint.testing import settings_with


def _context(source: str) -> FileContext:
    return FileContext(Path("example.py"), source, cst.parse_module(source), settings_with({}))


def _feeds(source: str) -> List[Tuple[str, str, str]]:
    context = _context(source)
    facts = context.fact(module_facts)
    short = lambda name: name.rsplit(".", 1)[-1]  # noqa: E731
    return [(short(f.source.qualname), short(f.target.qualname), f.how) for f in facts.feeds]


def test_sequential_arguments_and_star_lists() -> None:
    source = (
        "import torch.nn as nn\n"
        "def f(c):\n"
        "    layers = [nn.Conv2d(3, c, 3)]\n"
        "    layers.append(nn.BatchNorm2d(c))\n"
        "    layers += [nn.ReLU(), nn.Linear(c, c), nn.BatchNorm1d(c)]\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert _feeds(source) == [
        ("Conv2d", "BatchNorm2d", "sequential"),
        ("BatchNorm2d", "ReLU", "sequential"),
        ("ReLU", "Linear", "sequential"),
        ("Linear", "BatchNorm1d", "sequential"),
    ]


def test_conditional_append_breaks_adjacency() -> None:
    source = (
        "from torch import nn\n"
        "def f(c, bn):\n"
        "    layers = [nn.Conv2d(3, c, 3)]\n"
        "    if bn:\n"
        "        layers.append(nn.BatchNorm2d(c))\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert _feeds(source) == []


def test_list_changed_otherwise_is_not_trusted() -> None:
    source = (
        "from torch import nn\n"
        "def f(c):\n"
        "    layers = [nn.Conv2d(3, c, 3), nn.BatchNorm2d(c)]\n"
        "    layers.reverse()\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert _feeds(source) == []


def test_forward_flow_through_attributes() -> None:
    source = (
        "from torch import nn\n"
        "class B(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n"
        "        self.bn = nn.BatchNorm2d(8)\n"
        "        self.act = nn.ReLU()\n"
        "    def forward(self, x):\n"
        "        x = self.conv(x)\n"
        "        x = self.bn(x)\n"
        "        return self.act(x)\n"
    )
    assert _feeds(source) == [("Conv2d", "BatchNorm2d", "forward"), ("BatchNorm2d", "ReLU", "forward")]


def test_attribute_assigned_twice_is_unknown() -> None:
    source = (
        "from torch import nn\n"
        "class B(nn.Module):\n"
        "    def __init__(self, bn):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n"
        "        self.bn = nn.BatchNorm2d(8) if bn else nn.Identity()\n"
        "    def forward(self, x):\n"
        "        return self.bn(self.conv(x))\n"
    )
    context = _context(source)
    facts = context.fact(module_facts)
    assert [a for a, _ in facts.classes[0].attributes] == ["conv"]
    assert facts.feeds == ()


def test_conv_model_builds() -> None:
    source = (
        "import torch\n"
        "import torchvision\n"
        "import timm\n"
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.c = nn.Conv2d(1, 8, 3)\n"
        "class Wrapper(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.net = Net()\n"
        "class MLP(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n"
        "a = Wrapper().cuda()\n"
        "b = torchvision.models.resnet18()\n"
        "c = timm.create_model('convnext_tiny')\n"
        "d = timm.create_model('vit_base_patch16_224')\n"
        "e = MLP().cuda()\n"
        "f = nn.DataParallel(Net())\n"
        "g = build(cfg)\n"
    )
    context = FileContext(Path("example.py"), source, cst.parse_module(source), settings_with({}), values=lambda c: FileValues(c, source))
    wanted = ("self.c", "self.net", "self.fc", "a", "b", "c", "d", "e", "f", "g")
    targets = [(b.target, b.inside_model) for b in model_builds(context, wanted) if b.conv]
    assert targets == [("self.c", True), ("self.net", True), ("a", False), ("b", False), ("c", False), ("f", False)]


def test_a_list_without_its_last_item_keeps_its_inner_feeds() -> None:
    """RepDistiller's ``make_layers``: ``layers = layers[:-1]`` before ``Sequential(*layers)``."""
    source = (
        "import torch.nn as nn\n"
        "def make(cfg):\n"
        "    layers = []\n"
        "    for v in cfg:\n"
        "        conv2d = nn.Conv2d(3, v, 3)\n"
        "        layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU()]\n"
        "    layers = layers[:-1]\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert ("Conv2d", "BatchNorm2d", "sequential") in _feeds(source)
    # The BatchNorm a statement adds last may be the item dropped: not a feed.
    dropped = source.replace("nn.BatchNorm2d(v), nn.ReLU()]", "nn.BatchNorm2d(v)]")
    assert _feeds(dropped) == []
    # Another slice is not known.
    assert _feeds(source.replace("layers[:-1]", "layers[1:]")) == []


def test_an_attribute_bound_in_each_arm_of_an_if_chain() -> None:
    source = (
        "import torch.nn as nn\n"
        "class ConvReg(nn.Module):\n"
        "    def __init__(self, a, b):\n"
        "        super().__init__()\n"
        "        if a == b:\n            self.conv = nn.Conv2d(8, 16, 1)\n"
        "        elif a > b:\n            self.conv = nn.ConvTranspose2d(8, 16, 4)\n"
        "        else:\n            self.conv = nn.Conv2d(8, 16, 3)\n"
        "        self.bn = nn.BatchNorm2d(16)\n"
        "    def forward(self, x):\n"
        "        return self.bn(self.conv(x))\n"
    )
    assert sorted(_feeds(source)) == [
        ("Conv2d", "BatchNorm2d", "forward"),
        ("Conv2d", "BatchNorm2d", "forward"),
        ("ConvTranspose2d", "BatchNorm2d", "forward"),
    ]
    # Bound twice in a row (not exclusive), or the norm differs by branch: not known.
    twice = source.replace("        elif a > b:\n", "        self.conv = nn.Conv2d(8, 16, 5)\n        if a > b:\n")
    assert _feeds(twice) == []
    norms = source.replace("        self.bn = nn.BatchNorm2d(16)\n", "").replace(
        "            self.conv = nn.Conv2d(8, 16, 1)\n", "            self.conv = nn.Conv2d(8, 16, 1)\n            self.bn = nn.BatchNorm2d(16)\n"
    ).replace("        else:\n            self.conv = nn.Conv2d(8, 16, 3)\n", "        else:\n            self.conv = nn.Conv2d(8, 16, 3)\n            self.bn = nn.GroupNorm(2, 16)\n")
    assert all(target != "GroupNorm" for _, target, _ in _feeds(norms))
    assert _feeds(norms) == []


# -- a list built with `+=` in a loop, its conv bound to a name rebound in every arm --------

ALLCONV = (
    "import torch.nn as nn\n"
    "def make_layers(cfg):\n"
    "    layers = []\n"
    "    in_channels = 3\n"
    "    for v in cfg:\n"
    "        if v == 'M':\n"
    "            layers += [nn.MaxPool2d(2)]\n"
    "        elif v == 'N':\n"
    "            conv2d = nn.Conv2d(in_channels, in_channels, kernel_size=1)\n"
    "            layers += [conv2d, nn.BatchNorm2d(in_channels), nn.ReLU()]\n"
    "        elif v == 'E':\n"
    "            conv2d = nn.Conv2d(in_channels, in_channels, kernel_size=1, padding=0)\n"
    "            layers.extend([conv2d, nn.BatchNorm2d(in_channels)])\n"
    "        else:\n"
    "            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)\n"
    "            layers = layers + [conv2d, nn.BatchNorm2d(v), nn.ReLU()]\n"
    "            in_channels = v\n"
    "    return nn.Sequential(*layers)\n"
)


def _conv_feeds(source: str) -> List[int]:
    """The lines of the convolutions that feed a BatchNorm."""
    context = _context(source)
    facts = context.fact(module_facts)
    lines = source.splitlines()
    return [
        next(i for i, text in enumerate(lines, 1) if context.module.code_for_node(f.source.call) in text)
        for f in facts.feeds
        if f.source.qualname.endswith("Conv2d") and f.target.qualname.endswith("BatchNorm2d")
    ]


def test_a_conv_bound_just_before_the_list_display_that_adds_it_feeds_the_next_item() -> None:
    # Each arm binds `conv2d` and adds it with a BatchNorm in one display (`+=`, `extend`,
    # `layers = layers + [...]`): adjacent in the same iteration, whatever the config.
    assert sorted(_conv_feeds(ALLCONV)) == [9, 12, 15]


def test_a_conv_object_read_anywhere_else_is_not_followed() -> None:
    shared = ALLCONV.replace("            in_channels = v\n", "            in_channels = v\n            last = conv2d\n")
    assert _conv_feeds(shared) == []
    twice = ALLCONV.replace("[conv2d, nn.BatchNorm2d(v), nn.ReLU()]", "[conv2d, nn.BatchNorm2d(v), conv2d]")
    assert _conv_feeds(twice) == []
    used_between = ALLCONV.replace(
        "            layers += [conv2d, nn.BatchNorm2d(in_channels), nn.ReLU()]\n",
        "            conv2d.weight.data.zero_()\n            layers += [conv2d, nn.BatchNorm2d(in_channels), nn.ReLU()]\n",
    )
    assert 9 not in _conv_feeds(used_between)
    bound_outside = (
        "import torch.nn as nn\n"
        "def f(cfg):\n"
        "    layers = []\n"
        "    conv = nn.Conv2d(3, 8, 3)\n"
        "    conv = nn.Conv2d(3, 8, 3)\n"
        "    for v in cfg:\n"
        "        layers += [conv, nn.BatchNorm2d(8)]\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert _conv_feeds(bound_outside) == []


def test_items_added_in_different_iterations_are_not_adjacent() -> None:
    # A conv added in one pass and a BatchNorm in another: their order depends on `cfg`.
    source = (
        "import torch.nn as nn\n"
        "def f(cfg):\n"
        "    layers = []\n"
        "    for v in cfg:\n"
        "        if v == 'C':\n"
        "            conv = nn.Conv2d(3, 3, 3)\n"
        "            layers += [conv]\n"
        "        else:\n"
        "            conv = nn.BatchNorm2d(3)\n"
        "            layers += [conv]\n"
        "    return nn.Sequential(*layers)\n"
    )
    assert _feeds(source) == []
