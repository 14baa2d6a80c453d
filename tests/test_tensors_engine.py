"""TPF401's mechanisms of issue 22 on the value engine, each a small project with the
look-alikes it must leave silent: bindings in every arm of an ``if/elif`` chain, parameters
of public methods (``project/method_callers.py``) and of constructors read from their
callers, attributes that read themselves (``self.x = self.x + dx``: ``value_memo``), a
value that may be ``None`` (``MaybeNone``), SciPy results, ``np.where``/``np.unique``
tuples, replay-buffer slices and arithmetic, loop-carried counters, sized random draws;
and the cache following a public method's
callers."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_cache_project import _findings as _cli_findings, _rewrite
from test_tensors_project import _findings, _marked

CASES = {
"branches": {"filters.py": """
    import numpy as np
    import torch

    def get_filter(size=3):
        if size == 1:
            a = np.array([1.0])
        elif size == 2:
            a = np.array([1.0, 1.0])
        else:
            a = np.array([1.0, 2.0, 1.0])
        return torch.Tensor(a[:, None] * a[None, :])  #!

    def mixed(size=3):
        if size == 1:
            a = np.array([1.0])
        elif size == 2:
            a = [1.0, 1.0]
        else:
            a = np.array([1.0, 2.0, 1.0])
        return torch.Tensor(a)
"""},
"branches7": {"filters7.py": """
    import numpy as np
    import torch

    def get_filter(filt_size=3):
        if(filt_size == 1):
            a = np.array([1., ])
        elif(filt_size == 2):
            a = np.array([1., 1.])
        elif(filt_size == 3):
            a = np.array([1., 2., 1.])
        elif(filt_size == 4):
            a = np.array([1., 3., 3., 1.])
        elif(filt_size == 5):
            a = np.array([1., 4., 6., 4., 1.])
        elif(filt_size == 6):
            a = np.array([1., 5., 10., 10., 5., 1.])
        elif(filt_size == 7):
            a = np.array([1., 6., 15., 20., 15., 6., 1.])

        filt = torch.Tensor(a[:, None] * a[None, :])  #!
        filt = filt / torch.sum(filt)
        return filt

    class Downsample:
        def __init__(self, filt_size=3):
            filt = get_filter(filt_size=filt_size)
"""},
"public_method": {"noise.py": """
    import numpy as np

    class OUNoise:
        def __init__(self, dim, scale=0.1):
            self.scale = scale
            self.state = np.ones(dim)

        def reset(self):
            self.state = np.ones(3) * 0.0

        def noise(self):
            x = self.state
            self.state = x + np.random.randn(len(x))
            return self.state * self.scale
""", "ddpg.py": """
    import torch

    class DDPG:
        def select_action(self, state, action_noise=None):
            mu = torch.Tensor(state)  #!
            if action_noise is not None:
                mu += torch.Tensor(action_noise.noise())  #!
            return mu
""", "main.py": """
    import numpy as np
    from ddpg import DDPG
    from noise import OUNoise

    agent = DDPG()
    ounoise = OUNoise(3)
    for i in range(3):
        state = np.zeros(3)
        action = agent.select_action(state, ounoise)
"""},
"optional": {"noise.py": """
    import numpy as np

    class Noise:
        def __init__(self, dim):
            self.state = np.zeros(dim)

        def sample(self):
            self.state = self.state * 0.9 + np.random.randn(len(self.state))
            return self.state
""", "agent.py": """
    import torch

    class Agent:
        def act(self, obs, noise=None):
            if noise is not None:
                return torch.Tensor(noise.sample())  #!
            return torch.Tensor(noise)

        def other(self, obs, noise=None):
            return torch.tensor(obs)
""", "main.py": """
    import numpy as np
    from agent import Agent
    from noise import Noise

    agent = Agent()
    noise = Noise(3) if np.random.rand() > 0.5 else None
    agent.act(np.zeros(3), noise)
    agent.act(np.zeros(3))
    agent.other(np.zeros(3))
    agent.other(None)
    fn = agent.other
