"""The value-flow engine (``project/values.py``) on small multi-module projects: each
mechanism, with the look-alikes it must leave unknown."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Mapping

import pytest

from pytorch_perflint.project.kinds import Array, Arrays, Flag, Instance, Items, Number, Unknown
from pytorch_perflint.project import values
from pytorch_perflint.project.scopes import build_scope, expression_form
from pytorch_perflint.project.values import Where, engine_for
from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import lint_example

from project_tree import index_of


def _answer(tmp_path: Path, files: Mapping[str, str], expression: str, module: str = "main.py"):
    """The engine's answer for ``expression`` read at the end of ``module``."""
    index = index_of(tmp_path, files)
    path = os.path.abspath(tmp_path / module)
    text = index.text(path)
    assert text is not None
    scope = build_scope(ast.parse(text), {}, path, None)
    form = expression_form(ast.parse(expression, mode="eval").body, scope)
    return engine_for(index).answer(form, Where(path, scope, len(text.splitlines()) + 1))


def _kind(tmp_path: Path, files: Mapping[str, str], expression: str):
    return _answer(tmp_path, files, expression).kind


LOADERS = """
    import numpy as np
    from . import reader

    def load(path):
        data = reader.read(path)
        return data.astype(np.float32) / 255.0

    def load_list(path):
        return [1, 2]
"""
READER = """
    import numpy as np

    def read(path):
        with open(path) as handle:
            raw = np.frombuffer(handle.read(), dtype=np.uint8)
        return raw
"""


def test_returns_of_project_functions_at_any_depth_and_the_modules_read(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/loaders.py": LOADERS, "pkg/reader.py": READER, "main.py": "from pkg import loaders\nx = loaders.load('p')\ny = loaders.load_list('p')\n"}
    answer = _answer(tmp_path, files, "x")
    assert answer.kind == Array()
    assert {os.path.basename(p) for p in answer.reads} >= {"loaders.py", "reader.py"}
    assert type(_kind(tmp_path, files, "y")) is Items


def test_recursion_is_cut_and_unknown(tmp_path):
    files = {"main.py": "import numpy as np\ndef f(n):\n    return f(n - 1) if n else np.zeros(3)\nx = f(3)\n"}
    assert type(_kind(tmp_path, files, "x")) is Unknown


PARAMS = """
    import numpy as np

    def _scale(values, factor=2.0):
        return values * factor

    def _pick(values):
        return values

    def _copy(values):
        return values.copy()

    def _default(values=np.zeros(3)):
        return values

    a = _scale(np.array([1, 2]))
    b = _scale(np.ones(2), factor=3)
    c = _pick(np.ones(2))
    d = _pick([1, 2])
    e = _default()
    f = _copy(np.ones(2))
    g = _copy([1, 2])
"""


@pytest.mark.parametrize(("expression", "expected"), [("a", Array()), ("b", Array()), ("e", Array())])
def test_parameters_from_every_caller_and_defaults(tmp_path, expression, expected):
    assert _kind(tmp_path, {"main.py": PARAMS}, expression) == expected


def test_parameters_whose_callers_disagree_are_unknown(tmp_path):
    # ``_copy`` reads its parameter, which its two callers fill with an array and a list.
    assert type(_kind(tmp_path, {"main.py": PARAMS}, "f")) is Unknown


def test_a_function_that_returns_its_parameter_gives_what_each_call_passes(tmp_path):
    # (Before the loaders' slice of issue 22, ``c`` was unknown too: the parameter's callers
    # disagree. A pass-through is read at the call instead.)
    assert _kind(tmp_path, {"main.py": PARAMS}, "c") == Array()
    assert type(_kind(tmp_path, {"main.py": PARAMS}, "d")) is Items  # the list passed there


CLASSES = """
    import numpy as np
    import torch.nn as nn

    class Buffer:
        size = np.zeros(4)

        def __init__(self, n):
            self.state = np.zeros((n, 3))
            self.mixed = np.zeros(n)
            self.later = None

        def reset(self, n):
            self.state = np.empty((n, 3))
            self.mixed = [0] * n

        def sample(self, ind):
            return self.state[ind]

        def batch(self):
            return self.state[np.random.randint(0, 10, size=4)]

        def row(self, i):
            return self.state[i]

    class Child(Buffer):
        pass

    class Net(nn.Module):
        def forward(self, x):
            return np.zeros(3)

    buf = Child(5)
    net = Net()
"""


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("buf.state", Array()),  # set in __init__ and in reset: both arrays
        ("buf.size", Array()),  # a class attribute
        ("buf.batch()", Array()),  # inherited method, fancy index by an array
        ("buf.state[:, 0]", Array()),
        ("net(np.ones(3))", Array()),  # module(x) runs forward
    ],
)
def test_attributes_and_method_dispatch(tmp_path, expression, expected):
    assert _kind(tmp_path, {"main.py": CLASSES}, expression) == expected


