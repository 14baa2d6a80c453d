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


# -- TPF301: biases decided by project helpers and parameter defaults (issue 13) ------------

LAYERS = (
    "import torch.nn as nn\n\n\n"
    "def conv3x3(cin, cout, stride=1, bias=True):\n"
    "    return nn.Conv2d(cin, cout, 3, stride, 1, bias=bias)\n"
)
BLOCK = (
    "import torch.nn as nn\nfrom layers import conv3x3\n\n\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, c):\n"
    "        super().__init__()\n"
    "        self.conv = conv3x3(c, c)\n"
    "        self.bn = nn.BatchNorm2d(c)\n\n"
    "    def forward(self, x):\n"
    "        return self.bn(self.conv(x))\n"
)


def _layers_project(root: Path, files: dict) -> Path:
    (root / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF301", "TPF403"]\n')
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_a_helper_whose_default_turns_false_clears_the_cached_finding(tmp_path):
    root = _layers_project(tmp_path, {"layers.py": LAYERS, "block.py": BLOCK})
    assert _findings(root, ".") == [("block.py", 8, "TPF301")]
    _rewrite(root / "layers.py", LAYERS.replace("bias=True", "bias=False"))
    assert _findings(root, ".") == []
    _rewrite(root / "layers.py", LAYERS)
    assert _findings(root, "block.py") == [("block.py", 8, "TPF301")]


def test_a_helper_that_rebinds_its_bias_parameter_is_not_known(tmp_path):
    rebinding = LAYERS.replace("    return", "    bias = bias and stride == 1\n    return")
    assert _findings(_layers_project(tmp_path, {"layers.py": rebinding, "block.py": BLOCK}), ".") == []


PARAMETER = (
    "import torch.nn as nn\n\n\n"
    "class ConvBN(nn.Sequential):\n"
    "    def __init__(self, cin, cout, bias=True):\n"
    "        super().__init__(nn.Conv2d(cin, cout, 3, bias=bias), nn.BatchNorm2d(cout))\n"
)


def test_a_constructor_default_counts_until_a_caller_in_another_module_says_false(tmp_path):
    root = _layers_project(tmp_path, {"convbn.py": PARAMETER, "net.py": "from convbn import ConvBN\n\nstem = ConvBN(3, 8)\n"})
    assert _findings(root, ".") == [("convbn.py", 6, "TPF301")]
    _rewrite(root / "net.py", "from convbn import ConvBN\n\nstem = ConvBN(3, 8, bias=False)\n")
    assert _findings(root, ".") == []


def test_a_subclass_that_passes_false_to_the_constructor_keeps_it_silent(tmp_path):
    sub = "from convbn import ConvBN\n\n\nclass Plain(ConvBN):\n    def __init__(self, c):\n        super().__init__(c, c, bias=False)\n"
    assert _findings(_layers_project(tmp_path, {"convbn.py": PARAMETER, "plain.py": sub}), ".") == []


# -- TPF403: the architecture from a command-line default (issue 13) ------------------------

OPTS = (
    "import argparse\n\n\n"
    "def get_args():\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('-a', '--arch', default='resnet50')\n"
    "    return parser.parse_args()\n"
)
TRAIN_ARCH = (
    "import torch\nimport torchvision.models as models\nfrom opts import get_args\n\n"
    "args = get_args()\n"
    "model = models.__dict__[args.arch]().cuda()\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for x in loader:\n"
    "    model(x.cuda()).sum().backward()\n"
    "    opt.step()\n"
)


def test_an_arch_default_that_turns_into_a_transformer_clears_the_cached_finding(tmp_path):
    root = _layers_project(tmp_path, {"opts.py": OPTS, "train.py": TRAIN_ARCH})
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]
    _rewrite(root / "opts.py", OPTS.replace("resnet50", "vit_b_16"))
    assert _findings(root, ".") == []


def _each_silent(tmp_path: Path, projects) -> None:
    """Every project (a dict of files) gives no finding, each in a folder of its own."""
    for number, files in enumerate(projects):
        (tmp_path / str(number)).mkdir()
        assert _findings(_layers_project(tmp_path / str(number), files), ".") == [], files


def test_an_arch_the_script_may_change_is_not_known(tmp_path):
    after = "args = get_args()\n"
    changes = ("args.arch = cfg['arch']\n", "vars(args).update(cfg)\n", "setattr(args, key, value)\n")
    _each_silent(tmp_path, [{"opts.py": OPTS, "train.py": TRAIN_ARCH.replace(after, after + c)} for c in changes])


def test_arch_defaults_the_parser_does_not_settle_are_not_known(tmp_path):
    variants = (
        OPTS.replace("    return", "    parser.add_argument('--arch2', dest='arch', default='vgg16')\n    return"),
        OPTS.replace("    return", "    parser.set_defaults(arch='vit_b_16')\n    return"),
        OPTS.replace("    return", "    parser.add_argument(*extra_options)\n    return"),
        OPTS.replace("return parser.parse_args()", "return parser.parse_args(['--arch', 'vit_b_16'])"),
        OPTS.replace("return parser.parse_args()", "return vars(parser.parse_args())"),
    )
    _each_silent(tmp_path, [{"opts.py": opts, "train.py": TRAIN_ARCH} for opts in variants])


