"""A name that only ``from project_module import *`` binds is what that module imports
(``torch`` from ``utils.py``'s ``import torch``): rules match the API through it, as through
any import (issue 23: PyTorch-RL and BasicLFSR get ``torch`` this way, and no rule saw their
``torch.cuda.empty_cache()`` calls)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from pytorch_perflint.cli import main

_LOOP = (
    "device = torch.device('cuda')\n"
    "def train(model, loader, optimizer):\n"
    "    for x, y in loader:\n"
    "        model(x.to(device)).sum().backward()\n"
    "        optimizer.step()\n"
    "        torch.cuda.empty_cache()\n"
)


def _findings(root: Path, code: str = "TPF206"):
    old = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "--select", code, "--output-format", "json", "."], catch_exceptions=False)
    finally:
        os.chdir(old)
    return sorted((Path(d["filename"]).name, d["location"]["row"]) for d in json.loads(result.stdout))


def _project(tmp_path: Path, files) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_torch_from_a_star_import_of_a_project_module_is_torch(tmp_path):
    root = _project(
        tmp_path,
        {
            "utils/__init__.py": "from .common import *\n",
            "utils/common.py": "import os\nimport torch\n",
            "train.py": "from utils import *\n" + _LOOP,
        },
    )
    assert _findings(root) == [("train.py", 7)]


def test_names_a_star_import_cannot_give_stay_unknown(tmp_path):
    root = _project(
        tmp_path,
        {
            "helpers.py": "torch = None\n",  # not the torch module
            "exported.py": "import torch\n__all__ = ['helper']\ndef helper():\n    pass\n",  # torch not exported
            "a.py": "from helpers import *\n" + _LOOP,
            "b.py": "from exported import *\n" + _LOOP,
            "c.py": "from somelib import *\n" + _LOOP,  # an external module may bind anything
            "d.py": "from helpers_torch import *\ntorch = make_fake()\n" + _LOOP,  # bound here
            "helpers_torch.py": "import torch\n",
        },
    )
    assert _findings(root) == []


# A loss module whose ``torch`` comes from ``from utils import *`` (the SSD tutorial's
# ``model.py``): the value engine reads its factories as torch's too, so TPF402 sees the
# host tensor a ``.to(device)`` moves.
_LOSS = (
    "from torch import nn\n"
    "class MultiBoxLoss(nn.Module):\n"
    "    def forward(self, boxes, n):\n"
    "        true_locs = torch.zeros((n, 4), dtype=torch.float).to(device)\n"
    "        for i in range(n):\n"
    "            index = torch.LongTensor(range(n)).to(device)\n"
    "        return true_locs\n"
)
_UTILS = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"


def test_tensor_factories_through_a_star_import_are_torchs(tmp_path):
    root = _project(tmp_path, {"utils.py": _UTILS, "model.py": "from utils import *\n" + _LOSS})
    assert _findings(root, "TPF402") == [("model.py", 5), ("model.py", 7)]


def test_factories_a_star_import_cannot_give_stay_unknown(tmp_path):
    shadowed = _LOSS.replace("    def forward(self, boxes, n):\n", "    def forward(self, boxes, n, torch):\n")
    root = _project(
        tmp_path,
        {
            "utils.py": _UTILS,
            "fake.py": "torch = None\ndevice = 'cuda'\n",  # not the torch module
            "a.py": "from fake import *\n" + _LOSS,
            "b.py": "from utils import *\n" + shadowed,  # a parameter named torch
            "c.py": "from somelib import *\n" + _LOSS,  # an external module may bind anything
        },
    )
    assert _findings(root, "TPF402") == []