@pytest.mark.parametrize("expression", ["buf.mixed", "buf.later", "buf.row(1)", "buf.state.shape", "buf.state[0]"])
def test_attribute_look_alikes_are_not_arrays(tmp_path, expression):
    assert type(_kind(tmp_path, {"main.py": CLASSES}, expression)) is not Array


def test_instances_of_project_classes(tmp_path):
    kind = _kind(tmp_path, {"main.py": CLASSES}, "buf")
    assert type(kind) is Instance and kind.klass.name == "Child"


CONTAINERS = """
    import numpy as np

    pair = (np.zeros(3), 1)
    table = {"a": np.zeros(3), "b": [1]}
    idx = np.where(np.zeros(3) > 0)
    uniq, inverse = np.unique(np.zeros(3), return_inverse=True)
    archive = np.load(path)
    states = [np.zeros(3), np.ones(3)]
    rows = [s * 2 for s in states]
    total = 0
    for s in states:
        total += 1
    first = np.zeros(3)
    first += 1
    if flag:
        branch = np.zeros(3)
    else:
        branch = np.ones(2)
    if flag:
        other = np.zeros(3)
    else:
        other = []
"""


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("pair[0]", Array()),
        ("pair[1]", Number(1)),  # a literal number keeps its value (loader arguments read it)
        ("{'a': np.zeros(3)}['a']", Array()),
        ("idx", Arrays()),
        ("idx[0]", Array()),
        ("inverse", Array()),
        ("archive['x']", Array()),
        ("archive['x'][:]", Array()),
        ("first", Array()),
        ("branch", Array()),
        ("np.zeros((2, 2)).T.astype(np.float32) - 1", Array()),
    ],
)
def test_containers_unpacking_and_library_values(tmp_path, expression, expected):
    assert _kind(tmp_path, {"main.py": CONTAINERS}, expression) == expected


@pytest.mark.parametrize("expression", ["archive", "other", "total", "np.unique(np.zeros(3), return_inverse=flag)[0]"])
def test_container_look_alikes_stay_unknown(tmp_path, expression):
    assert type(_kind(tmp_path, {"main.py": CONTAINERS}, expression)) is not Array


FACTORIES = {
    "models/__init__.py": "from .nets import resnet, Wide\n",
    "models/nets.py": "import numpy as np\n\ndef resnet():\n    return np.zeros(3)\n\nclass Wide:\n    pass\n",
    "main.py": "import models\narch = 'resnet'\na = models.__dict__[arch]()\nb = getattr(models, 'Wide')()\nc = models.__dict__[name]()\n",
}


def test_factories_chosen_by_name(tmp_path):
    assert _kind(tmp_path, FACTORIES, "a") == Array()
    kind = _kind(tmp_path, FACTORIES, "b")
    assert type(kind) is Instance and kind.klass.name == "Wide"
    assert type(_kind(tmp_path, FACTORIES, "c")) is Unknown


def test_a_changed_module_is_read_again(tmp_path):
    files = {"main.py": "from helpers import make\nx = make()\n", "helpers.py": "import numpy as np\ndef make():\n    return np.zeros(3)\n"}
    index = index_of(tmp_path, files)
    path = os.path.abspath(tmp_path / "main.py")
    scope = build_scope(ast.parse(index.text(path)), {}, path, None)
    engine = engine_for(index)
    assert engine.kind_of(expression_form(ast.parse("x", mode="eval").body, scope), Where(path, scope, 3)) == Array()
    index.summary(tmp_path / "helpers.py", source="def make():\n    return [1, 2, 3, 4]\n")  # an editor's buffer
    assert type(engine.kind_of(expression_form(ast.parse("x", mode="eval").body, scope), Where(path, scope, 3))) is Items


SUBCLASSES = """
    import numpy as np

    class Base:
        def __init__(self):
            self.state = np.zeros(3)

        def get(self):
            return self.state

        def make(self):
            return np.zeros(3)

        def read(self):
            return self.state, self.make()

    class Listy(Base):
        def __init__(self):
            self.state = [0.0]

        def make(self):
            return [0.0]

    base = Base()
    listy = Listy()
    xs = [np.zeros(3)]
    xs.insert(0, [1.0])
    first = xs[0]
    ys = [np.zeros(3)]
    kept = ys[0]
"""


