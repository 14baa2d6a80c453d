"""Values chosen by a name the engine does not know (``project/choices.py``): classes
looked up with ``importlib`` by a computed module name, registries, and builders whose
``if``/``elif`` arms build different classes. Each on a scratch project, with look-alikes
whose candidates disagree (silent)."""

from __future__ import annotations

import pytest


from test_cache_project import _findings  # noqa: E402
from test_module_values import _project  # noqa: E402


# -- importlib: the class of a module chosen by name (TPF202 through the model's method) ----

IMPORTLIB = {
    'models/__init__.py': 'import importlib\nfrom models.base_model import BaseModel\n\n\ndef find_model_using_name(model_name):\n    model_filename = "models." + model_name + "_model"\n    modellib = importlib.import_module(model_filename)\n    model = None\n    target_model_name = model_name.replace(\'_\', \'\') + \'model\'\n    for name, cls in modellib.__dict__.items():\n        if name.lower() == target_model_name.lower() and issubclass(cls, BaseModel):\n            model = cls\n    if model is None:\n        exit(0)\n    return model\n\n\ndef create_model(opt):\n    model = find_model_using_name(opt.model)\n    instance = model(opt)\n    return instance\n',
    'models/base_model.py': 'from abc import ABC, abstractmethod\n\n\nclass BaseModel(ABC):\n    def __init__(self, opt):\n        self.opt = opt\n\n    @abstractmethod\n    def optimize_parameters(self):\n        pass\n',
    'models/cut_model.py': 'import torch\nfrom .base_model import BaseModel\n\n\nclass CUTModel(BaseModel):\n    def __init__(self, opt):\n        BaseModel.__init__(self, opt)\n        self.net = torch.nn.Conv2d(3, 3, 3).cuda()\n        self.optimizer_G = torch.optim.Adam(self.net.parameters())\n\n    def optimize_parameters(self):\n        self.optimizer_G.zero_grad()\n        self.net(self.x).mean().backward()\n        self.optimizer_G.step()\n',
    'models/cycle_gan_model.py': 'import torch\nfrom .base_model import BaseModel\n\n\nclass CycleGANModel(BaseModel):\n    def __init__(self, opt):\n        BaseModel.__init__(self, opt)\n        self.net = torch.nn.Conv2d(3, 3, 3).cuda()\n        self.optimizer_D = torch.optim.Adam(self.net.parameters())\n\n    def optimize_parameters(self):\n        self.backward_D()\n        self.optimizer_D.step()\n\n    def backward_D(self):\n        self.net(self.x).mean().backward()\n',
    'train.py': "import torch\nfrom models import create_model\n\nif __name__ == '__main__':\n    opt = parse()\n    model = create_model(opt)\n    for epoch in range(10):\n        for i, data in enumerate(dataset):\n            if len(opt.gpu_ids) > 0:\n                torch.cuda.synchronize()\n            model.optimize_parameters()\n",
}


def test_a_class_chosen_with_importlib_whose_every_candidate_trains(tmp_path):
    # The sync under `if len(opt.gpu_ids) > 0:` (a device choice, not a sampling guard) in a
    # loop that trains through `model.optimize_parameters()` of every `models/*_model.py`
    # class (the abstract base is no candidate).
    assert _findings(_project(tmp_path, IMPORTLIB, "TPF202"), ".") == [("train.py", 10, "TPF202")]


def test_a_candidate_whose_method_does_not_train_leaves_the_loop_unknown(tmp_path):
    files = {**IMPORTLIB, "models/test_model.py": (
        "from .base_model import BaseModel\n\n\nclass TestModel(BaseModel):\n"
        "    def optimize_parameters(self):\n        pass\n"
    )}
    assert _findings(_project(tmp_path, files, "TPF202"), ".") == []


def test_a_module_name_no_project_module_fits_is_unknown(tmp_path):
    init = IMPORTLIB["models/__init__.py"].replace('"_model"', '"_network"')
    assert _findings(_project(tmp_path, {**IMPORTLIB, "models/__init__.py": init}, "TPF202"), ".") == []


def test_a_module_that_defines_something_else_too_is_unknown(tmp_path):
    cut = IMPORTLIB["models/cut_model.py"] + "\n\ndef helper():\n    return 1\n"
    assert _findings(_project(tmp_path, {**IMPORTLIB, "models/cut_model.py": cut}, "TPF202"), ".") == []


