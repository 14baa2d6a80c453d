"""TPF603 fp32-matmul-precision."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Optional, Set, Tuple

import libcst as cst

from ...analysis.scope import Scope, dotted_name
from ...analysis.walk import descendants
from ...context import FileContext
from ...finding import NodeFix
from ...rule import Invalid, Rule, Valid
from ...types import Applicability
from ...facts.training.classifiers import last_name
from ...facts.training.precision import chooses_precision
from ...facts.training.screens import could_have_training_loop
from ...facts.training.test_code import in_test_code
from ...facts.layers.module_parts import Visited, walk_scoped
from ...facts.layers.script_settings import insert_after_imports, is_entry_script, training_receivers
from ...facts.layers.trained_models import model_builds

# Methods that return the module they are called on (`Net().cuda().train()` is still it).
_MODEL_METHODS = frozenset(("to", "cuda", "train", "eval", "float", "requires_grad_", "to_empty"))
# Calls that wrap a model built before: the build is the earlier statement.
_WRAPPERS = frozenset(
    ("torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel", "torch.compile", "torch.jit.script")
)
# Library builders of models, by qualified name prefix.
_LIBRARY_MODELS = ("torchvision.models.", "timm.create_model", "transformers.")
# torch.nn members that are not layers.
_NN_NOT_LAYERS = ("torch.nn.parallel", "torch.nn.utils", "torch.nn.init", "torch.nn.functional", "torch.nn.Parameter")
# A project (or unknown) factory named like a model builder: build_model, get_net, create_model.
_FACTORY = re.compile(r"model|net", re.IGNORECASE)
_LOSS = re.compile(r"loss|criterion", re.IGNORECASE)
# MNIST-sized data: 28x28 inputs, models whose matmuls are too small for TF32 to pay.
_TOY_DATA = re.compile(r"\b(?:Fashion|K|E|Q)?MNIST\b")
# Double precision (scientific code): TF32 does not apply, and the author wants the digits.
_FLOAT64 = re.compile(r"\.double\(|float64|set_default_dtype")
_TRAINED_BY = frozenset(("parameters", "named_parameters"))
_OPTIMIZER_CLASSES = frozenset(
    ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "RAdam", "NAdam", "Lion", "LAMB", "Lamb", "Adafactor", "LARS")
)
_MODULES_READ = 40  # project modules followed from the script for a precision setting
# The setting, by the API of the target version: `fp32_precision` from torch 2.9 on.
_NEW_API = (2, 9)
_SETTING_NEW = '{torch}.backends.cuda.matmul.fp32_precision = "tf32"'
_SETTING_OLD = '{torch}.set_float32_matmul_precision("high")'


@dataclass(frozen=True)
class _Build:
    """The statement that builds the trained model."""

    line: cst.SimpleStatementLine
    assign: cst.BaseSmallStatement
    at_module_level: bool


class Fp32MatmulPrecision(Rule):
    """## What it does
    Flags a script that trains a model on CUDA in float32 (no `torch.autocast`, no
    `GradScaler`, no half or bfloat16 model, no framework that sets the precision) and never
    allows TF32 for float32 matmuls: no `torch.set_float32_matmul_precision("high")` (or
    `"medium"`), no `torch.backends.cuda.matmul.allow_tf32 = True`, and (torch 2.9 and
    later) no `torch.backends.cuda.matmul.fp32_precision = "tf32"`, in the script or the
    project modules it imports. The statement that builds the trained model is reported.

    Silent for scripts that set any of these (including an explicit `"highest"` or
    `allow_tf32 = False`: a choice), for CPU- and MPS-only scripts, for convolutional models
    (cuDNN convolutions already use TF32 by default; TPF403 covers them), for models of
    unknown kind, and when `target-torch-version` predates 1.12 (TF32 matmuls were on by
    default before), and for scripts that train on torchvision's MNIST family (28x28
    inputs: the matmuls are too small for TF32 to pay), or that use float64 (`.double()`,
    `torch.float64`, `set_default_dtype`).

    ## Why is this bad?
    Since torch 1.12 float32 matmuls on CUDA run in full IEEE float32 by default. Ampere and
    later GPUs (A100, RTX 30xx, H100...) have TF32 tensor cores that run the same matmuls
    several times faster (about 8x the peak throughput on an A100) with float32's range and
    a 10-bit mantissa, which is precise enough for training almost every network. Linear
    layers, attention and every `@` of a float32 model leave that speed unused.

    ## Example
    ```python
    import torch

    model = Transformer().cuda()
    ```

    ## Use instead
    ```python
    import torch

    torch.backends.cuda.matmul.fp32_precision = "tf32"  # torch >= 2.9
    # torch.set_float32_matmul_precision("high")         # torch 1.12 - 2.8
    model = Transformer().cuda()
    ```

    ## Fix safety
    The fix inserts the setting of the API of `target-torch-version` at the top of the
    entry script, after its imports (`fp32_precision = "tf32"` from 2.9 on, else
    `torch.set_float32_matmul_precision("high")`). It is unsafe: matmul results change
    within TF32's precision (about 3 decimal digits in each product), which a numerically
    sensitive model or a test that compares against float32 references may notice. From
    torch 2.9 on, once `fp32_precision` is set, the legacy getters raise a `RuntimeError`
    about mixing the two APIs (`torch.get_float32_matmul_precision()`, reading
    `torch.backends.cuda.matmul.allow_tf32`): code or a library that still reads them must
    move to the new API, or set `target-torch-version` below 2.9 to get the legacy call. In a
    module that is not an entry script (a trainer class whose constructor builds the model)
    the fix is display-only: the setting is global and belongs to the script.
    """

    code = "TPF603"
    name = "fp32-matmul-precision"
    message = (
        "Model trained in float32 on CUDA without TF32 matmuls; set `{setting}` so that Ampere "
        "and later GPUs run float32 matmuls on their tensor cores"
    )
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = ("cuda",)
    needs_cuda = True
    preview = True
    min_torch = (1, 12)

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """CUDA, a training loop, and no word that says the precision is chosen here."""
        return "cuda" in source and (".backward(" in source or ".step(" in source) and not chooses_precision(source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains here (backward, a step, or a helper defined here)."""
        return could_have_training_loop(tree)

    _PROLOGUE = (
        "import torch\nimport torch.nn as nn\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(512, 512)\n"
        "    def forward(self, x):\n        return self.fc(x).mean()\n"
    )
    _LOOP = (
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
        "for x in loader:\n    model(x.cuda()).backward()\n    opt.step()\n"
    )
    _SCRIPT = _PROLOGUE + "model = Net().cuda()\n" + _LOOP
    _DDP_IMPORT = "import torch.nn as nn\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    _FIXED_NEW = _PROLOGUE.replace(
        "import torch.nn as nn\n", 'import torch.nn as nn\n\ntorch.backends.cuda.matmul.fp32_precision = "tf32"\n'
    )

    VALID = (
        _SCRIPT.replace("model = Net", 'torch.set_float32_matmul_precision("high")\nmodel = Net'),
        _SCRIPT.replace("model = Net", "torch.backends.cuda.matmul.allow_tf32 = True\nmodel = Net"),
        _SCRIPT.replace("model = Net", 'torch.backends.cuda.matmul.fp32_precision = "tf32"\nmodel = Net'),
        # An explicit choice of full precision.
        _SCRIPT.replace("model = Net", 'torch.set_float32_matmul_precision("highest")\nmodel = Net'),
        # Mixed precision already uses the tensor cores.
        _SCRIPT.replace("    model(x.cuda())", "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        out = model(x.cuda())\n    out"),
        _SCRIPT.replace("Net().cuda()", "Net().cuda().half()"),
        # CPU only, and Apple's GPU.
        _SCRIPT.replace(".cuda()", ""),
        _SCRIPT.replace("Net().cuda()", "Net().to('mps')").replace("x.cuda()", "x.to('mps')"),
        # A convolutional model: cuDNN convolutions use TF32 already (TPF403's ground).
        _SCRIPT.replace("nn.Linear(512, 512)", "nn.Conv2d(3, 8, 3)"),
        _SCRIPT.replace("nn.Linear(512, 512)", "nn.Conv2d(3, 8, 3)")
        .replace("import torch.nn as nn\n", _DDP_IMPORT)
        .replace("model = Net().cuda()", "model = DDP(Net().cuda())"),
        # A model of unknown kind from a call that is not a model builder.
        "import torch\nmodel = registry[name].cuda()\n" + _LOOP,
        # No training here.
        _PROLOGUE + "model = Net().cuda()\nwith torch.no_grad():\n    out = model(x.cuda())\n",
        # TF32 matmuls were the default before 1.12.
        Valid(_SCRIPT, {"target-torch-version": "1.11"}),
        # MNIST-sized data: launch-bound, TF32 would not show.
        "from torchvision import datasets\n" + _SCRIPT.replace("model = Net", "data = datasets.MNIST('.', download=True)\nmodel = Net"),
        # Double precision: the author wants the digits.
        _SCRIPT.replace("Net().cuda()", "Net().double().cuda()").replace("x.cuda()", "x.double().cuda()"),
        # A framework sets the precision.
        "from accelerate import Accelerator\n" + _SCRIPT,
        # The loss module is called in the loop too; the model trained is of unknown kind.
        "import torch\nfrom torch import nn\ncriterion = nn.MSELoss().cuda()\nmodel = registry[name].cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x, y in loader:\n    criterion(model(x.cuda()), y.cuda()).backward()\n    opt.step()\n",
        # A convolutional model is trained; the linear head built beside it is not the model.
        "import torch\nimport torchvision\nfrom torch import nn\nmodel = torchvision.models.resnet50().cuda()\n"
        "head = nn.Linear(1000, 10).cuda()\nopt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)\n"
        "for x, y in loader:\n    nn.functional.cross_entropy(head(model(x.cuda())), y.cuda()).backward()\n    opt.step()\n",
    )
    INVALID = (
        Invalid(_SCRIPT, line=9, expected_fix=_FIXED_NEW + "model = Net().cuda()\n" + _LOOP),
        Invalid(
            _SCRIPT,
            line=9,
            expected_fix=_PROLOGUE.replace(
                "import torch.nn as nn\n", 'import torch.nn as nn\n\ntorch.set_float32_matmul_precision("high")\n'
            )
            + "model = Net().cuda()\n"
            + _LOOP,
            options={"target-torch-version": "2.8"},
        ),
        # A library transformer, wrapped in DDP afterwards: the build is reported.
        Invalid(
            '"""Train."""\nimport timm\nimport torch as th\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n'
            "def main():\n    model = timm.create_model('vit_base_patch16_224').cuda()\n    model = DDP(model)\n"
            "    opt = th.optim.SGD(model.parameters(), lr=0.1)\n"
            "    for x, y in loader:\n        crit(model(x.cuda()), y.cuda()).backward()\n        opt.step()\n"
            "if __name__ == '__main__':\n    main()\n",
            line=6,
            expected_fix='"""Train."""\nimport timm\nimport torch as th\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n'
            '\nth.backends.cuda.matmul.fp32_precision = "tf32"\n'
            "def main():\n    model = timm.create_model('vit_base_patch16_224').cuda()\n    model = DDP(model)\n"
            "    opt = th.optim.SGD(model.parameters(), lr=0.1)\n"
            "    for x, y in loader:\n        crit(model(x.cuda()), y.cuda()).backward()\n        opt.step()\n"
            "if __name__ == '__main__':\n    main()\n",
        ),
        # Built inside its wrapper (`DDP(Net().cuda())`): the build is that statement.
        Invalid(
            _SCRIPT.replace("import torch.nn as nn\n", _DDP_IMPORT).replace("model = Net().cuda()", "model = DDP(Net().cuda())"),
            line=10,
            expected_fix=_FIXED_NEW.replace(
                "import torch.nn as nn\n", _DDP_IMPORT
            )
            + "model = DDP(Net().cuda())\n"
            + _LOOP,
        ),
        # A trainer class is no entry script: the setting is shown, not inserted.
        Invalid(
            "import torch\nfrom torch import nn\nclass Trainer:\n    def __init__(self):\n"
            "        self.model = nn.Sequential(nn.Linear(8, 8), nn.ReLU()).cuda()\n"
            "        self.opt = torch.optim.Adam(self.model.parameters())\n"
            "    def fit(self, loader):\n        for x in loader:\n            self.model(x.cuda()).sum().backward()\n"
            "            self.opt.step()\n",
            line=5,
        ),
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        build = self.context.fact(_trained_build)
        if build is not None and build.line is node:
            setting = _setting(self.context.settings.target_torch_version)
            message = self.message.format(setting=setting.format(torch="torch"))
            self.report(build.assign, message=message, fix=self._insert(build.at_module_level, setting))

    def _insert(self, build_at_module_level: bool, setting: str) -> NodeFix:
        insertion = None
        if is_entry_script(self.context, build_at_module_level):
            insertion = insert_after_imports(self.context, setting + "\n")
        shown = setting.format(torch="torch")
        if insertion is None:
            return self.fix(
                [],
                message=f"Set `{shown}` at the start of the script that runs this training, after its imports",
                applicability=Applicability.DISPLAY_ONLY,
            )
        replacements, imports = insertion
        return self.fix(replacements, message=f"Insert `{shown}` after the imports", imports=imports)


def _setting(version: Tuple[int, int]) -> str:
    return _SETTING_NEW if version >= _NEW_API else _SETTING_OLD


def _trained_build(context: FileContext) -> Optional[_Build]:
    """The first statement that builds a model whose parameters this module hands to an
    optimizer, when the script trains (a training loop) in float32 on CUDA with no TF32
    setting and trains no convolutional model; None otherwise."""
    if context.settings.target_torch_version < Fp32MatmulPrecision.min_torch:  # type: ignore[operator]
        return None  # also when the rule is run directly, not through the selection
    called = training_receivers(context)
    if called is None or _TOY_DATA.search(context.source) or _FLOAT64.search(context.source) or _precision_chosen(context):
        return None
    trained: Set[str] = set()
    candidates = []
    for visited in walk_scoped(context.module):
        node = visited.node
        if type(node) is cst.Call and type(node.func) in (cst.Name, cst.Attribute):
            if _optimizer_call(context, node, context.scope_of(visited.chain)):
                trained.update(_optimized_models(node))
        elif type(node) is cst.SimpleStatementLine and len(node.body) == 1 and not _in_layer_class(context, visited):
            small = node.body[0]
            if type(small) in (cst.Assign, cst.AnnAssign) and small.value is not None:  # type: ignore[attr-defined]
                targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]  # type: ignore[attr-defined]
                target = dotted_name(targets[0]) if len(targets) == 1 and type(targets[0]) in (cst.Name, cst.Attribute) else None
                scope = context.scope_of(visited.chain)
                if target is not None and _builds_model(context, small.value, scope):  # type: ignore[attr-defined]
                    candidates.append((node, small, target, visited.chain, scope))
    if any(build.conv for build in model_builds(context, trained)):
        return None  # a convolutional model is trained: cuDNN uses TF32 for it already
    for line, small, target, chain, scope in candidates:
        if target not in trained:
            continue
        if in_test_code(list(chain), context.path):
            return None
        return _Build(line, small, len(chain) == 1)
    return None


