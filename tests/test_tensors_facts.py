"""Which expressions the value engine knows to be NumPy arrays in the linted file (asked
through ``FileContext.value_of``), and which it must not claim."""

from __future__ import annotations

from pathlib import Path
from typing import List

import functools

import libcst as cst
import pytest

from pytorch_perflint.context import FileContext
from pytorch_perflint.file_values import FileValues
from pytorch_perflint.project.kinds import Array
from pytorch_perflint.facts.tensors.device_targets import device_target
from pytorch_perflint.testing import settings_with

HEADER = "import numpy as np\nimport torch\nimport os\nimport pandas as pd\nimport cv2\n"


class _Probe(cst.BatchableCSTVisitor):
    """Evaluates the argument of every ``probe(...)`` call at its own place in the pass."""

    def __init__(self, context: FileContext, check) -> None:
        super().__init__()
        self.context = context
        self.check = check
        self.results: List[bool] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.results.append(bool(self.check(node.args[0].value, self.context)))


def _probe(code: str, check) -> List[bool]:
    source = HEADER + code
    module = cst.parse_module(source)
    context = FileContext(Path("t.py"), source, module, settings_with({}), values=functools.partial(FileValues, text=source))
    probe = _Probe(context, check)
    cst.visit_batched(module, [probe], context.enter, context.leave)
    return probe.results


ARRAYS = [
    "probe(np.zeros(3))",
    "probe(np.random.rand(2, 3))",
    "probe(np.random.uniform(0, 1, size=4))",
    "probe(np.random.normal(0, 1, (2, 2)))",
    "a = np.stack(xs)\nprobe(a)",
    "a = np.stack(xs)\nb = a / 255.0\nprobe(b)",
    "probe(t.detach().cpu().numpy())",
    "probe(np.load('x.npy'))",
    "probe(np.load(root + '/x.npy'))",
    "probe(np.load(os.path.join(root, 'x.npy')))",
    "probe(np.load(f'{root}/x.npy'))",
    "probe(np.load(path)['arr_0'])",
    "a = np.zeros((3, 4))\nprobe(a[:, 0])",
    "a = np.zeros((3, 4))\nprobe(a.astype(np.float32).T)",
    "rng = np.random.default_rng(0)\nprobe(rng.integers(0, 5, size=10))",
    "probe(np.where(m, 1.0, 0.0))",
    "df = pd.read_csv(p)\nprobe(df.iloc[:, 1:].values)",
    "df = pd.read_csv(p)\nprobe(df.drop(columns=['y'])[cols].to_numpy())",
    "probe(cv2.cvtColor(cv2.imread(p), cv2.COLOR_BGR2RGB))",
    "def f(batch):\n    s, a = zip(*batch)\n    s = np.array(s)\n    probe(s)",
    "def f(x):\n    x = np.asarray(x)\n    x[0] = 1\n    x = x / 255.0\n    probe(x)",
    "def f(root):\n    path = root + '/a.npy'\n    path2 = path\n    probe(np.load(path2))",
]
NOT_ARRAYS = [
    "probe([1, 2])",
    "probe(np.float32(1.0))",
    "probe(np.sum(a))",
    "probe(np.pi)",
    "probe(np.random.rand())",
    "probe(np.random.uniform(0, 1))",
    "probe(np.random.uniform(0, 1, size=None))",
    "probe(np.load(path))",
    "probe(np.load('x.npz'))",
    "probe(np.where(m))",
    "probe(np.linspace(0, 1, 5, retstep=True))",
    "a = np.zeros(3)\nprobe(a.shape)",
    "a = np.zeros(3)\nprobe(a.tolist())",
    "a = np.zeros(3)\nprobe(a[0])",
    "a = np.zeros(3)\nprobe(a * t)",
    "a = np.zeros(3)\na = torch.ones(3)\nprobe(a)",
    "def f(a):\n    probe(a)",
    "a = np.zeros(3)\n[probe(a) for a in rows]",
    "def f(np):\n    probe(np.zeros(3))",
    "rng = make_rng()\nprobe(rng.normal(0, 1, size=3))",
    "probe(torch.topk(x, 3).values)",
    "probe(out.values)",
    "probe(frame.to_numpy())",
    "df = load(p)\nprobe(df.values)",
    "def f(x):\n    x = np.asarray(x)\n    x += t\n    probe(x)",
    "def f(x):\n    x = np.asarray(x)\n    if c:\n        x = t\n    probe(x)",
    "def f(x):\n    x = np.asarray(x)\n    for x in xs:\n        pass\n    probe(x)",
    "def f(x):\n    x = np.asarray(x)\n    g = lambda: probe(x)\n    x = t",
    "def f(x):\n    for i in r:\n        probe(x)\n        x = np.zeros(3)",
]


def is_numpy_array(expr, context) -> bool:
    return type(context.value_of(expr)) is Array


@pytest.mark.parametrize("code", ARRAYS)
def test_known_arrays(code):
    assert _probe(code, is_numpy_array) == [True]


@pytest.mark.parametrize("code", NOT_ARRAYS)
def test_not_known_arrays(code):
    assert _probe(code, is_numpy_array) == [False]


def _device(expr, context):
    target = device_target(expr, context)
    return target is not None and not target.host


DEVICES = ["probe('cuda')", "probe('cuda:1')", "probe(0)", "probe(torch.device('cuda', 0))", "probe(x.device)",
           "probe(device)", "probe(self.device)", "probe(args.local_rank)", "probe(self.target_device)",
           "dev = torch.device('mps')\nprobe(dev)"]
NOT_DEVICES = ["probe('cpu')", "probe(torch.device('cpu'))", "probe(torch.float16)", "probe(x.dtype)",
               "probe(dtype)", "probe(other)", "probe(True)", "device = 'cpu'\nprobe(device)",
               "device = torch.float16\nprobe(device)", "probe('cuda_graph')"]


@pytest.mark.parametrize("code", DEVICES)
def test_devices(code):
    assert _probe(code, _device) == [True]


@pytest.mark.parametrize("code", NOT_DEVICES)
def test_not_devices(code):
    assert _probe(code, _device) == [False]


def test_a_name_rebound_in_the_loop_that_also_binds_it_before_the_read():
    code = "traj = np.load('t.npy')\nwhile go:\n    x = traj[np.random.randint(0, 9, 4), :]\n    x = probe(x)\n"
    assert _probe(code, is_numpy_array) == [True]
    code = "x = np.zeros(3)\nwhile go:\n    probe(x)\n    x = [1]\n"
    assert _probe(code, is_numpy_array) == [False]
