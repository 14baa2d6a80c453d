"""The ast pre-screens only spare LibCST files that cannot hold a finding.

A screen (``Rule.could_fire_tree``) must answer True for every file its rule reports on; the
invariant is checked by linting every example, fixture and contract case with the screens
switched off and asking the screen about each file that got a finding.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Iterator, List, Tuple, Type

import pytest

import test_contract_cases
from pytorch_perflint import screening
from pytorch_perflint.registry import all_rules, rule_by_code
from pytorch_perflint.rule import Rule
from pytorch_perflint.facts.tensors.screens import names_a_constructor
from pytorch_perflint.testing import lint_example

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCREENED = [r for r in all_rules() if r.could_fire_tree(ast.parse("")) is not None]

# Positives that only a careful screen keeps: aliases, helpers, values bound elsewhere.
TRICKY = [
    ("TPF204", "from torch.autograd import set_detect_anomaly as sda\nsda(True)\n"),
    ("TPF204", "import torch.autograd.profiler as P\nwith P.profile():\n    loss.backward()\n"),
    ("TPF202", "import torch\ndef step(b):\n    loss = model(b.cuda()).sum()\n    loss.backward()\n"
               "    opt.step()\n    return loss\nfor b in loader:\n    print(step(b).item())\n"),
    ("TPF402", "import torch\ndev = 'cuda'\nx = torch.zeros(3).to(dev)\n"),
    ("TPF402", "from torch import ones\nx = ones(4).cuda()\n"),
    ("TPF402", "import torch\nx = torch.zeros(len(f(g(h(1))))).cuda()\n"),
    ("TPF402", "import torch\nx = torch.randn(2).to(device=args.device)\n"),
    # Created, then moved in a later statement of the same block, wherever the block is.
    ("TPF402", "import torch\ntry:\n    pass\nexcept ValueError:\n    z = torch.randn(3)\n    z = z.cuda()\n"),
    ("TPF402", "import torch\nmatch x:\n    case 1:\n        z = torch.zeros(3)\n        z = z.cuda()\n"),
    ("TPF402", "import torch\nwhile x:\n    pass\nelse:\n    z = torch.zeros(3)\n    n = 1\n    z = z.to('cuda')\n"),
    ("TPF402", "import torch\nclass A:\n    def f(self):\n        with g():\n            z = torch.ones(2)\n"
               "            z = (\n                z.cuda())\n"),
    ("TPF401", "from torch import tensor as T\nimport numpy as np\nx = T(np.zeros(3))\n"),
    ("TPF401", "import torch\nimport numpy as np\nx = torch.tensor(np.copy(a))\n"),
    ("TPF401", "import torch\nimport pandas as pd\ndf = pd.read_csv('a')\nx = torch.tensor(df.values)\n"),
    ("TPF401", "import torch\nimport numpy as np\na = np.zeros((2, 3))\nx = torch.FloatTensor(a.T.copy())\n"),
    # A name bound in a scope the call sees: an enclosing function (also through a lambda),
    # the module, or the same one-line function.
    ("TPF401", "import torch\nimport numpy as np\ndef f():\n    a = np.zeros(3)\n    def g():\n        return torch.tensor(a)\n"),
    ("TPF401", "import torch\nimport numpy as np\ndef f():\n    a = np.zeros(3)\n    return lambda: torch.tensor(a)\n"),
    ("TPF401", "import torch\nimport numpy as np\na = np.zeros(3)\ndef f():\n    return torch.tensor(a)\n"),
    ("TPF401", "import torch\nimport numpy as np\ndef f(): a = np.zeros(3); return torch.tensor(a)\n"),
    ("TPF401", "import torch\nclass A:\n    def f(self):\n        return torch.tensor(self.buf.cpu().numpy())\n"),
    # The constructor's name as the text screen reads it: in parentheses, spaced, imported
    # under another name across a line continuation.
    ("TPF401", "import torch\nimport numpy as np\nok = torch.is_tensor(x)\nx = (torch.tensor)(np.zeros(3))\n"),
    ("TPF401", "import torch\nimport numpy as np\nx = torch . tensor (np.zeros(3))\n"),
    ("TPF401", "import numpy as np\nfrom torch import tensor \\\n    as T\nok = is_tensor(y)\nx = T(np.zeros(3))\n"),
    ("TPF301", "from torch.nn import Conv2d as C, BatchNorm2d as B, Sequential\nm = Sequential(C(3, 8, 3), B(8))\n"),
    ("TPF301", "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.Linear(4, 4),\n"
               "    nn.BatchNorm1d(4))\n"),
    # The optimizer is only known by what it was built from.
    ("TPF202", "import torch\nclass T:\n    def fit(self, loader):\n        self.learner = torch.optim.Adam(p)\n"
               "        for x in loader:\n            loss = self.model(x.cuda())\n            self.learner.step()\n"
               "            print(loss.item())\n"),
    ("TPF202", "import torch\nfor x in loader:\n    loss = model(x.cuda())\n    scaler.step(optimizers[0])\n"
               "    print(loss.item())\n"),
    ("TPF203", "import torch\ndef run(m, loader):\n    m.train(mode=False)\n    for x in loader:\n        m(x)\n"),
    ("TPF201", "import torch\nfor p in params:\n    p.grad = (torch.zeros_like(p))\n"),
    ("TPF201", "(opt.zero_grad)(set_to_none=False)\n"),
    ("TPF201", "opt.zero_grad(\n    False)\n"),
    ("TPF501", "import torch as th\nm = th.nn.parallel.data_parallel.DataParallel(net)\n"),
    ("TPF203", "import torch\nclass Trainer:\n    def validate(self):\n        for x in self.val:\n"
               "            self.model.forward(x)\n"),
    ("TPF501", "from torch.nn.parallel import DataParallel as DP\nm = DP(net)\n"),
    ("TPF602", "import torch\nmodel = Net().cuda()\nfrom torch.optim import AdamW as W\nopt = W(model.parameters())\n"),
    ("TPF501", "import torch.nn.parallel.data_parallel as dp\nm = dp.DataParallel(net)\n"),
    ("TPF201", "NONE = False\nmodel.zero_grad(NONE)\n"),
    ("TPF201", "for p in ps:\n    p.grad.data.fill_(0)\n"),
    ("TPF201", "for p in ps:\n    p.grad.fill_(False)\n"),
    ("TPF201", "from torch import zeros_like as zl\nfor p in ps:\n    p.grad = zl(p)\n"),
    # `set_to_none` belongs to the function around the zeroing, not to one further out.
    ("TPF201", "def zero(ps, set_to_none=False):\n    def inner():\n        for p in ps:\n            p.grad.zero_()\n"),
    ("TPF101", "from torch.utils.data import DataLoader as DL\nloader = DL(ds, batch_size=8)\n"),
    ("TPF104", "import torch\nfrom torch.utils.data import DataLoader as DL\ndl = DL(ds, pin_memory=True)\n"
               "for x, y in dl:\n    x = x.to('cuda')\n"),
    # The model's call found by its loop's lines: a call over two lines, a layer of self.
    ("TPF203", "import torch\ndef run(net, loader):\n    net.train(False)\n    for x in loader:\n        y = (net\n"
               "             .forward(x))\n"),
    ("TPF203", "import torch\nclass Decoder(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.rnn = torch.nn.GRU(4, 4)\n    def sample(self, xs):\n        for x in xs:\n            h = self.rnn(x)\n"),
    ("TPF203", "import torch\nencoder.eval()\nwhile queue:\n    encoder(queue.pop())\n"),
]


def _contract_sources() -> Iterator[str]:
    for value in vars(test_contract_cases).values():
        if isinstance(value, list):
            for param in value:
                if getattr(param, "values", None) and isinstance(param.values[0], str):
                    yield param.values[0]


def _sources(rule: Type[Rule]) -> List[Tuple[str, dict]]:
    options = {"preview": True}
    out = [(case.code, {**options, **case.options}) for case in rule.INVALID]
    out += [(case.code if not isinstance(case, str) else case, options) for case in rule.VALID]
    out += [(path.read_text(encoding="utf-8"), options) for path in sorted(FIXTURES.glob(f"{rule.code}/*.py"))]
    out += [(code, options) for code in _contract_sources()]
    out += [(textwrap.dedent(code), options) for c, code in TRICKY if c == rule.code]
    return out


def parsed_sources(rule: Type[Rule]) -> Iterator[Tuple[str, dict, ast.Module]]:
    """``_sources`` that Python parses, with their ``ast`` trees."""
    for source, options in _sources(rule):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        yield source, options, tree


@pytest.mark.parametrize("rule", SCREENED, ids=[r.code for r in SCREENED])
def test_a_screen_never_drops_a_file_its_rule_reports_on(rule, monkeypatch):
    monkeypatch.setattr(screening, "screen_with_ast", lambda active, source, parsed=None: (active, None))
    reported = 0
    for source, options, tree in parsed_sources(rule):
        if lint_example(rule, source, options):
            reported += 1
            assert rule.could_fire_tree(tree), f"{rule.code}'s screen drops a file it reports on:\n{source}"
    assert reported >= 3


@pytest.mark.parametrize(("code", "source"), TRICKY, ids=[f"{c}-{i}" for i, (c, _) in enumerate(TRICKY)])
def test_tricky_positives_pass_the_screen_and_are_reported(code, source):
    assert lint_example(rule_by_code(code), source, {"preview": True})


@pytest.mark.parametrize(
    ("code", "source"),
    [
        ("TPF204", '"""Call torch.autograd.set_detect_anomaly(True) to debug."""\nimport torch\n'),
        ("TPF301", '"""nn.Conv2d followed by nn.BatchNorm2d"""\nimport torch\n'),
        ("TPF202", '"""loss.backward() then x.item() in a loop"""\nfor x in xs:\n    print(x.item())\n'),
        ("TPF402", "import torch\nx = torch.zeros(3).to(torch.float16)\n"),
        ("TPF401", "import numpy as np\nimport torch\nx = torch.tensor([1, 2])\ny = aten.split.Tensor(sizes, 2)\n"),
        ("TPF401", "import torch\nv = x.topk(3).values\ny = torch.tensor(v)\n"),
        # The array is bound in another function than the call's, whose parameter of the same
        # name is a dunder's (Python calls it: its callers are not all known; a public
        # method's may be read from its callers, project/method_callers.py); the copy is pinned.
        ("TPF401", "import torch\nimport numpy as np\ndef f():\n    a = np.zeros(3)\n    return a\nclass A:\n    def __call__(self, a):\n        return torch.tensor(a)\n"),
        ("TPF401", "import torch\nimport numpy as np\nx = torch.tensor(np.zeros(3), pin_memory=True)\n"),
        # A method of an attribute of `self` that is no array method (torch's optimizers).
        ("TPF401", "import torch\nimport numpy as np\nclass A:\n    def f(self, p):\n        s = self.state.get(p, [])\n"
                   "        return torch.tensor(s['mu'])\n"),
        ("TPF203", "import torch\nmodel.eval()\nwith torch.no_grad():\n    for x in loader:\n        model(x)\n"),
        ("TPF203", "import torch\nmodel.eval()\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n"),
        ("TPF602", '"""Use torch.optim.Adam on CUDA."""\nimport torch\nx = torch.ones(1).cuda()\n'),
        # torch's own optimizer module: the class is defined and named, never called.
        ("TPF602", "import torch\nx = torch.ones(1).cuda()\nclass Adam:\n    pass\nok = isinstance(o, Adam)\n"),
        ("TPF201", '"""Call opt.zero_grad(set_to_none=False) to keep the buffers."""\nimport torch\n'),
        ("TPF201", "class Opt:\n    def zero_grad(self, set_to_none=True):\n        self.grads = None\n"),
        ("TPF201", "import torch\np.grad.add_(1)\nq.grad = None\n"),
        # Zeroing that implements `set_to_none`; gradients assigned what is not zeros, or
        # filled with what is not zero; two targets at once.
        ("TPF201", "def zero(ps, set_to_none=False):\n    for p in ps:\n        p.grad.zero_()\n"),
        ("TPF201", "import torch\nfor p in ps:\n    p.grad = torch.empty_like(p)\n    q.grad = r.grad = torch.zeros_like(p)\n"),
        ("TPF201", "for p in ps:\n    p.grad.fill_(1)\n"),
        ("TPF501", '"""Wrap the model with nn.DataParallel(model)."""\nimport torch\n'),
        ("TPF101", '"""Feed it a DataLoader(ds, num_workers=0)."""\nimport torch\nloader = make_loader(ds)\n'),
        ("TPF102", "import torch  # not a DataLoader\nloader = torch.utils.data.dataloader_helpers.make(ds)\n"),
        ("TPF103", "import torch\nNAME = 'DataLoader'\nfor epoch in range(3):\n    for x in loader:\n        pass\n"),
        ("TPF501", "import torch\n# model = torch.nn.DataParallel(model)\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n"),
        # An interpreter's own step loop, not an optimizer's (torch._dynamo).
        ("TPF202", "import torch\nclass Tracer:\n    def run(self):\n        while self.step():\n"
                   "            print(self.stack[-1].item())\n"),
        ("TPF202", "for x in loader:\n    scaler.step()\n    print(x.cuda().item())\n"),
        # Layer classes named (a registry of modules) but never built; biases already off.
        ("TPF301", "import torch.nn as nn\nMODULES = [nn.Conv2d, nn.BatchNorm2d, nn.Linear]\n"),
        ("TPF301", "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n"),
        ("TPF301", "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 0, 1, 1, False), nn.BatchNorm2d(8))\n"),
        # torch's own FSDP: `DataParallel` only in a longer name and in its docstrings.
        ("TPF501", '"""Unlike nn.DataParallel, it shards."""\nclass FullyShardedDataParallel:\n    pass\n'),
        # `zero_grad` defined, documented, or called with a literal `True`.
        ("TPF201", 'class Opt:\n    def zero_grad(self, set_to_none=True):\n        """Call zero_grad() first."""\n'),
        ("TPF201", "opt.zero_grad(set_to_none=True)\nfor p in ps:\n    if p.grad is not None:\n        p.grad.add_(1)\n"),
        # `DataLoader` and `pin_memory` only in the docs (torch's own `_tensor_docs.py`).
        ("TPF102", '"""Pin it: DataLoader(ds, pin_memory=True)."""\nimport torch\nx = torch.ones(1).cuda()\n'),
        ("TPF104", '"""A DataLoader with pin_memory."""\nimport torch\nx = y.to("cuda")\n'),
    ],
)
def test_screens_drop_files_whose_trigger_words_are_not_code(code, source):
    """The text pre-screen lets these through; the ast screen sees there is nothing to find."""
    rule = rule_by_code(code)
    assert rule.could_fire(source)
    assert not rule.could_fire_tree(ast.parse(source))


@pytest.mark.parametrize(
    ("code", "source", "passes"),
    [
        # TPF202: a step function of another module, found without a regex tried everywhere.
        ("TPF202", "for b in data:\n    é_step(b)\n", True),
        ("TPF202", "for b in data:\n    train_batch(b)\n", True),
        ("TPF202", "for b in data:\n    _batch(b)\n", False),  # nothing before the word
        ("TPF202", "for b in data:\n    agent.optimise_policy(b)\n", True),
        ("TPF202", "agent = rl.Agent(env)\nfor b in data:\n    agent.update(b)\n", True),
        ("TPF202", "def f():\n  agent\t=\tAgent()\n  agent.update(b)\n", True),
        ("TPF202", "stats = dict()\nstats.update(b)\n", False),
        ("TPF202", "agent = Agent()\nother.update(b)\n", False),
        ("TPF202", "9agent = Agent()\n9agent.update(b)\n", False),
        # TPF501: DataParallel, not inside DistributedDataParallel.
        ("TPF501", "m = nn.DistributedDataParallel(m)\n", False),
        ("TPF501", "m = nn.DistributedDataParallel(m)\nn = nn.DataParallel(n)\n", True),
        ("TPF501", "DataParallel(m)\n", True),
        # TPF201 never reports in a module that captures CUDA graphs (torch.optim's own).
        ("TPF201", "opt.zero_grad(set_to_none=False)\n", True),
        ("TPF201", "g = torch.cuda.CUDAGraph()\nopt.zero_grad(set_to_none=False)\n", False),
    ],
)
def test_text_screens_pass_exactly_what_their_patterns_describe(code, source, passes):
    assert rule_by_code(code).could_fire(source) is passes


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("x = torch.tensor(a)\n", True),
        ("x = (torch.tensor)(a)\n", True),
        ("x = torch.LongTensor \\\n    (a)\n", True),
        ("x = torch.tensor(  # a comment\n    a)\n", True),
        ("x = torch.ｔensor(a)\n", True),  # NFKC: Python reads torch.tensor
        ("from torch import (tensor  # the constructor\n    as T)\n", True),
        ("from torch import FloatTensor as F\n", True),
        ("ok = torch.is_tensor(a) or torch.as_tensor(a)\n", False),
        ("def f(x: Tensor) -> Tensor:\n    return x\n", False),
        ("x = torch.xtensor(a)\n", False),
        ("# ####### tensor ###### as\n", False),
    ],
)
def test_tpf401_text_screen_sees_every_spelling_of_a_constructor(source, names):
    assert names_a_constructor(source) is names