# -- a registry: decorated registrations and a lookup of the same object (TPF403) ---------

REGISTRY = {
    'pkg/__init__.py': '',
    'pkg/build.py': "from fvcore.common.registry import Registry\n\nMODELS_REGISTRY = Registry('MODELS')\n\n\ndef get_model(model_name):\n    return MODELS_REGISTRY.get(model_name)\n",
    'pkg/resnet.py': 'import torch.nn as nn\nfrom .build import MODELS_REGISTRY\n\n\nclass ResNet(nn.Module):\n    def __init__(self, depth, **kwargs):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n\n@MODELS_REGISTRY.register()\ndef resnet50(**kwargs):\n    return ResNet(50, **kwargs)\n\n\n@MODELS_REGISTRY.register()\ndef resnet101(**kwargs):\n    return ResNet(101, **kwargs)\n',
    'train.py': 'import torch\nfrom pkg.build import get_model\n\n\ndef main(cfg):\n    model = get_model(cfg.MODEL.NAME)(**cfg.kwargs)\n    model.cuda()\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x in loader:\n        model(x.cuda()).sum().backward()\n        optimizer.step()\n\n\nif __name__ == "__main__":\n    main(cfg)\n',
}


def test_every_model_a_registry_holds_is_convolutional(tmp_path):
    assert _findings(_project(tmp_path, REGISTRY, "TPF403"), ".") == [("train.py", 6, "TPF403")]


def test_a_registry_that_also_holds_a_model_without_convolutions_is_unknown(tmp_path):
    mlp = (
        "import torch.nn as nn\nfrom .build import MODELS_REGISTRY\n\n\n"
        "@MODELS_REGISTRY.register()\ndef mlp(**kwargs):\n    return nn.Linear(3, 3)\n"
    )
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/mlp.py": mlp}, "TPF403"), ".") == []


def test_a_registration_by_call_counts_as_a_candidate(tmp_path):
    conv = (
        "import torch.nn as nn\nfrom .build import MODELS_REGISTRY\n\n\n"
        "def vgg(**kwargs):\n    return nn.Sequential(nn.Conv2d(3, 8, 3))\n\n\nMODELS_REGISTRY.register(vgg)\n"
    )
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/vgg.py": conv}, "TPF403"), ".") == [("train.py", 6, "TPF403")]
    mlp = conv.replace("nn.Sequential(nn.Conv2d(3, 8, 3))", "nn.Linear(3, 8)")
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/vgg.py": mlp}, "TPF403"), ".") == []


def test_a_registration_of_something_outside_the_project_leaves_the_registry_unknown(tmp_path):
    other = "from .build import MODELS_REGISTRY\nfrom somewhere import net\n\nMODELS_REGISTRY.register(net)\n"
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/other.py": other}, "TPF403"), ".") == []


def test_a_registry_that_escapes_under_another_name_is_unknown(tmp_path):
    # `BACKBONES = MODELS_REGISTRY` may register under the other name: not all are known.
    other = (
        "import torch.nn as nn\nfrom .build import MODELS_REGISTRY\n\nBACKBONES = MODELS_REGISTRY\n\n\n"
        "@BACKBONES.register()\ndef mlp(**kwargs):\n    return nn.Linear(3, 3)\n"
    )
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/other.py": other}, "TPF403"), ".") == []


def test_another_registry_object_is_not_this_one(tmp_path):
    build = REGISTRY["pkg/build.py"].replace(
        "def get_model", "BACKBONES = Registry('BACKBONES')\n\n\ndef get_model"
    ).replace("return MODELS_REGISTRY.get", "return BACKBONES.get")
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/build.py": build}, "TPF403"), ".") == []


# -- builders: static methods whose if/elif arms build different classes (TPF403) ---------

