"""Issue 22: a folder a script puts on ``sys.path`` before importing project code is an
import root for that script's imports, read only from what the text says; a cached result
that resolved an import through it depends on the module that adds it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytorch_perflint.project.import_paths import added_paths
from pytorch_perflint.project.index import ProjectIndex

from test_cache_project import _findings, _rewrite  # noqa: E402


def _added(source: str):
    return [folder for _, folder in added_paths(ast.parse(source), source)]


@pytest.mark.parametrize(
    "source, folders",
    [
        ("import sys\nsys.path.insert(0, '../lib')\n", ["../lib"]),
        ("import sys, os\nsys.path.append(os.path.join(os.path.dirname(__file__), 'lib'))\n", ["lib"]),
        ("import sys\nimport os.path as osp\nhere = osp.dirname(osp.abspath(__file__))\nsys.path.insert(0, osp.join(here, '..', 'src'))\n", ["../src"]),
        ("import sys\nfrom os.path import dirname, join\nsys.path.append(dirname(dirname(__file__)))\n", [".."]),
        ("import sys\nfrom pathlib import Path\nsys.path.append(str(Path(__file__).resolve().parents[1] / 'pkgs'))\n", ["../pkgs"]),
        ("import sys\ndef add(p):\n    if p not in sys.path:\n        sys.path.insert(0, p)\nadd('vendor')\n", ["vendor"]),
        ("import sys\nif True:\n    sys.path.append('tools')\n", ["tools"]),
        # unknown: environment, command line, absolute, home, a name bound to anything else
        ("import sys, os\nsys.path.insert(0, os.environ['ROOT'])\n", []),
        ("import sys\nsys.path.append(sys.argv[1])\n", []),
        ("import sys\nsys.path.append('/opt/code/lib')\n", []),
        ("import sys\nsys.path.append('~/lib')\n", []),
        ("import sys, os\nbase = os.getenv('X', '.')\nsys.path.append(os.path.join(base, 'lib'))\n", []),
        ("import sys\ndef helper():\n    sys.path.append('lib')\n", []),  # never called at import
        ("import sys\nsys.path.append('{}/python'.format(root))\n", []),
        ("path = []\npath.append('lib')\nimport sys\n", []),  # not sys.path
        ("import sys\nlib = 'lib'\nfor lib in find():\n    pass\nsys.path.append(lib)\n", []),  # rebound by a loop
        ("import sys\nlib = 'lib'\nlib += '2'\nsys.path.append(lib)\n", []),
        ("import sys\nif fast:\n    lib = 'a'\nelse:\n    lib = 'b'\nsys.path.append(lib)\n", []),  # either branch
        ("import sys, os\nhere = os.path.dirname(__file__)\nhere = os.path.join(here, 'x')\nsys.path.append(here)\n", ["x"]),
    ],
)
def test_the_folders_a_module_adds_are_read_only_from_what_is_known(source, folders):
    assert _added(source) == folders


GATED = [
    "from sys import path as p\np.insert(0, 'lib')\n",
    "try:\n    import sys as s\nexcept ImportError:\n    pass\ns.path.append('lib')\n",
    "with ctx():\n    import sys.path as sp\nsp.append('lib')\n",
    "import sys\nif x:\n    def add(p):\n        sys.path.insert(0, p)\nelse:\n    pass\ntry:\n    pass\nfinally:\n    add('lib')\n",
    "import sys\nclass A:\n    lib = 'x'\nlib = 'lib'\nsys.path.append(lib)\n",
]


@pytest.mark.parametrize("source", GATED)
def test_the_screen_before_the_reader_lets_every_adding_module_through(source):
    """``_may_add`` skips the reader only where nothing can be added: each of these adds
    a folder (an alias of ``sys`` or ``sys.path``, imports and helpers under ``if``/
    ``try``/``with``), and each of the cases above reads the same without the screen."""
    from pytorch_perflint.project import import_paths

    assert import_paths._may_add(ast.parse(source).body)
    assert _added(source) == ["lib"]


def test_the_screen_changes_no_answer_of_the_reader():
    from pytorch_perflint.project import import_paths

    sources = [source for source, _ in test_the_folders_a_module_adds_are_read_only_from_what_is_known.pytestmark[0].args[1]]
    for source in sources + GATED + ["import os\nos.path.join('a')\n", "import sys\nx.extend(['lib'])\n"]:
        tree = ast.parse(source)
        reader = import_paths._Reader(tree)
        reader.statements(tree.body)
        assert list(added_paths(tree, source)) == reader.out, source
    # no import of sys; no call statement that could add (a helper only defined)
    for source in ("import os\nos.path.join('a')\nsys.path.append('x')\n", "import sys\ndef f(p):\n    sys.path.append(p)\n"):
        assert not import_paths._may_add(ast.parse(source).body)


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_an_import_resolves_through_the_added_folder_only_after_the_line_that_adds_it(tmp_path):
    root = _write(
        tmp_path,
        {
            "pyproject.toml": "",
            "lib/nets.py": "X = 1\n",
            "run/a.py": "import sys\nimport nets as early\nsys.path.append('../lib')\nimport nets\n",
            "run/b.py": "import sys, os\nsys.path.append(os.environ['LIB'])\nimport nets\n",
            "run/c.py": "import sys\nsys.path.append('../../lib')\nimport nets\n",  # outside the project
        },
    )
    index = ProjectIndex(root)
    imports = {r.line: r for r in index.summary(root / "run/a.py").imports}
    assert not index.import_target(str(root / "run/a.py"), imports[2]).in_project
    assert index.import_target(str(root / "run/a.py"), imports[4]).path == str(root / "lib/nets.py")
    for name in ("run/b.py", "run/c.py"):
        (record,) = [r for r in index.summary(root / name).imports if r.module == "nets"]
        assert not index.import_target(str(root / name), record).in_project
    assert str(root / "lib/nets.py") in index.import_graph()[str(root / "run/a.py")]


PATHS = "import os.path as osp\nimport sys\n\n\ndef put(folder):\n    sys.path.insert(0, folder)\n\n\nput(osp.join(osp.dirname(__file__), {where!r}))\n"
TRAIN = (
    "import _paths\nimport torch\n\nfrom nets import ConvNet\n\n\ndef fit(batches):\n"
    "    model = ConvNet().cuda()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in batches:\n        loss = model(x.cuda()).sum()\n        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
)
NETS = "import torch.nn as nn\n\n\nclass ConvNet(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n    def forward(self, x):\n        return self.conv(x)\n"


def test_editing_the_path_line_of_the_helper_module_re_lints_the_script(tmp_path):
    root = _write(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF403"]\n',
            "tools/_paths.py": PATHS.format(where="../lib"),
            "tools/train.py": TRAIN,
            "lib/nets.py": NETS,
        },
    )
    found = [("train.py", 8, "TPF403")]
    assert _findings(root) == found
    assert _findings(root) == found  # a warm run
    _rewrite(root / "tools/_paths.py", PATHS.format(where="../vendor"))  # lib/ no longer on the path
    assert _findings(root) == []
    assert _findings(root, "tools/train.py") == []  # the one-file path too
    _rewrite(root / "tools/_paths.py", PATHS.format(where="../lib"))
    assert _findings(root, "tools/train.py") == found
    assert _findings(root) == found


def test_editing_the_scripts_own_path_line_re_lints_it(tmp_path):
    script = "import sys\nsys.path.append({where!r})\n" + TRAIN.replace("import _paths\n", "")
    root = _write(
        tmp_path,
        {"pyproject.toml": '[tool.pytorch-perflint]\nselect = ["TPF403"]\n', "tools/train.py": script.format(where="../lib"), "lib/nets.py": NETS},
    )
    assert _findings(root) == [("train.py", 9, "TPF403")]
    _rewrite(root / "tools/train.py", script.format(where="../elsewhere"))
    assert _findings(root) == []
    _rewrite(root / "tools/train.py", script.format(where="../lib"))
    assert _findings(root) == [("train.py", 9, "TPF403")]


def test_the_cached_graph_is_dropped_when_a_module_changes_the_folders_it_adds(tmp_path):
    """The edges of ``train.py`` depend on what ``_paths.py`` adds: a changed folder there
    makes the kept graph unknown; an edit that adds the same folders keeps it."""
    from pytorch_perflint import cache_graph

    root = _write(
        tmp_path,
        {"pyproject.toml": "", "tools/_paths.py": PATHS.format(where="../lib"), "tools/train.py": TRAIN, "lib/nets.py": NETS},
    )
    index = ProjectIndex(root)
    assert str(root / "lib/nets.py") in index.import_graph()[str(root / "tools/train.py")]
    state = cache_graph.state_of(index)
    assert state is not None and state.modules[str(root / "tools/_paths.py")][2] == [[9, "../lib"]]
    assert cache_graph.from_json(state.to_json()) == state
    _rewrite(root / "tools/_paths.py", PATHS.format(where="../lib") + "# a comment\n")
    kept, _ = cache_graph.checked(state, ProjectIndex(root))
    assert kept is not None and kept.adding() == {str(root / "tools/_paths.py"): ((9, "../lib"),)}
    _rewrite(root / "tools/_paths.py", PATHS.format(where="../vendor"))
    assert cache_graph.checked(kept, ProjectIndex(root))[0] is None


def test_an_edited_text_that_changes_the_added_folders_rebuilds_the_graph_in_memory(tmp_path):
    """The language server hands edited texts in: the graph is rebuilt when a module adds
    other folders, although that module's own imports did not change."""
    root = _write(
        tmp_path,
        {"pyproject.toml": "", "tools/_paths.py": PATHS.format(where="../lib"), "tools/train.py": TRAIN, "lib/nets.py": NETS},
    )
    index = ProjectIndex(root)
    train, nets = str(root / "tools/train.py"), str(root / "lib/nets.py")
    assert nets in index.import_graph()[train]
    index.summary(root / "tools/_paths.py", source=PATHS.format(where="../vendor"))
    assert nets not in index.import_graph()[train]