def _optimizer_call(context: FileContext, call: cst.Call, scope: Scope) -> bool:
    """``torch.optim.AdamW(...)``, ``Lion(...)``, ``build_optimizer(...)``."""
    qualname = context.qualname(call.func, scope)
    if qualname is not None and qualname.startswith("torch.optim.") and "lr_scheduler" not in qualname:
        return True
    last = last_name(call.func) or ""
    return last in _OPTIMIZER_CLASSES or "optim" in last.lower()


def _optimized_models(call: cst.Call) -> Set[str]:
    """What an optimizer call is given: ``m`` for ``m.parameters()`` /
    ``m.named_parameters()`` anywhere in its arguments, or ``m`` passed itself."""
    found: Set[str] = set()
    for arg in call.args:
        if type(arg.value) in (cst.Name, cst.Attribute):
            dotted = dotted_name(arg.value)
            if dotted is not None:
                found.add(dotted)
        for node in descendants(arg.value):
            if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _TRAINED_BY:
                receiver = dotted_name(node.func.value)
                if receiver is not None:
                    found.add(receiver)
    return found


def _in_layer_class(context: FileContext, visited: Visited) -> bool:
    """Inside a class that is a module itself (``class Net(nn.Module)``): its assignments
    build submodules, not the model that is trained."""
    cls = visited.cls
    if cls is None:
        return False
    outer = next((visited.chain[:i] for i, node in enumerate(visited.chain) if node is cls), None)
    scope = context.scope_of(outer) if outer else context.module_scope
    for base in cls.bases:
        qualname = context.qualname(base.value, scope) if type(base.value) in (cst.Name, cst.Attribute) else None
        last = last_name(base.value) or ""
        if (qualname is not None and qualname.startswith("torch.nn.")) or last.endswith("Module"):
            return True
    return False