BUILDER = {
    'models.py': "import torch.nn as nn\n\n\nclass Resnet(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n\nclass C1(nn.Module):\n    def __init__(self, num_class):\n        super().__init__()\n        self.conv = nn.Conv2d(8, num_class, 1)\n\n\nclass PPM(nn.Module):\n    def __init__(self, num_class):\n        super().__init__()\n        self.conv = nn.Conv2d(8, num_class, 3)\n\n\nclass SegmentationModule(nn.Module):\n    def __init__(self, net_enc, net_dec, crit):\n        super().__init__()\n        self.encoder = net_enc\n        self.decoder = net_dec\n        self.crit = crit\n\n    def forward(self, x):\n        return self.decoder(self.encoder(x))\n\n\nclass ModelBuilder:\n    @staticmethod\n    def build_encoder(arch='resnet50'):\n        if arch == 'resnet18':\n            net_encoder = Resnet()\n        elif arch == 'resnet50':\n            net_encoder = Resnet()\n        else:\n            raise Exception('Architecture undefined!')\n        return net_encoder\n\n    @staticmethod\n    def build_decoder(arch='ppm', num_class=150):\n        if arch == 'c1':\n            net_decoder = C1(num_class)\n        elif arch == 'ppm':\n            net_decoder = PPM(num_class)\n        else:\n            raise Exception('Architecture undefined!')\n        return net_decoder\n",
    'train.py': 'import torch\nimport torch.nn as nn\nfrom models import ModelBuilder, SegmentationModule\n\n\ndef main(cfg):\n    net_encoder = ModelBuilder.build_encoder(arch=cfg.MODEL.arch_encoder.lower())\n    net_decoder = ModelBuilder.build_decoder(arch=cfg.MODEL.arch_decoder.lower(), num_class=cfg.num_class)\n    crit = nn.NLLLoss(ignore_index=-1)\n    segmentation_module = SegmentationModule(net_encoder, net_decoder, crit)\n    segmentation_module.cuda()\n    optimizer = torch.optim.SGD(segmentation_module.parameters(), lr=0.1)\n    for x in loader:\n        segmentation_module(x.cuda()).sum().backward()\n        optimizer.step()\n\n\nif __name__ == "__main__":\n    main(cfg)\n',
}


def test_a_builder_whose_every_arm_builds_a_conv_model(tmp_path):
    # `SegmentationModule(net_encoder, net_decoder, crit)` keeps the modules its caller
    # passes (`self.encoder = net_enc`): convolutional when every arm of the builders is.
    assert _findings(_project(tmp_path, BUILDER, "TPF403"), ".") == [("train.py", 10, "TPF403")]


def test_a_builder_with_one_arm_without_convolutions_is_unknown(tmp_path):
    models = BUILDER["models.py"].replace(
        "        elif arch == 'resnet50':\n            net_encoder = Resnet()\n",
        "        elif arch == 'mlp':\n            net_encoder = nn.Linear(3, 8)\n",
    ).replace("net_decoder = C1(num_class)", "net_decoder = nn.Linear(8, num_class)")
    assert _findings(_project(tmp_path, {**BUILDER, "models.py": models}, "TPF403"), ".") == []


def test_a_constructor_that_names_its_class_in_super_still_has_known_callers(tmp_path):
    # `super(SegmentationModule, self).__init__()` names the class without calling it or
    # letting it escape: the constructor's parameters are still read from its callers.
    models = BUILDER["models.py"].replace(
        "    def __init__(self, net_enc, net_dec, crit):\n        super().__init__()\n",
        "    def __init__(self, net_enc, net_dec, crit):\n        super(SegmentationModule, self).__init__()\n",
    )
    assert models != BUILDER["models.py"]
    assert _findings(_project(tmp_path, {**BUILDER, "models.py": models}, "TPF403"), ".") == [("train.py", 10, "TPF403")]


def test_a_registry_subscript_is_a_lookup_too(tmp_path):
    build = REGISTRY["pkg/build.py"].replace("return MODELS_REGISTRY.get(model_name)", "return MODELS_REGISTRY[model_name]")
    assert build != REGISTRY["pkg/build.py"]
    assert _findings(_project(tmp_path, {**REGISTRY, "pkg/build.py": build}, "TPF403"), ".") == [("train.py", 6, "TPF403")]


# -- a module chosen by a command-line name: `import_module('model.' + args.model.lower())` --
# The script `src/main.py` runs from `src/` (a package folder too): its modules are named
# from there (`model.edsr`), and `from model import common` inside `src/model/` resolves
# from the script's folder. The argparse default names the module through `.lower()`.

