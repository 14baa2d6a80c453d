"""TPF403 cudnn-benchmark-disabled."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

import libcst as cst

from ..analysis.ast_screens import could_have_training_loop
from ..analysis.modules import ModelBuild, conv_model_builds, could_build_conv_model, walk_scoped
from ..analysis.scope import dotted_name
from ..analysis.training import training_facts
from ..analysis.values import literal_value
from ..analysis.walk import descendants
from ..rule import FileContext, Invalid, NodeFix, Rule
from ..types import Applicability

_BENCHMARK = "torch.backends.cudnn.benchmark"
# Settings that show the author chose reproducibility (or no cuDNN) over speed.
_DETERMINISTIC = "torch.backends.cudnn.deterministic"
_ENABLED = "torch.backends.cudnn.enabled"
_USE_DETERMINISTIC = "torch.use_deterministic_algorithms"
_TRAINED_BY = frozenset(("parameters", "named_parameters", "train"))


@dataclass(frozen=True)
class _Decision:
    """What TPF403 reports in a file: ``benchmark = False`` assignments, or the model build."""

    false_values: Tuple[cst.BaseExpression, ...] = ()
    build: Optional[ModelBuild] = None


def _training_receivers(context: FileContext) -> Optional[Set[str]]:
    """Names called inside training loops; None when the module has no training loop."""
    facts = context.fact(training_facts)
    if not facts.has_training_loop:
        return None
    called: Set[str] = set()
    for loop in facts.training_loops:
        for node in descendants(loop.node):
            if isinstance(node, cst.Call):
                name = dotted_name(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
                if name is not None:
                    called.add(name)
    return called


def _decide(context: FileContext) -> _Decision:
    called = _training_receivers(context)  # first: TPF202 and TPF601 share these facts
    if called is None:
        return _Decision()
    builds = context.fact(conv_model_builds)
    if not builds:
        return _Decision()
    false_values: List[cst.BaseExpression] = []
    trained: Set[str] = set()
    for visited in walk_scoped(context.module):
        node = visited.node
        if type(node) is cst.Assign:
            scope = context.scope_of(visited.chain)
            value = literal_value(node.value, scope.lookup_value)
            for target in node.targets:
                name = context.qualname(target.target, scope)
                if name == _BENCHMARK:
                    if value is not False:
                        return _Decision()  # set True, or from a flag: the author decides
                    false_values.append(node.value)
                elif (name == _DETERMINISTIC and value is not False) or (name == _ENABLED and value is not True):
                    return _Decision()
        elif type(node) is cst.Call:
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in _TRAINED_BY:
                receiver = dotted_name(func.value)
                if receiver is not None:
                    trained.add(receiver)
            if context.qualname(func, context.scope_of(visited.chain)) == _USE_DETERMINISTIC and not (
                node.args and literal_value(node.args[0].value) is False
            ):
                return _Decision()
            if any(
                a.keyword is not None and a.keyword.value == "deterministic" and literal_value(a.value) is not False
                for a in node.args
            ):
                return _Decision()  # e.g. set_random_seed(seed, deterministic=True)
    linked = [b for b in builds if b.target in trained or b.target in called]
    linked.sort(key=lambda b: b.inside_model)
    if not linked:
        return _Decision()
    if false_values:
        return _Decision(false_values=tuple(false_values))
    return _Decision(build=linked[0])


class CudnnBenchmarkDisabled(Rule):
    """## What it does
    Flags a script that trains a convolutional model on CUDA and never sets
    `torch.backends.cudnn.benchmark = True`, or sets it to `False`.

    ## Why is this bad?
    With `benchmark` off, cuDNN picks a convolution algorithm by heuristics. With it on, the
    first call for each input shape times the available algorithms and keeps the fastest,
    which is often markedly faster for the fixed input sizes of a training run.

    ## Example
    ```python
    model = torchvision.models.resnet50().cuda()
    for images, labels in loader:
        loss = criterion(model(images.cuda()), labels.cuda())
        loss.backward()
    ```

    ## Use instead
    ```python
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda()
    ```

    ## Fix safety
    The fix inserts `torch.backends.cudnn.benchmark = True` before the statement that builds
    the model (or turns `False` into `True`). It is unsafe: autotuned algorithms are not
    deterministic from run to run, and inputs whose shape changes every step pay the tuning
    again. Nothing is flagged when the script asks for determinism
    (`cudnn.deterministic = True`, `torch.use_deterministic_algorithms`), when `benchmark` is
    set from a flag, or when the model is not known to be convolutional.
    """

    code = "TPF403"
    name = "cudnn-benchmark-disabled"
    message = (
        "Convolutional model trained on CUDA without `torch.backends.cudnn.benchmark = True`; "
        "enable it so cuDNN autotunes the convolutions"
    )
    fix_applicability = Applicability.UNSAFE
    triggers = (".backward(",)  # a training loop
    needs_cuda = True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """Backward, and a word that building a convolutional model needs."""
        return ".backward(" in source and could_build_conv_model(source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains: it runs backward or a step, or calls a helper defined here."""
        return could_have_training_loop(tree)

    _PROLOGUE = (
        "import torch\nimport torch.nn as nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n"
        "    def forward(self, x):\n        return self.conv(x).mean()\n"
    )
    _LOOP = (
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    model(x.cuda()).backward()\n    opt.step()\n"
    )

    VALID = (
        _PROLOGUE + "torch.backends.cudnn.benchmark = True\nmodel = Net().cuda()\n" + _LOOP,
        _PROLOGUE + "torch.backends.cudnn.benchmark = args.benchmark\nmodel = Net().cuda()\n" + _LOOP,
        _PROLOGUE
        + "torch.backends.cudnn.benchmark = False\ntorch.backends.cudnn.deterministic = True\n"
        + "model = Net().cuda()\n"
        + _LOOP,
        # CPU only.
        (_PROLOGUE + "model = Net()\n" + _LOOP).replace(".cuda()", ""),
        # No convolution in the model.
        _PROLOGUE.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)") + "model = Net().cuda()\n" + _LOOP,
        # A model of unknown kind.
        "import torch\nmodel = build_model(cfg).cuda()\n" + _LOOP,
        # A factory of this module that may build a model without convolutions.
        _PROLOGUE
        + "def build(kind):\n    if kind == 'mlp':\n        return nn.Linear(3, 8)\n    return Net()\n"
        + "model = build(cfg).cuda()\n"
        + _LOOP,
        # The factory's name is a parameter here, not the module's function.
        _PROLOGUE
        + "def build():\n    return Net()\ndef main(build):\n    model = build().cuda()\n"
        + "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "    for x in loader:\n        model(x.cuda()).backward()\n        opt.step()\n",
        # No training loop.
        _PROLOGUE + "model = Net().cuda()\nwith torch.no_grad():\n    out = model(x.cuda())\n",
    )
    INVALID = (
        # Convolutions built by a helper of this module; the model put in eval mode (to
        # freeze BatchNorm) and still trained.
        Invalid(
            "import torch\nimport torch.nn as nn\n"
            "def conv3x3(cin, cout):\n    return nn.Conv2d(cin, cout, 3, padding=1, bias=False)\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.conv = conv3x3(3, 16)\n"
            "model = Net().eval().cuda()\n" + _LOOP,
            line=9,
        ),
        # Built by a factory of this module, every return of which is convolutional.
        Invalid(
            _PROLOGUE + "def build_model(cfg):\n    net = Net()\n    return net\n"
            "model = build_model(cfg).cuda()\n" + _LOOP,
            line=12,
        ),
        Invalid(
            _PROLOGUE + "model = Net().cuda()\n" + _LOOP,
            line=9,
            expected_fix=_PROLOGUE + "torch.backends.cudnn.benchmark = True\nmodel = Net().cuda()\n" + _LOOP,
        ),
        Invalid(
            "import torch\nfrom torch.backends import cudnn\nimport torchvision\n"
            "cudnn.benchmark = False\nmodel = torchvision.models.resnet18().cuda()\n" + _LOOP,
            line=4,
            expected_fix="import torch\nfrom torch.backends import cudnn\nimport torchvision\n"
            "cudnn.benchmark = True\nmodel = torchvision.models.resnet18().cuda()\n" + _LOOP,
        ),
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        decision = self.context.fact(_decide)
        build = decision.build
        if build is not None and build.line is node:
            self.report(build.assign, fix=self._insert(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        decision = self.context.fact(_decide)
        if any(node.value is value for value in decision.false_values):
            fix = self.fix([(node.value, cst.Name("True"))], message="Set `cudnn.benchmark = True`")
            self.report(node, fix=fix)

    def _insert(self, line: cst.SimpleStatementLine) -> Optional[NodeFix]:
        ref = self.context.torch_ref()
        if ref is None:
            return None
        torch, imports = ref
        statement = cst.parse_statement(f"{torch}.backends.cudnn.benchmark = True\n")
        assert isinstance(statement, cst.SimpleStatementLine)
        statement = statement.with_changes(leading_lines=line.leading_lines)
        replacement = cst.FlattenSentinel([statement, line.with_changes(leading_lines=())])
        return self.fix(
            [(line, replacement)],
            message="Insert `torch.backends.cudnn.benchmark = True`",
            imports=imports,
        )