"""},
"loaders": {"data.py": """
    import numpy as np
    import scipy.io.wavfile as wavfile
    from scipy import optimize

    def load_wav(path):
        rate, data = wavfile.read(path)
        return data

    def load_split(path):
        blob = np.load(path)
        return blob["x"], blob["y"][:100]
""", "train.py": """
    import numpy as np
    import torch
    import scipy.optimize
    from scipy.io import wavfile
    from data import load_wav, load_split

    x = torch.FloatTensor(load_wav("a.wav"))  #!
    xs, ys = load_split("p.npz")
    a = torch.tensor(xs)  #!
    b = torch.tensor(ys)  #!
    sr, audio = wavfile.read("b.wav")
    c = torch.FloatTensor(audio)  #!
    best, f, info = scipy.optimize.fmin_l_bfgs_b(func, np.zeros(3))
    d = torch.tensor(best)  #!
    e = torch.tensor(f)
    g = torch.tensor(sr)
"""},
"where_unique": {"idx.py": """
    import numpy as np
    import torch

    def run(labels):
        idx = np.where(labels == 1)[0]
        _, inv = np.unique(labels, return_inverse=True)
        u = np.unique(labels)
        a = torch.LongTensor(idx)  #!
        b = torch.LongTensor(inv)  #!
        c = torch.tensor(u)  #!
        d = torch.tensor(np.where(labels > 0, 1.0, 0.0).astype(np.float32))  #!
        return a, b, c, d
"""},
"replay": {"buffer.py": """
    import numpy as np
    import torch

    class Buffer:
        def __init__(self, n, dim):
            self.state = np.zeros((n, dim))
            self.action = np.zeros((n, 1))
            self.ptr = 0

        def add(self, s, a):
            self.state[self.ptr] = s
            self.action[self.ptr] = a

        def sample(self, batch_size):
            ind = np.random.randint(0, self.ptr, size=batch_size)
            return (
                torch.FloatTensor(self.state[ind]),  #!
                torch.FloatTensor(self.action[ind].astype(np.float32) * 2),  #!
            )
"""},
# A loop-carried local (`total = 0`, `total += 1` in a loop) keeps the kind every binding
# keeps (`value_memo._loop_carried`): an array divided by a count is an array, returned to
# a caller that hands it on. Look-alikes: a total that becomes a tensor, a list, a string.
"loop_counter": {"rates.py": """
    import numpy as np
    import torch

    def base_rates(batches, n):
        counts = np.zeros(n)
        total = 0
        for batch in batches:
            for token in batch:
                counts[token] += 1
                total += 1
        return counts / total

    def tensor_total(batches, n):
        counts = np.zeros(n)
        total = 0
        for batch in batches:
            total = total + torch.ones(n)
        return counts / total

    def listed(batches, n):
        rates = np.zeros(n)
        for batch in batches:
            rates = rates.tolist()
        return rates

    def train(rates, other, third):
        a = torch.FloatTensor(rates)  #!
        b = torch.FloatTensor(other)
        c = torch.FloatTensor(third)
        return a, b, c

    train(base_rates([[1, 2]], 3), tensor_total([[1]], 3), listed([[1]], 3))
"""},
# Random draws given a size are arrays (`np.random.random_integers(..., size=...)`); a
# draw without one is a scalar.
"random_draws": {"demo.py": """
    import numpy as np
    import torch

    if __name__ == "__main__":
        words = np.random.random_integers(low=0, high=49, size=(2, 10))
        words = torch.LongTensor(words)  #!
        one = np.random.random_integers(0, 49)
        one = torch.LongTensor([one])
        wait = torch.FloatTensor(np.random.geometric(0.5, 8))  #!
        scalar = torch.FloatTensor(np.random.geometric(0.5))
