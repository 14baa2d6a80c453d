"""TPF401 reads arrays from other definitions through the project index, and TPF402 follows
fresh host tensors through chains and earlier statements; each with look-alikes that must
stay silent (a helper that may return something else, a name used before its move...)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Tuple

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project.index import ProjectIndex
from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.testing import fix_example, lint_example

from project_tree import write_project

MARK = "#!"


def _findings(root: Path, files: Mapping[str, str], code: str) -> List[Tuple[str, int]]:
    write_project(root, {"pyproject.toml": f'[tool.pytorch-perflint]\nselect = ["{code}"]\n', **files})
    settings = load_settings([root])
    results, _ = runner.run(sorted(root.rglob("*.py")), settings, jobs=1)
    return sorted(
        (Path(d.path).name, d.location.row) for result in results for d in result.diagnostics if d.code == code
    )


def _marked(files: Mapping[str, str]) -> List[Tuple[str, int]]:
    import textwrap

    out = []
    for name, source in files.items():
        lines = textwrap.dedent(source).lstrip("\n").splitlines()
        out += [(name, row) for row, line in enumerate(lines, start=1) if line.rstrip().endswith(MARK)]
    return sorted(out)


HELPERS = {
    "helpers.py": """
        import numpy as np
        import h5py

        def load(path):
            return np.load(path + "x")

        def grid(n):
            points = np.linspace(0.0, 1.0, n)
            return np.concatenate([points, points])

        def maybe(n):
            if n:
                return np.zeros(n)
            return []

        def rows(n):
            for i in range(n):
                yield np.zeros(i)

        def read(path):
            with h5py.File(path, "r") as f:
                return f["x"][:]

        def read_one(path):
            with h5py.File(path, "r") as f:
                return f["x"][0]

        def read_text(path):
            with open(path) as f:
                return f["x"][:]

        def inverse(m):
            return np.linalg.inv(m)
    """,
    "use.py": """
        import torch
        from helpers import grid, inverse, load, maybe, read, read_one, read_text, rows

        a = torch.tensor(grid(3))  #!
        b = torch.tensor(load("p"))  # np.load of a path not known: an .npz would make it raise  #!
        c = torch.tensor(maybe(3))
        d = torch.tensor(rows(3))
        e = torch.tensor(read("p"))  #!
        f = torch.tensor(read_one("p"))
        g = torch.tensor(read_text("p"))
        h = torch.tensor(inverse(m))  #!

        def shadow(grid):
            return torch.tensor(grid(3))
    """,
}

METHODS = {
    "model.py": """
        import numpy as np
        import torch

        class Base:
            def __init__(self, n):
                self.table = np.eye(n)
                self.scale = 2.0
                self.later = np.zeros(n)
                self.parts = Parts(n)

            def _build(self, n):
                return np.stack([np.ones(n), np.zeros(n)])

            def reset(self):
                self.later = None

            def tensors(self, n):
                built = torch.tensor(self._build(n))  #!
                table = torch.tensor(self.table)  #!
                scale = torch.tensor(self.scale)
                later = torch.tensor(self.later)
                parts = torch.tensor(self.parts.data["field"])  #!
                helper = torch.tensor(self.parts.size)
                return built, table, scale, later, parts, helper

            @staticmethod
            def static(self):
                return torch.tensor(self.table)

        class Parts:
            def __init__(self, n):
                self.size = n
                self.data = np.zeros(n, dtype=[("field", np.float32)])
    """,
}


@pytest.mark.parametrize("files", [HELPERS, METHODS], ids=["helpers", "methods"])
def test_arrays_from_other_definitions(tmp_path: Path, files):
    assert _findings(tmp_path, files, "TPF401") == _marked(files)


def test_the_with_binding_keeps_the_managers_form(tmp_path: Path):
    write_project(tmp_path, HELPERS)
    index = ProjectIndex(tmp_path)
    body = index.function_body(index.resolve(tmp_path / "use.py", "read"))
    assert body is not None
    binding = body.binding("f")
    assert binding is not None and type(binding.form).__name__ == "Call"
    assert binding.form.func.attr == "__enter__"


def test_a_lone_file_knows_its_own_definitions():
    """RULES.md's "Known values": a function's return value in the same module is known,
    also when the file is linted as a project of its own (its callers elsewhere are not)."""
    rule = rule_by_code("TPF401")
    code = "import numpy as np\nimport torch\ndef grid():\n    return np.zeros(3)\nx = torch.tensor(grid())\n"
    assert [line for line, _ in lint_example(rule, code)] == [5]


TPF402_CASES = [
    ("import torch\nx = torch.FloatTensor(2, 3).fill_(0).to(device)\n", [2]),
    ("import torch\nx = torch.LongTensor([1, 2]).to('cuda')\n", [2]),
    ("import torch\nx = torch.randperm(5).cuda()\n", [2]),
    ("import torch\nx = torch.zeros(2, 3).float().view(-1).to(device)\n", [2]),
    ("import torch\nx = torch.rand(2, 1)\ny = 3\nx = x.expand_as(t).to(t.device)\n", [4]),
    ("import torch\nfor i in range(3):\n    z = torch.randn(2)\n    z = z.cuda()\n", [4]),
    # look-alikes
    ("import torch\nx = torch.FloatTensor(2, 3).zero_()\n", []),
    ("import torch\nx = torch.zeros(2).to(other)\n", []),
    ("import torch\nx = torch.zeros(2).to(torch.float16)\n", []),
    ("import torch\nx = torch.zeros(2).float().to('cpu')\n", []),
    ("import torch\nz = torch.randn(2)\nif z.sum() > 0:\n    pass\nz = z.cuda()\n", []),
    ("import torch\nz = torch.randn(2)\nz = torch.cat([z, z.cuda()])\n", []),
    ("import torch\nz = make()\nz = z.cuda()\n", []),
    ("import torch\nz = torch.randn(2)\ndef f():\n    z = z.cuda()\n", []),
    ("import torch\ntorch.set_default_device('cuda')\nx = torch.randn(3).cuda()\n", []),
    ("import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\nx = torch.Tensor(3).cuda()\n", []),
]


@pytest.mark.parametrize(("code", "lines"), TPF402_CASES)
def test_tpf402_chains_legacy_and_separate_statements(code, lines):
    assert [line for line, _ in lint_example(rule_by_code("TPF402"), code)] == lines


def test_a_legacy_constructor_has_no_fix_but_still_reports_under_default_float_type():
    rule = rule_by_code("TPF402")
    code = "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\nx = torch.FloatTensor(3).cuda()\n"
    assert lint_example(rule, code) == [(3, "TPF402")]
    assert fix_example(rule, code) == code


def test_a_separate_statement_fix_creates_on_the_device_and_keeps_the_chain():
    rule = rule_by_code("TPF402")
    code = "import torch\na = torch.rand(2, 1)\nb = 1\na = a.expand(2, 3).to('cuda')\n"
    fixed = "import torch\na = torch.rand(2, 1, device='cuda')\nb = 1\na = a.expand(2, 3)\n"
    assert fix_example(rule, code, unsafe=False) == code  # random: the fix is unsafe
    assert fix_example(rule, code) == fixed


def test_a_separate_statement_whose_device_is_named_later_has_no_fix():
    """`mixed` is bound between the creation and the move: `device=mixed.device` in the
    creating line would read it before it exists."""
    rule = rule_by_code("TPF402")
    code = "import torch\na = torch.rand(2, 1)\nmixed = make()\na = a.expand_as(mixed).to(mixed.device)\n"
    assert lint_example(rule, code) == [(4, "TPF402")]
    assert fix_example(rule, code) == code


def test_project_screen_drops_a_file_whose_helpers_never_return_arrays(tmp_path: Path):
    """Before LibCST, TPF401 asks the index whether the project functions a candidate's
    argument comes from can return an array: a file calling only helpers that may return
    something else is dropped, one calling an array helper is kept (and reported)."""
    import ast

    quiet = "import torch\nfrom helpers import load, maybe, rows\n\nx = maybe(3)\na = torch.tensor(x)\nb = torch.tensor(rows(3))\n"
    write_project(tmp_path, {**HELPERS, "quiet.py": quiet})
    index = ProjectIndex(tmp_path)
    rule = rule_by_code("TPF401")
    for name, kept in (("quiet.py", False), ("use.py", True)):
        path = tmp_path / name
        tree = ast.parse(path.read_text())
        assert rule.could_fire_tree(tree)  # without the project, helpers may give arrays
        assert rule.could_fire_project(tree, str(path), index) is kept


# What the value engine adds (issue 22): arrays through unpacking of library tuples, archive
# keys and slices, attributes set in any method, fancy indexing, arithmetic and `.astype`,
# comprehension elements; each with a look-alike that stays silent.
ENGINE = {
    "buffer.py": """
        import numpy as np
        import torch

        class Replay:
            def __init__(self, size, dim):
                self.state = np.zeros((size, dim))
                self.reward = np.zeros(size)
                self.count = 0
                self.names = []

            def reset(self, size, dim):
                self.state = np.empty((size, dim), dtype=np.float32)

            def sample(self, batch):
                ind = np.random.randint(0, self.count, size=batch)
                s = torch.FloatTensor(self.state[ind])  #!
                r = torch.FloatTensor(self.reward[ind] * 0.5)  #!
                one = torch.tensor(self.state[self.count])
                names = torch.tensor(self.names)
                shape = torch.tensor(self.state.shape)
                return s, r, one, names, shape
    """,
    "data.py": """
        import numpy as np
        import torch

        def split(labels, path):
            pos = np.where(labels > 0)[0]
            values, inverse = np.unique(labels, return_inverse=True)
            archive = np.load(path)
            images = archive["images"][:]
            a = torch.tensor(pos)  #!
            b = torch.tensor(inverse)  #!
            c = torch.tensor(images)  #!
            d = torch.tensor(archive["labels"].astype(np.int64))  #!
            e = torch.tensor(np.where(labels > 0))
            f = torch.tensor(np.load(path, allow_pickle=True)["x"])
            g = [torch.tensor(x) for x in (pos, inverse)]  #!
            h = torch.tensor(labels)
            if labels.any():
                chosen = pos
            else:
                chosen = []
            i = torch.tensor(chosen)
            return a, b, c, d, e, f, g, h, i
    """,
}


def test_the_value_engine_closes_recall_cases(tmp_path: Path):
    assert _findings(tmp_path, ENGINE, "TPF401") == _marked(ENGINE)


PARAMETERS = {
    "agent.py": """
        import numpy as np
        import torch

        def to_tensor(x):
            return torch.FloatTensor(x)  #!

        def mixed(x):
            return torch.tensor(x)

        def unused(x):
            return torch.tensor(x)

        class Agent:
            def _prep(self, obs):
                return torch.tensor(obs)  #!

            def act(self, obs):
                return self._prep(np.array(obs, dtype=np.float32))

            def public(self, obs):
                return torch.tensor(obs)  #!

            def escaped(self, obs):
                return torch.tensor(obs)

        class Net(torch.nn.Module):
            def forward(self, obs):
                return torch.tensor(obs)
    """,
    "main.py": """
        import numpy as np
        from agent import Agent, Net, mixed, to_tensor

        to_tensor(np.zeros(3))
        to_tensor(np.ones(3) / 2)
        mixed(np.zeros(3))
        mixed([1, 2])
        Agent().public(np.zeros(3))
        Agent().escaped(np.zeros(3))
        handler = Agent().escaped
        Net().forward(np.zeros(3))
    """,
}


def test_a_parameter_is_an_array_when_every_project_caller_passes_one(tmp_path: Path):
    assert _findings(tmp_path, PARAMETERS, "TPF401") == _marked(PARAMETERS)


def test_a_comprehension_element_alone_in_its_file(tmp_path: Path):
    files = {"only.py": "import numpy as np\nimport torch\n\nxs = [torch.tensor(a) for a in (np.zeros(2), np.ones(2))]  #!\n"}
    assert _findings(tmp_path, files, "TPF401") == _marked(files)
