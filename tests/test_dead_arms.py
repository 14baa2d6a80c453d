"""Code in an arm that never runs is not reported (issue 22, review-11 and new-rules-10's
false positives): ``if flag:`` / ``x if flag else y`` / ``else`` where ``flag`` is a
parameter the value engine knows from its default (no caller passes it) or from every
caller passing the same literal. Look-alikes keep their findings: a caller that passes
True, a default True, a caller passing an unknown value, a flag rebound in the function."""

from __future__ import annotations

from test_cache_project import _findings  # noqa: E402
from test_module_values import _project  # noqa: E402

FEEDER = (
    "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
    "def feeder(items, spread=False):\n"
    "    order = DistributedSampler(items) if spread else None\n"
    "    return DataLoader(items, sampler=order, num_workers=2, persistent_workers=True)\n\n\n"
    "def feeder_b(items, spread=False):\n"
    "    if not spread:\n"
    "        order = None\n"
    "    else:\n"
    "        order = DistributedSampler(items)\n"
    "    return DataLoader(items, sampler=order, num_workers=2, persistent_workers=True)\n"
)
FIT = (
    "from feeding import feeder, feeder_b\n\n\n"
    "def fit(items, net):\n"
    "    first = feeder(items)\n"
    "    second = feeder_b(items)\n"
    "    for epoch in range(5):\n"
    "        for x in first:\n"
    "            net(x)\n"
    "        for x in second:\n"
    "            net(x)\n"
)


def _samplers(tmp_path, feeder: str = FEEDER, fit: str = FIT):
    return _findings(_project(tmp_path, {"feeding.py": feeder, "fit.py": fit}, "TPF105"), ".")


def test_a_sampler_built_only_when_a_flag_no_caller_passes_is_on(tmp_path):
    assert _samplers(tmp_path) == []


def test_a_caller_that_passes_true_keeps_the_sampler(tmp_path):
    fit = FIT.replace("feeder(items)", "feeder(items, spread=True)").replace("feeder_b(items)", "feeder_b(items, True)")
    assert _samplers(tmp_path, fit=fit) == [("feeding.py", 5, "TPF105"), ("feeding.py", 13, "TPF105")]


def test_a_true_default_keeps_the_sampler(tmp_path):
    assert _samplers(tmp_path, feeder=FEEDER.replace("spread=False", "spread=True")) == [
        ("feeding.py", 5, "TPF105"),
        ("feeding.py", 13, "TPF105"),
    ]


def test_an_unknown_argument_keeps_the_sampler(tmp_path):
    fit = FIT.replace("def fit(items, net):", "def fit(items, net, many):").replace("feeder(items)", "feeder(items, many)")
    fit = fit.replace("feeder_b(items)", "feeder_b(items, spread=many)")
    assert _samplers(tmp_path, fit=fit) == [("feeding.py", 5, "TPF105"), ("feeding.py", 13, "TPF105")]


def test_a_flag_rebound_in_the_function_keeps_the_sampler(tmp_path):
    feeder = FEEDER.replace("    order = DistributedSampler(items) if", "    spread = len(items) > 1\n    order = DistributedSampler(items) if")
    assert _samplers(tmp_path, feeder=feeder) == [("feeding.py", 6, "TPF105")]


STACK = (
    "import torch.nn as nn\n\n\n"
    "def tower(plan, normed=False):\n"
    "    parts = []\n"
    "    width = 3\n"
    "    for v in plan:\n"
    "        if v == 'P':\n"
    "            parts += [nn.MaxPool2d(2)]\n"
    "        else:\n"
    "            conv = nn.Conv2d(width, v, 3, padding=1)\n"
    "            if normed:\n"
    "                parts += [conv, nn.BatchNorm2d(v), nn.ReLU()]\n"
    "            else:\n"
    "                parts += [conv, nn.ReLU()]\n"
    "            width = v\n"
    "    return nn.Sequential(*parts)\n"
)
USE = "from towers import tower\n\n\ndef trunk():\n    return tower([8, 'P', 16])\n"


def _convs(tmp_path, stack: str = STACK, use: str = USE):
    return _findings(_project(tmp_path, {"towers.py": stack, "use.py": use}, "TPF301"), ".")


def test_a_norm_added_only_under_a_flag_left_off_pairs_nothing(tmp_path):
    assert _convs(tmp_path) == []


def test_a_caller_turning_the_norm_on_keeps_the_pair(tmp_path):
    assert _convs(tmp_path, use=USE.replace("16])", "16], normed=True)")) == [("towers.py", 11, "TPF301")]


def test_a_norm_on_by_default_keeps_the_pair(tmp_path):
    assert _convs(tmp_path, stack=STACK.replace("normed=False", "normed=True")) == [("towers.py", 11, "TPF301")]


def test_a_caller_passing_an_unknown_flag_keeps_the_pair(tmp_path):
    use = USE.replace("def trunk():", "def trunk(bn):").replace("16])", "16], bn)")
    assert _convs(tmp_path, use=use) == [("towers.py", 11, "TPF301")]


