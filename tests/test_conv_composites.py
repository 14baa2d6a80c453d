"""What a model is, for TPF403 (issue 22, review-9's misses): a name factory whose every
arm builds a convolutional model though the name has no default and the arms outnumber a
choice, and containers a helper fills with layers in a loop (``make_stage(spec)``
returning ``nn.Sequential(*parts)`` / ``nn.Sequential(OrderedDict(pairs))``), held by
composite modules (an encoder and a decoder inside a wrapper module). Each on a scratch
project, with look-alikes that stay silent."""

from __future__ import annotations

from test_cache_project import _findings  # noqa: E402
from test_module_values import _project  # noqa: E402

# -- a factory choosing by a required flag among more classes than a choice holds ---------


def _zoo(count: int) -> dict:
    """``zoo/arch<i>.py`` each with its own conv class and builder; ``pick.py`` choosing
    one by ``opts.arch`` in an ``if``/``elif`` chain (imports inside the arms)."""
    files = {"zoo/__init__.py": ""}
    arms = []
    for i in range(count):
        files[f"zoo/arch{i}.py"] = (
            "import torch.nn as nn\n\n\n"
            f"class Arch{i}(nn.Module):\n    def __init__(self, width=8):\n        super().__init__()\n"
            f"        self.head = nn.Conv2d(3, width, {i % 3 + 1})\n\n    def forward(self, x):\n        return self.head(x)\n\n\n"
            f"def arch{i}():\n    return Arch{i}()\n"
        )
        keyword = "if" if i == 0 else "elif"
        arms.append(f"    {keyword} opts.arch == 'a{i}':\n        from zoo.arch{i} import arch{i}\n        net = arch{i}()\n")
    files["pick.py"] = (
        "import sys\n\n\ndef pick(opts):\n" + "".join(arms)
        + "    else:\n        print('no such architecture')\n        sys.exit(1)\n"
        + "    if opts.cuda:\n        net = net.cuda()\n    return net\n"
    )
    files["run.py"] = (
        "import argparse\n\nimport torch\nfrom pick import pick\n\n\n"
        "def main():\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('-arch', type=str, required=True)\n"
        "    parser.add_argument('-cuda', action='store_true')\n"
        "    opts = parser.parse_args()\n"
        "    net = pick(opts)\n"
        "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "    for x in feed:\n        net(x.cuda()).sum().backward()\n        opt.step()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    return files


def test_a_required_name_whose_every_arm_builds_a_conv_model(tmp_path):
    # 20 different classes: more than a choice keeps, each convolutional.
    assert _findings(_project(tmp_path, _zoo(20)), ".") == [("run.py", 12, "TPF403")]


def test_one_arm_without_convolutions_leaves_the_factory_unknown(tmp_path):
    files = _zoo(20)
    files["zoo/arch7.py"] = files["zoo/arch7.py"].replace("nn.Conv2d(3, width, 2)", "nn.Linear(3, width)")
    assert _findings(_project(tmp_path, files), ".") == []


def test_one_arm_of_unknown_kind_leaves_the_factory_unknown(tmp_path):
    files = _zoo(20)
    files["pick.py"] = files["pick.py"].replace("        net = arch3()\n", "        net = torch.hub.load(opts.repo, opts.arch)\n")
    files["pick.py"] = "import torch\n" + files["pick.py"]
    assert _findings(_project(tmp_path, files), ".") == []


# -- containers a helper fills in a loop, inside composite modules -------------------------

STAGES = {
    "parts/__init__.py": "",
    "parts/stages.py": (
        "from collections import OrderedDict\n\nimport torch.nn as nn\n\n\n"
        "def make_stage(spec):\n"
        "    pairs = []\n"
        "    for label, sizes in spec.items():\n"
        "        if label.startswith('pool'):\n"
        "            pairs.append((label, nn.MaxPool2d(sizes[0])))\n"
        "        elif label.startswith('conv'):\n"
        "            layer = nn.Conv2d(sizes[0], sizes[1], sizes[2])\n"
        "            pairs.append((label, layer))\n"
        "            pairs.append(('act_' + label, nn.ReLU()))\n"
        "        else:\n"
        "            raise ValueError(label)\n"
        "    return nn.Sequential(OrderedDict(pairs))\n\n\n"
        "def make_column(widths):\n"
        "    parts = []\n"
        "    prev = 3\n"
        "    for w in widths:\n"
        "        if w == 'P':\n"
        "            parts += [nn.MaxPool2d(2)]\n"
        "            continue\n"
        "        parts += [nn.Conv2d(prev, w, 3, padding=1), nn.ReLU()]\n"
        "        prev = w\n"
        "    return nn.Sequential(*parts)\n"
    ),
    "parts/blocks.py": (
        "import torch.nn as nn\n\nfrom parts.stages import make_stage\n\n\n"
        "class Down(nn.Module):\n"
        "    def __init__(self, specs):\n"
        "        super().__init__()\n"
        "        for i, spec in enumerate(specs, 1):\n"
        "            setattr(self, 'stage' + str(i), make_stage(spec))\n\n"
        "    def forward(self, x):\n        return self.stage1(x)\n\n\n"
        "class Up(nn.Module):\n"
        "    def __init__(self, spec):\n"
        "        super().__init__()\n"
        "        self.body = make_stage(spec)\n\n"
        "    def forward(self, x):\n        return self.body(x)\n\n\n"
        "class Both(nn.Module):\n"
        "    def __init__(self, down, up):\n"
        "        super().__init__()\n"
        "        self.down = down\n"
        "        self.up = up\n\n"
        "    def forward(self, x):\n        return self.up(self.down(x))\n"
    ),
    "fit.py": (
        "from collections import OrderedDict\n\nimport torch\n\nfrom parts.blocks import Both, Down, Up\n\n"
        "down = Down([OrderedDict({'conv1': [1, 8, 3]})]).cuda()\n"
        "up = Up(OrderedDict({'conv2': [8, 1, 3]})).cuda()\n"
        "model = Both(down, up).cuda()\n"
        "opt = torch.optim.Adam(model.parameters())\n"
        "for x in batches:\n    model(x.cuda()).mean().backward()\n    opt.step()\n"
    ),
}


def test_stages_built_from_a_filled_list_make_the_composite_convolutional(tmp_path):
    assert _findings(_project(tmp_path, STAGES), ".") == [("fit.py", 9, "TPF403")]


def test_a_column_built_with_list_additions_is_convolutional(tmp_path):
    files = {**STAGES, "fit.py": (
        "import torch\n\nfrom parts.stages import make_column\n\n"
        "model = make_column([16, 'P', 32]).cuda()\n"
        "opt = torch.optim.Adam(model.parameters())\n"
        "for x in batches:\n    model(x.cuda()).mean().backward()\n    opt.step()\n"
    )}
    assert _findings(_project(tmp_path, files), ".") == [("fit.py", 5, "TPF403")]


def test_a_filled_list_of_linear_layers_is_not_convolutional(tmp_path):
    stages = STAGES["parts/stages.py"].replace("nn.Conv2d(sizes[0], sizes[1], sizes[2])", "nn.Linear(sizes[0], sizes[1])")
    assert _findings(_project(tmp_path, {**STAGES, "parts/stages.py": stages}), ".") == []


def test_a_list_handed_on_or_shortened_before_it_is_wrapped_is_not_read(tmp_path):
    handed = STAGES["parts/stages.py"].replace("    return nn.Sequential(OrderedDict(pairs))\n", "    pairs = trim(pairs)\n    return nn.Sequential(OrderedDict(pairs))\n")
    assert _findings(_project(tmp_path, {**STAGES, "parts/stages.py": handed}), ".") == []
    popped = STAGES["parts/stages.py"].replace("    return nn.Sequential(OrderedDict(pairs))\n", "    pairs.pop()\n    return nn.Sequential(OrderedDict(pairs))\n")
    assert _findings(_project(tmp_path, {**STAGES, "parts/stages.py": popped}), ".") == []


def test_a_composite_holding_a_module_without_convolutions_is_not_convolutional(tmp_path):
    fit = STAGES["fit.py"].replace(
        "down = Down([OrderedDict({'conv1': [1, 8, 3]})]).cuda()\nup = Up(OrderedDict({'conv2': [8, 1, 3]})).cuda()\n",
        "down = torch.nn.Linear(8, 8).cuda()\nup = torch.nn.Linear(8, 8).cuda()\n",
    )
    assert _findings(_project(tmp_path, {**STAGES, "fit.py": fit}), ".") == []


# -- a model handed to a project function that trains it in its own body (TPF403) ---------

HANDED = {
    "nets.py": (
        "import torch.nn as nn\n\n\n"
        "class Tiny(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.c = nn.Conv2d(1, 4, 3)\n\n"
        "    def forward(self, x):\n        return self.c(x)\n"
    ),
    "loop.py": (
        "def fit_all(net, opt, loss_fn, steps):\n"
        "    for step in range(steps):\n"
        "        x, y = draw()\n"
        "        loss = loss_fn(net(x.cuda()), y.cuda())\n"
        "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n\n\n"
        "def look(net, steps):\n"
        "    for step in range(steps):\n        show(net(draw()[0].cuda()))\n"
    ),
    "go.py": (
        "import torch\n\nfrom loop import fit_all\nfrom nets import Tiny\n\n"
        "net = Tiny().cuda()\n"
        "opt = torch.optim.Adam(net.parameters())\n"
        "crit = torch.nn.MSELoss()\n"
        "fit_all(net, opt, crit, 1000)\n"
    ),
}


def test_a_model_handed_to_a_project_function_that_trains_it(tmp_path):
    assert _findings(_project(tmp_path, HANDED), ".") == [("go.py", 6, "TPF403")]


def test_a_model_handed_to_a_function_that_does_not_train(tmp_path):
    go = HANDED["go.py"].replace("fit_all(net, opt, crit, 1000)\n", "look(net, 10)\n").replace("import fit_all", "import look")
    assert _findings(_project(tmp_path, {**HANDED, "go.py": go}), ".") == []


def test_a_linear_model_handed_to_a_training_function(tmp_path):
    nets = HANDED["nets.py"].replace("nn.Conv2d(1, 4, 3)", "nn.Linear(4, 4)")
    assert _findings(_project(tmp_path, {**HANDED, "nets.py": nets}), ".") == []


def test_a_script_that_sets_benchmark_before_handing_the_model(tmp_path):
    go = HANDED["go.py"].replace("net = Tiny().cuda()\n", "torch.backends.cudnn.benchmark = True\nnet = Tiny().cuda()\n")
    assert _findings(_project(tmp_path, {**HANDED, "go.py": go}), ".") == []


# -- a GAN trainer object (no nn.Module) holding conv networks, trained by the script ------

GAN = {
    "duo/__init__.py": "",
    "duo/nets.py": (
        "import torch.nn as nn\n\n\n"
        "class Maker(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.up = nn.ConvTranspose2d(16, 3, 4)\n\n    def forward(self, z):\n        return self.up(z)\n\n\n"
        "class Judge(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.down = nn.Conv2d(3, 1, 4)\n\n    def forward(self, x):\n        return self.down(x).mean()\n"
    ),
    "duo/pair.py": (
        "import torch\n\nfrom duo.nets import Judge, Maker\n\n\n"
        "class PairTrainer(object):\n"
        "    def __init__(self, opts):\n"
        "        self.maker = Maker().cuda()\n"
        "        self.judge = Judge().cuda()\n"
        "        self.opt_m = torch.optim.Adam(self.maker.parameters())\n"
        "        self.opt_j = torch.optim.Adam(self.judge.parameters())\n\n"
        "    def train(self, loader):\n"
        "        for x in loader:\n"
        "            z = torch.randn(x.size(0), 16, 1, 1, device='cuda')\n"
        "            loss = self.judge(self.maker(z)) - self.judge(x.cuda())\n"
        "            self.opt_j.zero_grad()\n            loss.backward()\n            self.opt_j.step()\n\n"
        "    def evaluate(self, loader):\n"
        "        with torch.no_grad():\n            for x in loader:\n                print(self.judge(x.cuda()))\n"
    ),
    "run.py": (
        "from duo.pair import PairTrainer\n\n\n"
        "def main(opts):\n"
        "    trainer = PairTrainer(opts)\n"
        "    trainer.train(make_loader(opts))\n\n\n"
        "if __name__ == '__main__':\n    main(parse())\n"
    ),
}


def test_a_gan_trainer_object_is_reported_where_the_script_makes_it(tmp_path):
    # One finding, in the entry script (its fix inserts the setting there); not a second
    # one in the trainer's module.
    assert _findings(_project(tmp_path, GAN), ".") == [("run.py", 5, "TPF403")]


def test_a_trainer_holding_models_without_convolutions(tmp_path):
    nets = GAN["duo/nets.py"].replace("nn.ConvTranspose2d(16, 3, 4)", "nn.Linear(16, 3)").replace("nn.Conv2d(3, 1, 4)", "nn.Linear(3, 1)")
    assert _findings(_project(tmp_path, {**GAN, "duo/nets.py": nets}), ".") == []


def test_a_trainer_whose_module_decides_the_setting_itself(tmp_path):
    pair = GAN["duo/pair.py"].replace(
        "    def __init__(self, opts):\n",
        "    def __init__(self, opts):\n        if opts.fast:\n            torch.backends.cudnn.benchmark = True\n",
    )
    assert _findings(_project(tmp_path, {**GAN, "duo/pair.py": pair}), ".") == []


def test_a_script_that_sets_benchmark_before_training_the_gan(tmp_path):
    run = GAN["run.py"].replace("from duo.pair import PairTrainer\n", "import torch\n\nfrom duo.pair import PairTrainer\n\ntorch.backends.cudnn.benchmark = True\n")
    assert _findings(_project(tmp_path, {**GAN, "run.py": run}), ".") == []