def test_an_import_no_project_name_spells_reads_no_helper_module(tmp_path):
    """``import yaml`` after ``import _paths``: no project module is called ``yaml``, so the
    answer reads neither ``_paths.py`` (the script's cached result does not depend on it)."""
    root = _write(
        tmp_path,
        {"pyproject.toml": "", "tools/_paths.py": PATHS.format(where="../lib"), "tools/train.py": "import _paths\nimport yaml\nimport nets\n", "lib/nets.py": NETS},
    )
    index = ProjectIndex(root)
    train = str(root / "tools/train.py")
    records = {r.module: r for r in index.summary(train).imports}
    with index.recording() as used:
        assert index.import_target(train, records["yaml"]).external == "yaml"
    assert str(root / "tools/_paths.py") not in used
    with index.recording() as used:
        assert index.import_target(train, records["nets"]).path == str(root / "lib/nets.py")
    assert str(root / "tools/_paths.py") in used  # the answer depends on the module that adds lib/


def test_a_dotted_import_binds_the_package_found_in_the_added_folder(tmp_path):
    """``import detect.nets`` binds ``detect``: ``detect.nets.ConvNet`` is the project class."""
    root = _write(
        tmp_path,
        {
            "pyproject.toml": "",
            "run/go.py": "import sys\nsys.path.insert(0, '../lib')\nimport detect.nets\n",
            "lib/detect/__init__.py": "",
            "lib/detect/nets.py": NETS,
        },
    )
    found = ProjectIndex(root).resolve(root / "run/go.py", "detect.nets.ConvNet")
    assert found is not None and found.kind == "class" and found.path == str(root / "lib/detect/nets.py")
