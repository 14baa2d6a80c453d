"""TPF403 with the model from another module: conv-ness read through the project index,
and a cached result that goes stale when that module loses its only convolution."""

from __future__ import annotations

from pathlib import Path

from test_cache_project import _findings, _rewrite  # noqa: E402

TRAIN = (
    "import torch\n"
    "from model import Net\n"
    "\n"
    "model = Net().cuda()\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for x in loader:\n"
    "    model(x.cuda()).sum().backward()\n"
    "    opt.step()\n"
)
BLOCKS = "import torch.nn as nn\n\n\ndef block(c):\n    return nn.Conv2d(c, c, 3)\n"
MODEL_CONV = (
    "import torch.nn as nn\nfrom blocks import block\n\n\n"
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = block(3)\n"
)
MODEL_MLP = (
    "import torch.nn as nn\n\n\n"
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = nn.Linear(3, 3)\n"
)


def _project(root: Path, model: str) -> Path:
    (root / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF403"]\n')
    (root / "train.py").write_text(TRAIN)
    (root / "blocks.py").write_text(BLOCKS)
    (root / "model.py").write_text(model)
    return root


def test_a_class_whose_convolution_comes_from_a_factory_two_modules_away(tmp_path):
    assert _findings(_project(tmp_path, MODEL_CONV), ".") == [("train.py", 4, "TPF403")]


def test_a_class_without_convolutions_stays_silent(tmp_path):
    assert _findings(_project(tmp_path, MODEL_MLP), ".") == []


def test_removing_the_convolution_from_the_imported_model_clears_the_cached_finding(tmp_path):
    root = _project(tmp_path, MODEL_CONV)
    assert _findings(root, ".") == [("train.py", 4, "TPF403")]
    _rewrite(root / "model.py", MODEL_MLP)
    assert _findings(root, ".") == []
    _rewrite(root / "model.py", MODEL_CONV)
    assert _findings(root, "train.py") == [("train.py", 4, "TPF403")]  # a pre-commit run of one file
