"""Models as values (issue 22): the engine's ``Module``/``Wrapper`` producers, asked by
TPF403, TPF501 and TPF203, on scratch multi-file projects (one mechanism each)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from test_cache_project import _findings, _rewrite  # noqa: E402

LOOP = (
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x in loader:\n"
    "        model(x.cuda()).sum().backward()\n"
    "        opt.step()\n"
)


def _project(root: Path, files: Dict[str, str], select: str = "TPF403") -> Path:
    (root / "pyproject.toml").write_text(f'[tool.pytorch-perflint]\nselect = ["{select}"]\n')
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# -- convolutions through helpers, tuple returns, constructor arguments, a subpackage -------

NN = (
    "import torch.nn as nn\n\n\n"
    "def conv_nd(dims, *args, **kwargs):\n"
    "    if dims == 1:\n        return nn.Conv1d(*args, **kwargs)\n"
    "    elif dims == 2:\n        return nn.Conv2d(*args, **kwargs)\n"
    "    return nn.Conv3d(*args, **kwargs)\n"
)
UNET = (
    "import torch.nn as nn\nfrom .nn import conv_nd\n\n\n"
    "class UNetModel(nn.Module):\n"
    "    def __init__(self, dims=2):\n        super().__init__()\n        self.inp = conv_nd(dims, 3, 8, 3)\n"
)
SCRIPT_UTIL = (
    "from .unet import UNetModel\n\n\n"
    "def create_model_and_diffusion(dims=2):\n"
    "    model = UNetModel(dims)\n    diffusion = object()\n    return model, diffusion\n"
)
TRAIN_UTIL = (
    "import torch\n\n\n"
    "class TrainLoop:\n"
    "    def __init__(self, model, data):\n"
    "        self.model = model\n"
    "        self.data = data\n"
    "        self.opt = torch.optim.Adam(self.model.parameters())\n\n"
    "    def run_loop(self):\n"
    "        for x in self.data:\n"
    "            self.model(x.cuda()).sum().backward()\n"
    "            self.opt.step()\n"
)
ENTRY = (
    "from cm.script_util import create_model_and_diffusion\nfrom cm.train_util import TrainLoop\n\n\n"
    "def main():\n"
    "    model, diffusion = create_model_and_diffusion()\n"
    "    model.cuda()\n"
    "    TrainLoop(model=model, data=loader).run_loop()\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)
PACKAGE = {
    "cm/__init__.py": "",
    "cm/nn.py": NN,
    "cm/unet.py": UNET,
    "cm/script_util.py": SCRIPT_UTIL,
    "cm/train_util.py": TRAIN_UTIL,
    "scripts/train.py": ENTRY,
}


def test_a_trainer_class_trains_the_conv_model_its_constructor_gets_from_a_tuple_factory(tmp_path):
    # RULES.md's anchor: the statement that builds the model, in the script that hands it
    # to the trainer; ``self.model = model`` in the trainer builds nothing.
    root = _project(tmp_path, PACKAGE)
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]
    assert _findings(root, "cm/train_util.py") == []  # the trainer module linted alone


def test_a_trainer_object_bound_to_a_name_then_run(tmp_path):
    entry = ENTRY.replace("    TrainLoop(model=model, data=loader).run_loop()\n", "    loop = TrainLoop(model, loader)\n    loop.run_loop()\n")
    root = _project(tmp_path, {**PACKAGE, "scripts/train.py": entry})
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]


def test_a_model_handed_to_an_object_that_does_not_train_it_stays_silent(tmp_path):
    evaluator = TRAIN_UTIL.replace("            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n", "            print(self.model(x.cuda()))\n")
    root = _project(tmp_path, {**PACKAGE, "cm/train_util.py": evaluator})
    assert _findings(root, ".") == []


def test_a_trainer_that_builds_its_own_model_is_reported_at_the_script_that_runs_it(tmp_path):
    # The only entry script makes the trainer and runs it: the finding (and its fix, the
    # setting inserted there) is the script's; the trainer's module is not reported too.
    builds = TRAIN_UTIL.replace("    def __init__(self, model, data):\n        self.model = model\n", "    def __init__(self, model, data):\n        self.model = UNetModel()\n").replace(
        "import torch\n", "import torch\nfrom .unet import UNetModel\n"
    )
    root = _project(tmp_path, {**PACKAGE, "cm/train_util.py": builds})
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]
    # A script that does not make the trainer leaves it to the trainer's module.
    other = 'from cm.train_util import TrainLoop\n\n\nif __name__ == "__main__":\n    print(TrainLoop)\n'
    root = _project(tmp_path, {**PACKAGE, "cm/train_util.py": builds, "scripts/other.py": other})
    assert ("train_util.py", 7, "TPF403") in _findings(root, ".")


def test_the_finding_follows_the_helper_in_another_module_of_the_package(tmp_path):
    root = _project(tmp_path, PACKAGE)
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]
    _rewrite(root / "cm" / "nn.py", NN.replace("nn.Conv", "nn.Linear").replace("Linear1d", "Linear").replace("Linear2d", "Linear").replace("Linear3d", "Linear"))
    assert _findings(root, ".") == []  # the cache: the answer read cm/nn.py


def test_an_entry_script_that_sets_benchmark_silences_the_trainer_module(tmp_path):
    entry = ENTRY.replace("def main():\n", "def main():\n    torch.backends.cudnn.benchmark = True\n").replace(
        "from cm.script_util", "import torch\nfrom cm.script_util"
    )
    root = _project(tmp_path, {**PACKAGE, "scripts/train.py": entry})
    assert _findings(root, ".") == []


def test_a_caller_passing_a_model_without_convolutions_keeps_it_silent(tmp_path):
    mlp = "import torch.nn as nn\n\n\ndef create_model_and_diffusion():\n    return nn.Linear(3, 3), object()\n"
    root = _project(tmp_path, {**PACKAGE, "cm/script_util.py": mlp})
    assert _findings(root, ".") == []


# -- factories chosen by name -------------------------------------------------------------

MODELS_PKG = {
    "models/__init__.py": "from .resnet import resnet18, resnet50\nfrom .vgg import vgg11\n",
    "models/resnet.py": (
        "import torch.nn as nn\n\n\nclass ResNet(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n\n"
        "def resnet18():\n    return ResNet()\n\n\ndef resnet50():\n    return ResNet()\n"
    ),
    "models/vgg.py": (
        "import torch.nn as nn\n\n\ndef vgg11():\n    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())\n"
    ),
}
BY_NAME = (
    "import argparse\nimport torch\nimport models\n\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--arch', default={default})\n"
    "args = parser.parse_args()\n\n\n"
    "def main():\n"
    "    model = {factory}.cuda()\n" + LOOP
)


def test_a_project_factory_chosen_by_an_argparse_default(tmp_path):
    root = _project(tmp_path, {**MODELS_PKG, "train.py": BY_NAME.format(default="'resnet18'", factory="models.__dict__[args.arch]()")})
    assert _findings(root, ".") == [("train.py", 11, "TPF403")]


def test_getattr_of_a_package_whose_every_factory_is_convolutional(tmp_path):
    root = _project(tmp_path, {**MODELS_PKG, "train.py": BY_NAME.format(default="None", factory="getattr(models, args.arch)()")})
    assert _findings(root, ".") == [("train.py", 11, "TPF403")]


def test_a_package_that_also_offers_a_model_without_convolutions_is_not_known(tmp_path):
    mixed = {**MODELS_PKG, "models/__init__.py": MODELS_PKG["models/__init__.py"] + "from .mlp import mlp\n"}
    mixed["models/mlp.py"] = "import torch.nn as nn\n\n\ndef mlp():\n    return nn.Linear(3, 3)\n"
    root = _project(tmp_path, {**mixed, "train.py": BY_NAME.format(default="None", factory="getattr(models, args.arch)()")})
    assert _findings(root, ".") == []


def test_get_model_with_if_elif_over_names(tmp_path):
    factory = (
        "from .resnet import ResNet\nfrom .vgg import vgg11\n\n\n"
        "def get_model(name):\n    if name == 'resnet':\n        return ResNet()\n"
        "    elif name == 'vgg':\n        return vgg11()\n    raise ValueError(name)\n"
    )
    files = {**MODELS_PKG, "models/factory.py": factory}
    files["train.py"] = BY_NAME.format(default="'resnet'", factory="get_model(args.arch)").replace(
        "import models\n", "import models\nfrom models.factory import get_model\n"
    )
    assert _findings(_project(tmp_path, files), ".") == [("train.py", 12, "TPF403")]


def test_a_gan_script_with_two_conv_models(tmp_path):
    nets = (
        "import torch.nn as nn\n\n\nclass G(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.up = nn.ConvTranspose2d(8, 3, 4)\n\n\n"
        "class D(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.down = nn.Conv2d(3, 8, 4)\n"
    )
    train = (
        "import torch\nfrom nets import G, D\n\n"
        "netG = G().cuda()\nnetD = D().cuda()\n"
        "optD = torch.optim.Adam(netD.parameters())\noptG = torch.optim.Adam(netG.parameters())\n"
        "for x in loader:\n    netD(x.cuda()).mean().backward()\n    optD.step()\n"
        "    netD(netG(z)).mean().backward()\n    optG.step()\n"
    )
    assert _findings(_project(tmp_path, {"nets.py": nets, "train.py": train}), ".") == [("train.py", 4, "TPF403")]


# -- TPF501: a project subclass of DataParallel, two levels down ----------------------------

def test_a_project_subclass_of_data_parallel_through_two_levels(tmp_path):
    files = {
        "lib/__init__.py": "",
        "lib/parallel.py": (
            "import torch.nn as nn\n\n\nclass DictGatherDataParallel(nn.DataParallel):\n    pass\n\n\n"
            "class UserScatteredDataParallel(DictGatherDataParallel):\n    pass\n"
        ),
        "train.py": "from lib.parallel import UserScatteredDataParallel\n\nnet = UserScatteredDataParallel(model)\nout = net(x)\n",
        "other.py": "class NotParallel:\n    pass\n\n\nw = NotParallel(model)  # DataParallel-free look-alike\n",
    }
    assert _findings(_project(tmp_path, files, "TPF501"), ".") == [("train.py", 3, "TPF501")]


# -- TPF203: a model of another framework is not a torch model ------------------------------

def test_an_mxnet_net_is_not_evaluated_with_autograd(tmp_path):
    gluon = (
        "import torch\nfrom mxnet import gluon\n\nnet = gluon.model_zoo.vision.resnet18_v1()\n\n\n"
        "def evaluate(loader):\n    for x in loader:\n        out = net(x)\n"
    )
    torch_net = gluon.replace("from mxnet import gluon", "import torchvision").replace(
        "gluon.model_zoo.vision.resnet18_v1()", "torchvision.models.resnet18()"
    )
    root = _project(tmp_path, {"mx_eval.py": gluon, "torch_eval.py": torch_net}, "TPF203")
    assert _findings(root, ".") == [("torch_eval.py", 8, "TPF203")]


def test_a_model_built_in_the_branches_of_a_module_level_if(tmp_path):
    train = (
        "import torch\nimport torchvision\n\n"
        "if arch == 'resnet18':\n    model = torchvision.models.resnet18().cuda()\n"
        "else:\n    model = torchvision.models.resnet50().cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"
    )
    assert _findings(_project(tmp_path, {"train.py": train}), ".") == [("train.py", 5, "TPF403")]


# -- TPF301: a conv bound to a name, its bias a parameter the engine reads -------------------

CONV_BN = (
    "import torch.nn as nn\n\n\n"
    "def conv_bn(cin, cout, bias=True):\n"
    "    conv_mod = nn.Conv2d(cin, cout, 3, bias=bias)\n"
    "    return nn.Sequential(conv_mod, nn.BatchNorm2d(cout))\n"
)


def test_a_named_conv_whose_bias_parameter_every_caller_leaves_true(tmp_path):
    files = {"blocks.py": CONV_BN, "net.py": "from blocks import conv_bn\n\nstem = conv_bn(3, 8)\nbody = conv_bn(8, 8, True)\n"}
    root = _project(tmp_path, files, "TPF301")
    assert _findings(root, ".") == [("blocks.py", 5, "TPF301")]
    _rewrite(root / "net.py", "from blocks import conv_bn\n\nstem = conv_bn(3, 8)\nbody = conv_bn(8, 8, bias=False)\n")
    assert _findings(root, ".") == []  # one caller says False: the parameter is not known true


def test_a_class_whose_convolutions_come_from_a_block_class_passed_to_its_own_method(tmp_path):
    blocks = (
        "import torch.nn as nn\n\n\nclass Block(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(c, c, 3)\n"
    )
    net = (
        "import torch.nn as nn\nfrom blocks import Block\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.body = self._make_layer(Block, 2)\n"
        "        self.fc = nn.Linear(8, 2)\n\n"
        "    def _make_layer(self, block, n):\n        layers = []\n        for _ in range(n):\n"
        "            layers.append(block(8))\n        return nn.Sequential(*layers)\n"
    )
    train = "import torch\nfrom net import Net\n\n\ndef main():\n    model = Net().cuda()\n" + LOOP
    root = _project(tmp_path, {"blocks.py": blocks, "net.py": net, "train.py": train})
    assert _findings(root, ".") == [("train.py", 6, "TPF403")]
    _rewrite(root / "blocks.py", blocks.replace("nn.Conv2d(c, c, 3)", "nn.Linear(c, c)"))
    assert _findings(root, ".") == []


def test_a_project_class_of_another_framework_is_not_a_torch_model(tmp_path):
    net = "from mxnet import gluon\n\n\nclass Net(gluon.nn.HybridBlock):\n    pass\n"
    evaluate = (
        "import torch\nfrom net import Net\n\n\n"
        "def evaluate(loader):\n    model = Net()\n    for x in loader:\n        out = model(x)\n"
    )
    root = _project(tmp_path, {"net.py": net, "evaluate.py": evaluate}, "TPF203")
    assert _findings(root, ".") == []
    _rewrite(root / "net.py", net.replace("from mxnet import gluon", "import torch.nn as nn").replace("gluon.nn.HybridBlock", "nn.Module"))
    assert _findings(root, ".") == [("evaluate.py", 7, "TPF203")]


# -- a factory table chosen by name: `models[name](**kwargs)` (issue 22, ResNeSt's gluon) ----

GLUON_ZOO = (
    "from mxnet.gluon import HybridBlock\n\n\n"
    "class ResNet(HybridBlock):\n    pass\n\n\n"
    "def resnet50(**kwargs):\n    return ResNet(**kwargs)\n\n\n"
    "def resnet101(**kwargs):\n    model = ResNet(**kwargs)\n    return model\n\n\n"
    "models = {'resnet50': resnet50, 'resnet101': resnet101}\n\n\n"
    "def get_model(name, **kwargs):\n    name = name.lower()\n    return models[name](**kwargs)\n"
)
TABLE_EVAL = (
    "import torch\nfrom zoo import get_model\n\nnet = get_model(arch)\n\n\n"
    "def train():\n    def evaluate(epoch):\n        for batch in val_data:\n            output = net(batch)\n"
    "    evaluate(0)\n"
)


def test_a_net_of_another_framework_from_a_factory_table_is_not_a_torch_model(tmp_path):
    root = _project(tmp_path, {"zoo.py": GLUON_ZOO, "evaluate.py": TABLE_EVAL}, "TPF203")
    assert _findings(root, ".") == []
    # Look-alikes: a torch table is a torch model; a table changed in place, or one whose
    # entries disagree (a torch and an MXNet net), is not known, and the loop is reported.
    torch_zoo = GLUON_ZOO.replace("from mxnet.gluon import HybridBlock", "from torch.nn import Module as HybridBlock")
    _rewrite(root / "zoo.py", torch_zoo)
    assert _findings(root, ".") == [("evaluate.py", 9, "TPF203")]
    _rewrite(root / "zoo.py", GLUON_ZOO + "models['extra'] = make_extra\n")
    assert _findings(root, ".") == [("evaluate.py", 9, "TPF203")]
    mixed = GLUON_ZOO.replace("def resnet101(**kwargs):\n    model = ResNet(**kwargs)", "def resnet101(**kwargs):\n    model = torch.nn.Linear(2, 2)")
    _rewrite(root / "zoo.py", "import torch\n" + mixed)
    assert _findings(root, ".") == [("evaluate.py", 9, "TPF203")]


# -- a trainer object (no nn.Module) holding conv models: the script that makes and runs it
# answers (its build is the anchor, the fix goes there), the trainer's module is not reported
# again; a trainer that may set benchmark itself keeps both silent ---------------------------

GAN_TRAINER = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "class Generator(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 3, 3)\n\n"
    "    def forward(self, x):\n        return self.conv(x)\n\n\n"
    "class GAN(object):\n"
    "    def __init__(self, args):\n        self.device = args.device\n\n"
    "    def build_model(self):\n"
    "        self.gen = Generator().to(self.device)\n"
    "        self.opt = torch.optim.Adam(self.gen.parameters())\n\n"
    "    def train(self):\n"
    "        for _ in range(10):\n"
    "            x = torch.randn(1, 3, 8, 8, device=self.device)\n"
    "            self.opt.zero_grad()\n            self.gen(x).sum().backward()\n            self.opt.step()\n"
)
GAN_MAIN = (
    "import argparse\nfrom gan import GAN\n\n\n"
    "def main():\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--device', default='cuda')\n"
    "    args = parser.parse_args()\n"
    "    gan = GAN(args)\n"
    "    gan.build_model()\n"
    "    gan.train()\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def test_a_trainer_object_the_script_builds_and_runs_is_reported_at_the_script(tmp_path):
    root = _project(tmp_path, {"gan.py": GAN_TRAINER, "main.py": GAN_MAIN})
    assert _findings(root, ".") == [("main.py", 9, "TPF403")]  # `gan = GAN(args)`, once


def test_a_trainer_that_may_set_benchmark_itself_keeps_the_script_silent(tmp_path):
    flagged = GAN_TRAINER.replace(
        "        self.device = args.device\n",
        "        self.device = args.device\n        if args.benchmark:\n            torch.backends.cudnn.benchmark = True\n",
    )
    main = GAN_MAIN.replace("    parser.add_argument('--device', default='cuda')\n", "    parser.add_argument('--device', default='cuda')\n    parser.add_argument('--benchmark', action='store_true')\n")
    root = _project(tmp_path, {"gan.py": flagged, "main.py": main})
    assert _findings(root, ".") == []