"""},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_mechanism_finds_the_marked_calls_only(tmp_path: Path, name: str):
    files = CASES[name]
    assert _findings(tmp_path, files, "TPF401") == _marked(files)


LOOK_ALIKES = {
    "lib.py": """
        import numpy as np
        import torch
        from some_library import Policy

        class External(Policy):
            def act(self, obs):
                return torch.tensor(obs)

        class Static:
            @staticmethod
            def _convert(scale, obs):
                return torch.tensor(obs)

            def run(self, obs):
                return self._convert(obs, 2.0)

        class Shifted:
            def apply(self, obs):
                return torch.tensor(obs)

        class Named:
            def step(self, obs):
                return torch.tensor(obs)

        class Aliased:
            def respond(self, obs):
                return torch.tensor(obs)

            __call__ = respond
    """,
    "main.py": """
        import numpy as np
        from lib import Aliased, External, Named, Shifted, Static

        External().act(np.zeros(3))
        Static().run(np.zeros(3))
        Shifted.apply(Shifted(), np.zeros(3))
        Named().step(np.zeros(3))
        getattr(Named(), "step")([1, 2])
        Aliased().respond(np.zeros(3))
        Aliased()([1, 2])
    """,
}


def test_callers_that_may_hide_keep_a_parameter_unknown(tmp_path: Path):
    """A library base may call ``act``; a static method's arguments do not line up with
    ``self._convert(obs, 2.0)``; a call on the class shifts the arguments; ``getattr`` with
    the method's name, and ``__call__ = respond``, call it unseen."""
    assert _findings(tmp_path, LOOK_ALIKES, "TPF401") == []


def test_a_finding_follows_the_public_method_callers_it_read(tmp_path: Path):
    """``select_action``'s array comes from main.py's call: when main.py passes a list
    instead, the cached finding in ddpg.py goes."""
    files = CASES["public_method"]
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nselect = ["TPF401"]\n')
    for name, text in files.items():
        (tmp_path / name).write_text(text.replace("\n    ", "\n").lstrip("\n"))
    found = [("ddpg.py", 5, "TPF401"), ("ddpg.py", 7, "TPF401")]
    assert _cli_findings(tmp_path, ".") == found
    assert _cli_findings(tmp_path, ".") == found  # warm
    main = (tmp_path / "main.py").read_text()
    _rewrite(tmp_path / "main.py", main.replace("state = np.zeros(3)", "state = [0.0, 0.0, 0.0]"))
    assert _cli_findings(tmp_path, ".") == [("ddpg.py", 7, "TPF401")]


# TPF402 asks the engine what a move's receiver is (project/tensor_values.py); where the
# factory is written and who else sees the tensor stay statement structure (host_tensors.py).
TPF402_CASES = [
    # `z = z.<step>` lines between the creation and the move: the engine follows them
    ("import torch\ndef f(dims, device):\n    t = torch.FloatTensor(dims)\n    t = t.repeat(1, 2)\n    t = t.to(device)\n    return t\n", [5]),
    ("import torch\nfor i in range(3):\n    a = torch.zeros(2, 1)\n    a = a.expand(2, 3).float()\n    a = a.cuda()\n", [5]),
    # the misses, kept: loops, typed constructors of tuples, lists and arrays
    ("import torch\ndef train(n, device):\n    for i in range(n):\n        z = torch.randn(4, 100, 1, 1)\n        z = z.to(device)\n        g(z)\n", [5]),
    ("import torch\ndims = (2, 3)\nx = torch.FloatTensor(dims).repeat(1, 2).cuda()\n", [3]),
    ("import torch\ndef f(n):\n    idx = [0, 1, n]\n    return torch.LongTensor(idx).cuda()\n", [4]),
    ("import torch\nimport numpy as np\nx = torch.FloatTensor(np.ones(3)).cuda()\n", [3]),
    ("import torch\nz = torch.ones(2)\nz = (\n    z.cuda())\n", [4]),
    ("import torch\nim = torch.zeros(1, 3, *size).to(device)\n", [2]),
    ("import torch\nim = torch.FloatTensor(1, *size).to(device)\n", []),
    # look-alikes: another name holds the host tensor, a step that is not one, a storage
    # bound to a name, a factory in a helper, a move under a condition
    ("import torch\na = torch.zeros(2, 1)\nb = a\na = a.expand(2, 3)\na = a.to('cuda')\n", []),
    ("import torch\na = torch.zeros(2, 1)\na = a + 1\na = a.to('cuda')\n", []),
    ("import torch\na = torch.zeros(2, 1)\na = a.view(a.size(0), -1)\na = a.to('cuda')\n", []),
    ("import torch\ns = torch.ByteStorage.from_buffer(b)\nx = torch.ByteTensor(s).to('cuda')\n", []),
    ("import torch\ndef make():\n    return torch.randn(3)\nz = make()\nz = z.cuda()\n", []),
    ("import torch\ndef f(c):\n    z = torch.randn(4)\n    if c:\n        z = z.cuda()\n    return z\n", []),
    ("import torch\nx = torch.zeros(3, **options).cuda()\n", []),
]