@pytest.mark.parametrize("expression", ["base.read()[0]", "base.read()[1]", "listy.get()", "listy.make()", "first"])
def test_a_method_self_may_be_a_subclass_and_lists_change(tmp_path, expression):
    """In ``Base.read``, ``self`` may be a ``Listy``: its assignment and override count; a
    list changed other than by appends is not known by its display (appends:
    ``test_flows_project``)."""
    assert type(_kind(tmp_path, {"main.py": SUBCLASSES}, expression)) is not Array


def test_an_exact_instance_and_an_unchanged_list(tmp_path):
    assert _kind(tmp_path, {"main.py": SUBCLASSES}, "base.state") == Array()
    assert _kind(tmp_path, {"main.py": SUBCLASSES}, "base.make()") == Array()
    assert _kind(tmp_path, {"main.py": SUBCLASSES}, "kept") == Array()


MAPPED = [
    ("import torch\nimport numpy as np\ns = 'héllo'; x = torch.tensor((np.zeros(3)))\n", [3]),  # columns past non-ASCII text, parentheses
    ("import torch\nimport numpy as np\nx = torch.tensor(\n    (np.zeros(3)\n     / 2.0)\n)\n", [3]),
    ("import torch\nimport numpy as np\n@dec(torch.tensor(np.zeros(3)))\ndef f():\n    pass\n", [3]),  # a decorator
    ("import torch\nimport numpy as np\nclass A:\n    z = np.zeros(3)\n    t = torch.tensor(z)\n", [5]),  # a class body
    ("import torch\nimport numpy as np\nclass A:\n    z = np.zeros(3)\n    def f(self):\n        return torch.tensor(z)\n", []),
    ("import torch\nimport numpy as np\ndef f(x=np.zeros(3)):\n    return torch.tensor(x)\n", []),  # a lone file: callers not known
]


@pytest.mark.parametrize(("code", "lines"), MAPPED)
def test_a_libcst_node_is_read_at_its_ast_twin(code, lines):
    assert [line for line, _ in lint_example(rule_by_code("TPF401"), code)] == lines


def test_a_large_project_reads_callers_of_names_few_modules_spell(tmp_path, monkeypatch):
    """Past the scanning bound a flag parameter is read through the index of the words each
    module spells, only for a function whose name no other module spells: other
    parameters and common names stay unknown without a scan (the torch package's cold
    run stays cheap)."""
    from pytorch_perflint.project import parameter_values, word_index

    flags = {"main.py": "def run(x, fast=False):\n    return fast\n\nv = run(1)\nw = run(2, fast=False)\n"}

    def fast(root: Path):
        index = index_of(root, flags)
        engine = engine_for(index)
        where = engine._where_in(index.resolve(os.path.abspath(root / "main.py"), "run"), 2)
        return engine.answer(expression_form(ast.parse("fast", mode="eval").body, where.scope), where).kind

    monkeypatch.setattr(values, "MAX_SCANNED_MODULES", 0)
    monkeypatch.setattr(word_index, "MAX_SCANNED_MODULES", 0)
    assert fast(tmp_path / "few") == Flag(False)  # a flag of a name only its module spells
    assert type(_kind(tmp_path / "array", {"main.py": PARAMS}, "a")) is Unknown  # not a flag: not read
    monkeypatch.setattr(parameter_values, "MAX_NAMING_MODULES", 0)
    assert type(fast(tmp_path / "many")) is Unknown


TABLES = {
    "zoo.py": (
        "import numpy as np\n\ndef ones():\n    return np.ones(3)\n\ndef zeros():\n    return np.zeros(3)\n\n"
        "def text():\n    return 'a'\n\n"
        "ARRAYS = {'ones': ones, 'zeros': zeros}\nMIXED = {'ones': ones, 'text': text}\n"
        "CHANGED = {'ones': ones}\nCHANGED['text'] = text\nSTARRED = {'ones': ones, **other}\n"
    ),
    "main.py": (
        "from zoo import ARRAYS, MIXED, CHANGED, STARRED, ones\n"
        "a = ARRAYS[name]()\nb = MIXED['ones']()\nc = MIXED[name]()\nd = CHANGED[name]()\ne = STARRED[name]()\n"
        "def f(key):\n    local = {'x': ones, 'y': ones}\n    return local[key]()\ng = f(name)\n"
    ),
}


@pytest.mark.parametrize("expression, known", [("a", True), ("b", True), ("g", True), ("c", False), ("d", False), ("e", False)])
def test_a_factory_table_chosen_by_name(tmp_path, expression, known):
    """``table[name](...)``: the entry a literal key names, else every entry (known when
    they agree); a table changed in place or with ``**`` entries is not read."""
    kind = _kind(tmp_path, TABLES, expression)
    assert (kind == Array()) if known else type(kind) is Unknown