SRNET = {
    "src/__init__.py": "",
    "src/option.py": "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--model', default='EDSR')\nargs = parser.parse_args()\n",
    "src/main.py": "import torch\nimport model\nfrom option import args\n\n\ndef main():\n    net = model.Model(args)\n    optimizer = torch.optim.Adam(net.parameters())\n    for lr, hr in loader:\n        loss = (net(lr.cuda()) - hr.cuda()).abs().mean()\n        loss.backward()\n        optimizer.step()\n\n\nif __name__ == '__main__':\n    main()\n",
    "src/model/__init__.py": "from importlib import import_module\nimport torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self, args):\n        super().__init__()\n        module = import_module('model.' + args.model.lower())\n        self.model = module.make_model(args).to(torch.device('cuda'))\n\n    def forward(self, x):\n        return self.model(x)\n",
    "src/model/common.py": "import torch.nn as nn\n\n\ndef default_conv(c_in, c_out, k, bias=True):\n    return nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=bias)\n",
    "src/model/edsr.py": "import torch.nn as nn\nfrom model import common\n\n\ndef make_model(args):\n    return EDSR(args)\n\n\nclass EDSR(nn.Module):\n    def __init__(self, args, conv=common.default_conv):\n        super().__init__()\n        self.head = conv(3, 64, 3)\n\n    def forward(self, x):\n        return self.head(x)\n",
    "src/model/mlp.py": "import torch.nn as nn\n\n\ndef make_model(args):\n    return MLP()\n\n\nclass MLP(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 3)\n\n    def forward(self, x):\n        return self.fc(x)\n",
}
SR_FOUND = [("main.py", 7, "TPF403")]


def _sr(tmp_path, changes=()):
    files = dict(SRNET)
    for path, old, new in changes:
        assert old in files[path]
        files[path] = files[path].replace(old, new)
    return _findings(_project(tmp_path, files, "TPF403"), ".")


def test_the_module_a_lowered_command_line_default_names(tmp_path):
    assert _sr(tmp_path) == SR_FOUND


@pytest.mark.parametrize("spelling", ["'model.{}'.format(args.model.lower())", "'model.%s' % args.model.lower()"])
def test_a_module_name_formatted_into_a_template(tmp_path, spelling):
    assert _sr(tmp_path, [("src/model/__init__.py", "'model.' + args.model.lower()", spelling)]) == SR_FOUND


def test_a_default_that_names_a_model_without_convolutions_is_silent(tmp_path):
    assert _sr(tmp_path, [("src/option.py", "default='EDSR'", "default='MLP'")]) == []


def test_an_unknown_name_among_models_that_disagree_is_silent(tmp_path):
    assert _sr(tmp_path, [("src/option.py", ", default='EDSR'", "")]) == []


def test_a_module_without_the_member_is_no_candidate(tmp_path):
    # Name unknown: `model.common` and `model.edsr` fit; `common` defines no `make_model`
    # (the program would stop there), so the model is EDSR's.
    files = {k: v for k, v in SRNET.items() if k != "src/model/mlp.py"}
    files["src/option.py"] = files["src/option.py"].replace(", default='EDSR'", "")
    assert _findings(_project(tmp_path, files, "TPF403"), ".") == SR_FOUND


def test_a_module_that_may_define_the_member_by_a_star_import_keeps_it_unknown(tmp_path):
    files = {k: v for k, v in SRNET.items() if k != "src/model/mlp.py"}
    files["src/option.py"] = files["src/option.py"].replace(", default='EDSR'", "")
    files["src/model/common.py"] = "from .helpers import *\n" + files["src/model/common.py"]
    files["src/model/helpers.py"] = "import torch.nn as nn\n\n\ndef make_model(args):\n    return nn.Linear(3, 3)\n"
    assert _findings(_project(tmp_path, files, "TPF403"), ".") == []


def test_a_name_the_parsing_module_changes_is_not_its_default(tmp_path):
    # `opt.model = ...` in the module that parses it (any name): the default is not the value.
    assert _sr(tmp_path, [("src/option.py", "args = parser.parse_args()\n", "opt = parser.parse_args()\nopt.model = 'MLP'\nargs = opt\n")]) == []