def test_a_negated_flag_reads_its_else_arm(tmp_path):
    plain = STACK.replace("if normed:", "if not plain:").replace("normed=False", "plain=True")
    plain = plain.replace("[conv, nn.BatchNorm2d(v), nn.ReLU()]", "[conv, nn.ReLU()]#").replace("[conv, nn.ReLU()]\n", "[conv, nn.BatchNorm2d(v)]\n")
    assert "if not plain:" in plain and "[conv, nn.BatchNorm2d(v)]\n            width" in plain
    assert _convs(tmp_path, stack=plain) == [("towers.py", 11, "TPF301")]
    (tmp_path / "on").mkdir()
    assert _convs(tmp_path / "on", stack=plain.replace("plain=True", "plain=False")) == []


PHASES = (
    "import sys\n"
    "from torch.utils.data import DataLoader\n\n\n"
    "def loader_for(items, phase='train'):\n"
    "    if phase == 'train':\n"
    "        made = DataLoader(items, batch_size=8, num_workers=4)\n"
    "    elif phase == 'val':\n"
    "        made = DataLoader(items, batch_size=8, num_workers=4)\n"
    "    elif phase == 'test':\n"
    "        made = DataLoader(items, batch_size=1, num_workers=4)\n"
    "    return made\n\n\n"
    "def main(items, net, testing):\n"
    "    if testing:\n"
    "        for x in loader_for(items, 'test'):\n"
    "            net(x)\n"
    "        sys.exit()\n"
    "    fit = loader_for(items)\n"
    "    check = loader_for(items, phase='val')\n"
    "    for epoch in range(3):\n"
    "        for x in fit:\n"
    "            net(x)\n"
    "        for x in check:\n"
    "            net(x)\n"
)


def _workers(tmp_path, text: str):
    return _findings(_project(tmp_path, {"run.py": text, "other.py": "x = 1\n"}, "TPF103"), ".")


def test_a_helper_call_gets_only_the_loader_of_the_arm_its_argument_takes(tmp_path):
    """The test loader is walked once: only the train and val loaders restart workers."""
    assert _workers(tmp_path, PHASES) == [("run.py", 7, "TPF103"), ("run.py", 9, "TPF103")]


def test_a_phase_passed_as_a_variable_keeps_every_loader(tmp_path):
    text = PHASES.replace("    check = loader_for(items, phase='val')\n", "    check = loader_for(items, phase=testing)\n")
    assert _workers(tmp_path, text) == [("run.py", 7, "TPF103"), ("run.py", 9, "TPF103"), ("run.py", 11, "TPF103")]


def test_the_test_phase_walked_every_epoch_keeps_its_loader(tmp_path):
    text = PHASES.replace("loader_for(items, phase='val')", "loader_for(items, 'test')")
    assert _workers(tmp_path, text) == [("run.py", 7, "TPF103"), ("run.py", 11, "TPF103")]


def test_a_flag_argument_picks_its_arm(tmp_path):
    text = PHASES.replace("phase == 'val'", "not phase").replace("phase='val'", "phase=False")
    assert _workers(tmp_path, text) == [("run.py", 7, "TPF103"), ("run.py", 9, "TPF103")]
    text = text.replace("phase=False", "phase=True")
    (tmp_path / "on").mkdir()
    assert _workers(tmp_path / "on", text) == [("run.py", 7, "TPF103")]


CLI = (
    "import fire\n"
    "from torch.utils.data import DataLoader\n\n\n"
    "def build(items, cached=False):\n"
    "    if cached:\n"
    "        return DataLoader(items, batch_size=4, num_workers=2)\n"
    "    else:\n"
    "        return DataLoader(items, batch_size=4)\n\n\n"
    "def train(items=(), cached=True):\n"
    "    return build(items, cached=cached)\n\n\n"
    "if __name__ == '__main__':\n"
    "    fire.Fire(train)\n"
)


def test_a_command_line_flag_reaches_either_arm(tmp_path):
    """``fire.Fire(train)``: the user may pass ``--cached=False``, so a ``True`` default
    (as a ``False`` one) leaves both arms live."""
    assert _findings(_project(tmp_path, {"cli.py": CLI, "other.py": "x = 1\n"}, "TPF101"), ".") == [("cli.py", 9, "TPF101")]
    (tmp_path / "off").mkdir()
    bare = CLI.replace("if __name__ == '__main__':\n    fire.Fire(train)\n", "train()\n")
    assert _findings(_project(tmp_path / "off", {"cli.py": bare, "other.py": "x = 1\n"}, "TPF101"), ".") == []


def test_a_comprehension_variable_named_like_the_flag_is_not_the_flag(tmp_path):
    text = (
        "from torch.utils.data import DataLoader\n\n\n"
        "def build(items, lazy=False):\n"
        "    return [DataLoader(items) if lazy else None for lazy in (True, False)]\n\n\n"
        "def main(items):\n"
        "    return build(items)\n"
    )
    root = _project(tmp_path, {"make.py": text, "other.py": "x = 1\n"}, "TPF101")
    assert _findings(root, ".") == [("make.py", 5, "TPF101")]
    (tmp_path / "plain").mkdir()
    plain = text.replace(" for lazy in (True, False)]", "][0]")
    assert _findings(_project(tmp_path / "plain", {"make.py": plain, "other.py": "x = 1\n"}, "TPF101"), ".") == []