def test_the_argparse_summary_of_a_module():
    import ast

    from pytorch_perflint.project.argparse_values import argparse_defaults

    source = (
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('data')\n"
        "p.add_argument('-m', '--model-name', default='resnet18')\n"
        "p.add_argument('--backbone', dest='net', default='vgg16')\n"
        "p.add_argument('-o', default='out/dir')\n"  # not a name: not kept
        "p.add_argument('--lr', type=float, default=0.1)\n"
        "g = p.add_argument_group('x')\n"
        "g.add_argument('--arch', default='resnet50')\n"
        "g.add_argument('--arch', default='vgg11')\n"
    )
    assert argparse_defaults(ast.parse(source), source) == (("arch", None), ("model_name", "resnet18"), ("net", "vgg16"))
    assert argparse_defaults(ast.parse("x = 1\n"), "x = 1\n") is None
    unknown = "p.add_argument(f'--{name}', default='resnet18')\n"
    assert argparse_defaults(ast.parse(unknown), unknown) == (("*", None),)


# -- TPF403: the setting made by every entry script that runs the module (issue 21, item 9) ----

TRAINER = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n"
    "    def forward(self, x):\n        return self.conv(x).mean()\n\n\n"
    "class Trainer:\n    def __init__(self):\n        self.model = Net().cuda()\n"
    "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n\n"
    "    def train(self, loader):\n        for x in loader:\n            self.model(x.cuda()).backward()\n            self.opt.step()\n"
)
TRAINER_BUILD = ("trainer.py", 16, "TPF403")
MAIN = (
    "import torch\n\nfrom {module} import Trainer\n\ntorch.backends.cudnn.benchmark = {value}\n\n\n"
    "def main():\n    trainer = Trainer()\n    trainer.train(loader)\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)


def _entry_project(root: Path, **files: str) -> Path:
    (root / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF403"]\n')
    (root / "trainer.py").write_text(TRAINER)
    for name, text in files.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_trainer_whose_only_entry_script_sets_benchmark_is_not_flagged(tmp_path):
    root = _entry_project(tmp_path, **{"main.py": MAIN.format(module="trainer", value="True")})
    assert _findings(root, ".") == []
    assert _findings(root, "trainer.py") == []  # a pre-commit run of the trainer alone


def test_the_entry_script_may_import_the_trainer_through_a_library_module(tmp_path):
    pipeline = "from trainer import Trainer\n\n\ndef build():\n    return Trainer()\n"
    cudnn = MAIN.format(module="pipeline", value="True").replace("import torch\n", "from torch.backends import cudnn\n", 1)
    cudnn = cudnn.replace("torch.backends.cudnn.benchmark", "cudnn.benchmark")
    root = _entry_project(tmp_path, **{"pipeline.py": pipeline, "main.py": cudnn, "tests__test_trainer.py": "from trainer import Trainer\n\nTrainer()\n"})
    assert _findings(root, ".") == []  # a test file that imports it is not an entry script


def test_a_trainer_is_still_flagged_without_an_entry_script_that_sets_benchmark(tmp_path):
    assert _findings(_entry_project(tmp_path), ".") == [TRAINER_BUILD]  # nothing imports it


def test_an_entry_script_that_sets_benchmark_false_does_not_silence_it(tmp_path):
    root = _entry_project(tmp_path, **{"main.py": MAIN.format(module="trainer", value="False")})
    assert _findings(root, ".") == [TRAINER_BUILD]


def test_every_entry_script_must_set_it(tmp_path):
    other = "from trainer import Trainer\n\nTrainer().train(loader)\n"
    root = _entry_project(tmp_path, **{"main.py": MAIN.format(module="trainer", value="True"), "finetune.py": other})
    assert _findings(root, ".") == [TRAINER_BUILD]


def test_a_trainer_that_is_a_script_itself_is_still_flagged(tmp_path):
    root = _entry_project(tmp_path, **{"main.py": MAIN.format(module="trainer", value="True")})
    _rewrite(root / "trainer.py", TRAINER + '\n\nif __name__ == "__main__":\n    Trainer().train(loader)\n')
    assert _findings(root, ".") == [TRAINER_BUILD]


def test_an_entry_script_that_stops_setting_it_brings_the_cached_finding_back(tmp_path):
    root = _entry_project(tmp_path, **{"main.py": MAIN.format(module="trainer", value="True")})
    assert _findings(root, ".") == []
    _rewrite(root / "main.py", MAIN.format(module="trainer", value="True").replace("torch.backends.cudnn.benchmark = True\n", ""))
    assert _findings(root, ".") == [TRAINER_BUILD]