@pytest.mark.parametrize(("code", "lines"), TPF402_CASES)
def test_tpf402_moves_of_fresh_host_tensors(code, lines):
    from pytorch_perflint.registry import rule_by_code
    from pytorch_perflint.testing import lint_example

    assert [line for line, _ in lint_example(rule_by_code("TPF402"), code)] == lines


def test_tpf402_fix_keeps_the_steps_between_creation_and_move():
    from pytorch_perflint.registry import rule_by_code
    from pytorch_perflint.testing import fix_example

    code = "import torch\nfor i in range(3):\n    a = torch.zeros(2, 1)\n    a = a.expand(2, 3).float()\n    a = a.cuda()\n    g(a)\n"
    fixed = 'import torch\nfor i in range(3):\n    a = torch.zeros(2, 1, device="cuda")\n    a = a.expand(2, 3).float()\n    g(a)\n'
    assert fix_example(rule_by_code("TPF402"), code, unsafe=False) == fixed


SELF_READING = """
    import numpy as np

    class Noise:
        def __init__(self, n):
            self.state = np.zeros(n)
            self.listed = np.zeros(n)
            self.count = 0

        def step(self):
            x = self.state
            self.state = x + 0.1 * np.random.randn(len(x))
            self.listed = self.listed.tolist()
            self.count = self.count + 1
            return self.state

    noise = Noise(3)
"""


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("noise.state", "Array"), ("noise.step()", "Array"), ("noise.count", "Number"), ("noise.listed", "Unknown")],
)
def test_an_attribute_that_reads_itself_keeps_the_kind_every_binding_keeps(tmp_path: Path, expression, expected):
    """`self.state = x + dx` with `x = self.state`: an array given an array; `.tolist()`
    of one is not, so `listed` stays unknown (the hypothesis fails and is dropped)."""
    from test_values import _kind

    assert type(_kind(tmp_path, {"main.py": SELF_READING}, expression)).__name__ == expected


def test_a_kind_joined_with_none_is_maybe_none_and_nothing_else_agrees():
    from pytorch_perflint.project.kinds import Array, MaybeNone, NoneValue, Number, Unknown, join, present

    assert join(Array(), NoneValue()) == join(NoneValue(), Array()) == MaybeNone(Array())
    assert join(MaybeNone(Array()), Array()) == join(NoneValue(), MaybeNone(Array())) == MaybeNone(Array())
    for first, second in [(MaybeNone(Array()), Number()), (NoneValue(), Unknown()), (MaybeNone(Array()), MaybeNone(Number()))]:
        assert type(join(first, second)) is Unknown
    assert present(MaybeNone(Array())) == Array() and present(Number()) == Number()
