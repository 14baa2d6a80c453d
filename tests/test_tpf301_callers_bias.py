"""TPF301 where the call alone does not say whether the bias is on (issue 22, review-9's
misses): a conv built with the ``**kwargs`` of its constructor, to which no project caller
passes ``bias``; and ``if flag: layers += [nn.BatchNorm2d(c)]`` right after the conv is
added, where every caller turns the flag on. Scratch projects with look-alikes: a caller
that passes ``bias=False``, a caller's unknown dict, a changed ``kwargs``, a caller that
leaves the flag off, a norm that does not follow the conv."""

from __future__ import annotations

from test_cache_project import _findings  # noqa: E402
from test_module_values import _project  # noqa: E402

UNIT = (
    "import torch.nn as nn\n\n\n"
    "class Unit(nn.Module):\n"
    "    def __init__(self, cin, cout, size, **extra):\n"
    "        super().__init__()\n"
    "        self.conv = nn.Conv2d(cin, cout, size, **extra)\n"
    "        self.norm = nn.BatchNorm2d(cout)\n\n"
    "    def forward(self, x):\n"
    "        return self.norm(self.conv(x)).relu()\n"
)
NET = (
    "import torch.nn as nn\n\nfrom blocks import Unit\n\n\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.a = Unit(3, 8, 3, padding=1)\n"
    "        self.b = Unit(8, 16, 3, stride=2, padding=1)\n"
)


def test_a_conv_built_with_kwargs_no_caller_gives_a_bias(tmp_path):
    root = _project(tmp_path, {"blocks.py": UNIT, "net.py": NET}, "TPF301")
    assert _findings(root, ".") == [("blocks.py", 7, "TPF301")]


def test_a_caller_that_passes_bias_false_leaves_it_unknown(tmp_path):
    net = NET.replace("stride=2, padding=1)", "stride=2, padding=1, bias=False)")
    assert _findings(_project(tmp_path, {"blocks.py": UNIT, "net.py": net}, "TPF301"), ".") == []


def test_a_caller_that_spreads_an_unknown_dict_leaves_it_unknown(tmp_path):
    net = NET.replace("Unit(8, 16, 3, stride=2, padding=1)", "Unit(8, 16, 3, **options)")
    assert _findings(_project(tmp_path, {"blocks.py": UNIT, "net.py": net}, "TPF301"), ".") == []


def test_kwargs_changed_in_the_constructor_are_not_read(tmp_path):
    unit = UNIT.replace("        super().__init__()\n", "        super().__init__()\n        extra.setdefault('dilation', 1)\n")
    assert _findings(_project(tmp_path, {"blocks.py": unit, "net.py": NET}, "TPF301"), ".") == []


def test_without_any_caller_the_kwargs_are_unknown(tmp_path):
    assert _findings(_project(tmp_path, {"blocks.py": UNIT}, "TPF301"), ".") == []


STACK = (
    "import torch.nn as nn\n\n\n"
    "def stack(widths, with_norm=False):\n"
    "    parts = []\n"
    "    cin = 3\n"
    "    for w in widths:\n"
    "        parts += [nn.Conv2d(cin, w, 3, padding=1)]\n"
    "        if with_norm:\n"
    "            parts += [nn.BatchNorm2d(w)]\n"
    "        parts += [nn.ReLU()]\n"
    "        cin = w\n"
    "    return nn.Sequential(*parts)\n"
)
USERS = (
    "from layers import stack\n\n\n"
    "def small():\n    return stack([8, 16], with_norm=True)\n\n\n"
    "def large():\n    return stack([32, 64, 64], with_norm=True)\n"
)


def test_a_norm_added_under_a_flag_every_caller_turns_on(tmp_path):
    root = _project(tmp_path, {"layers.py": STACK, "users.py": USERS}, "TPF301")
    assert _findings(root, ".") == [("layers.py", 8, "TPF301")]


def test_a_caller_that_leaves_the_flag_off_keeps_it_silent(tmp_path):
    users = USERS + "\n\ndef plain():\n    return stack([8])\n"
    assert _findings(_project(tmp_path, {"layers.py": STACK, "users.py": users}, "TPF301"), ".") == []


def test_a_norm_under_the_flag_that_does_not_follow_the_conv(tmp_path):
    stack = STACK.replace("            parts += [nn.BatchNorm2d(w)]\n", "            parts += [nn.ReLU(), nn.BatchNorm2d(w)]\n")
    assert _findings(_project(tmp_path, {"layers.py": stack, "users.py": USERS}, "TPF301"), ".") == []


def test_a_flag_with_an_else_arm_is_not_read_as_straight_line(tmp_path):
    stack = STACK.replace(
        "            parts += [nn.BatchNorm2d(w)]\n",
        "            parts += [nn.BatchNorm2d(w)]\n        else:\n            parts += [nn.Dropout()]\n",
    )
    assert _findings(_project(tmp_path, {"layers.py": stack, "users.py": USERS}, "TPF301"), ".") == []