def _unwrap(context: FileContext, value: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
    """The build inside a wrapper that is given it directly: ``DDP(Net().cuda(rank),
    device_ids=[rank])`` and ``torch.compile(Net())`` build ``Net()`` (TPF403 reads them so)."""
    for _ in range(4):  # DDP(torch.compile(Net().cuda())) at most
        while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _MODEL_METHODS:
            value = value.func.value
        if not (type(value) is cst.Call and type(value.func) in (cst.Name, cst.Attribute) and value.args):
            break
        if value.args[0].keyword is not None or value.args[0].star or context.qualname(value.func, scope) not in _WRAPPERS:
            break
        value = value.args[0].value
    return value


def _builds_model(context: FileContext, value: cst.BaseExpression, scope: Scope) -> bool:
    """``Net(...)``, ``nn.Sequential(...)``, ``timm.create_model(...)``, ``build_model(cfg)``,
    possibly moved (``.cuda()``, ``.to(device)``) or wrapped where it is built
    (``DDP(Net().cuda())``); not a wrapper of a model built before (``DDP(model)``)."""
    value = _unwrap(context, value, scope)
    if type(value) is not cst.Call or type(value.func) not in (cst.Name, cst.Attribute):
        return False
    qualname = context.qualname(value.func, scope)
    last = last_name(value.func) or ""
    if last.endswith("Loss") or _LOSS.search(last):
        return False  # `criterion = nn.CrossEntropyLoss().cuda()` is no model
    if qualname is not None:
        if qualname in _WRAPPERS:
            return False
        if qualname.startswith(_LIBRARY_MODELS):
            return "Weights" not in last and not last.startswith(("get_weight", "list_", "load_"))
        if qualname.startswith("torch.nn.") and not qualname.startswith(_NN_NOT_LAYERS):
            return last[:1].isupper()
        if qualname.split(".", 1)[0] in ("torch", "numpy", "np", "accelerate", "deepspeed", "lightning", "pytorch_lightning"):
            return False
    elif type(value.func) is cst.Attribute:
        return False  # `registry.get(name)`, `self.make()`: unknown
    return last[:1].isupper() or bool(_FACTORY.search(last))


def _precision_chosen(context: FileContext) -> bool:
    """The module, or a project module it imports (transitively, up to a bound), sets the
    precision or TF32, or hands it to a framework."""
    if chooses_precision(context.source):
        return True
    project = context.project
    if project is None:
        return False
    seen: Set[str] = set()
    todo = [os.path.abspath(context.path)]
    while todo and len(seen) < _MODULES_READ:
        path = todo.pop()
        for imported in sorted(project.imported_modules(path)):
            if imported in seen:
                continue
            seen.add(imported)
            text = project.text(imported)
            if text is not None and chooses_precision(text):
                return True
            todo.append(imported)
    return False
