"""TPF502, TPF602 and TPF603: findings and fixes that depend on context and `target-torch-version`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_perflint.engine import lint_source
from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import lint_example, settings_with

_ADAM = "import torch\nmodel = Net().cuda()\nopt = torch.optim.Adam(model.parameters())\n"


def _messages(code: str, source: str, version: str):
    rule = rule_by_code(code)
    result = lint_source(source, Path("train.py"), settings_with({"target-torch-version": version, "preview": True}), rules=[rule])
    assert not result.errors, result.errors
    return [d.message for d in result.diagnostics if d.code == code]


def test_tpf602_says_foreach_is_already_the_default_and_asks_for_fused():
    """The advice is about `fused=True`: `foreach` has been the CUDA default since 2.0."""
    (message,) = _messages("TPF602", _ADAM, "2.13")
    assert "`fused=True`" in message and "default `foreach`" in message


def test_tpf602_before_2_0_names_the_for_loop_default():
    (message,) = _messages("TPF602", _ADAM, "1.13")
    assert "foreach" not in message and "loop over the parameters" in message


@pytest.mark.parametrize(
    ("optimizer", "first"), [("Adam", "1.13"), ("AdamW", "2.0"), ("SGD", "2.3")]
)
def test_tpf602_reports_only_where_the_target_has_the_fused_optimizer(optimizer, first):
    # momentum: plain SGD (no momentum, no weight decay) is left alone whatever the version
    source = _ADAM.replace("Adam(", f"{optimizer}(").replace("parameters())", "parameters(), lr=0.1, momentum=0.9)")
    major, minor = map(int, first.split("."))
    before = f"{major}.{minor - 1}" if minor else "1.13"
    assert _messages("TPF602", source, first)
    if before != first:
        assert not _messages("TPF602", source, before)


def test_the_bench_flag_fence_survives_the_new_tf32_api():
    """TPF603's fix for torch >= 2.9 sets `torch.backends.cuda.matmul.fp32_precision`; from
    then on the legacy getters raise, and the harness must still fence the flags."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("torch < 2.9 has no fp32_precision")
    from pytorch_perflint.bench.loading import GlobalFlags

    defaults = GlobalFlags.capture()
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        fixed = GlobalFlags.capture()
        assert fixed.matmul_fp32_precision == "tf32"
        defaults.apply()
        assert torch.get_float32_matmul_precision() == defaults.matmul_precision
        fixed.apply()
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    finally:
        defaults.apply()
    assert torch.get_float32_matmul_precision() == defaults.matmul_precision


_TRAIN_SCRIPT = """
import torch
import setup_utils
from model import Net

model = Net().cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
"""
_MODEL = "import torch.nn as nn\n\n\nclass Net(nn.Linear):\n    pass\n"


@pytest.mark.parametrize(
    ("helper", "expected"),
    [
        ("def seed(s):\n    pass\n", [5]),
        ("import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = True\n", []),
        ("import torch\n\n\ndef fast():\n    torch.set_float32_matmul_precision('high')\n", []),
    ],
    ids=["nothing-set", "tf32-in-an-imported-module", "precision-in-a-helper"],
)
def test_tpf603_reads_the_settings_of_the_modules_the_script_imports(tmp_path, helper, expected):
    from project_tree import index_of

    index = index_of(tmp_path, {"train.py": _TRAIN_SCRIPT, "setup_utils.py": helper, "model.py": _MODEL})
    source = (tmp_path / "train.py").read_text(encoding="utf-8")
    settings = settings_with({"preview": True})
    result = lint_source(source, tmp_path / "train.py", settings, rules=[rule_by_code("TPF603")], project=index)
    assert not result.errors, result.errors
    assert [d.location.row for d in result.diagnostics] == expected


def test_tpf603_is_silent_for_a_convolutional_model_imported_with_a_star(tmp_path):
    """kuangliu/pytorch-cifar: `from models import *`, `net = SimpleDLA()`; cuDNN
    convolutions already use TF32, so TF32 matmuls would change next to nothing."""
    from project_tree import index_of

    files = {
        "main.py": _TRAIN_SCRIPT.replace("import setup_utils\nfrom model import Net", "from models import *"),
        "models/__init__.py": "from .dla import *\n",
        "models/dla.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n",
    }
    index = index_of(tmp_path, files)
    source = (tmp_path / "main.py").read_text(encoding="utf-8")
    result = lint_source(source, tmp_path / "main.py", settings_with({"preview": True}), rules=[rule_by_code("TPF603")], project=index)
    assert not result.errors and not result.diagnostics
    linear = dict(files, **{"models/dla.py": files["models/dla.py"].replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)")})
    index = index_of(tmp_path / "linear", linear)
    result = lint_source(source, tmp_path / "linear" / "main.py", settings_with({"preview": True}), rules=[rule_by_code("TPF603")], project=index)
    assert [d.location.row for d in result.diagnostics] == [4]


def test_tpf502_reports_only_the_backward_of_the_accumulating_branch():
    """Swin's SimMIM: `if config.ACCUM > 1:` accumulates (reported), its `else:` steps on
    every iteration (not reported)."""
    rule = rule_by_code("TPF502")
    case = next(c for c in rule.INVALID if "config.ACCUM_STEPS" in c.code)
    assert lint_example(rule, case.code) == [(7, "TPF502")]


_ENGINE = """
def train_one_epoch(model, loader, optimizer, loss_scaler, update_freq):
    for step, (x, y) in enumerate(loader):
        loss = model(x).sum() / update_freq
        loss_scaler(loss, optimizer, parameters=model.parameters(),
                    update_grad=(step + 1) % update_freq == 0)
"""
_MAIN = """
import torch
from engine import train_one_epoch


def main(args, net, loader, optimizer, loss_scaler):
    model = net.cuda()
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, loss_scaler, args.update_freq)
"""


@pytest.mark.parametrize(
    ("main", "expected"),
    [(_MAIN, [4]), (_MAIN.replace("model = torch.nn.parallel.DistributedDataParallel(", "other = torch.nn.parallel.DistributedDataParallel("), [])],
    ids=["ddp-passed", "plain-model-passed"],
)
def test_tpf502_follows_a_ddp_model_to_the_training_function_of_another_module(tmp_path, main, expected):
    """ConvNeXt, DeiT, MAE: main.py wraps the model in DDP, engine.py accumulates."""
    from project_tree import index_of

    index = index_of(tmp_path, {"main.py": main, "engine.py": _ENGINE})
    source = (tmp_path / "engine.py").read_text(encoding="utf-8")
    result = lint_source(source, tmp_path / "engine.py", settings_with({"preview": True}), rules=[rule_by_code("TPF502")], project=index)
    assert not result.errors, result.errors
    assert [d.location.row for d in result.diagnostics] == expected
