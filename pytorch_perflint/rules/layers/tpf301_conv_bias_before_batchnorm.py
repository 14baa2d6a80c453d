"""TPF301 conv-bias-before-batchnorm."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ...analysis.ast_index import tree_index
from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import MISSING
from ...context import FileContext
from ...finding import NodeFix
from ...rule import Invalid, Rule
from ...types import Applicability
from .module_facts import Feed, Layer, ModuleFacts, module_facts
from .module_parts import variables

# Layer -> (BatchNorm dimensions it matches, position of ``bias``).
_SOURCES: Dict[str, Tuple[int, int]] = {
    "torch.nn.Conv1d": (1, 7),
    "torch.nn.Conv2d": (2, 7),
    "torch.nn.Conv3d": (3, 7),
    "torch.nn.LazyConv1d": (1, 6),
    "torch.nn.LazyConv2d": (2, 6),
    "torch.nn.LazyConv3d": (3, 6),
    "torch.nn.Linear": (1, 2),
    "torch.nn.LazyLinear": (1, 1),
}
# BatchNorm -> dimensions (None: SyncBatchNorm takes any).
_NORMS: Dict[str, Optional[int]] = {
    "torch.nn.BatchNorm1d": 1,
    "torch.nn.BatchNorm2d": 2,
    "torch.nn.BatchNorm3d": 3,
    "torch.nn.LazyBatchNorm1d": 1,
    "torch.nn.LazyBatchNorm2d": 2,
    "torch.nn.LazyBatchNorm3d": 3,
    "torch.nn.SyncBatchNorm": None,
}
_SOURCE_NAMES = {name.rsplit(".", 1)[1]: bias for name, (_, bias) in _SOURCES.items()}
_NORM_NAMES = frozenset(name.rsplit(".", 1)[1] for name in _NORMS)


def _matches(feed: Feed) -> bool:
    source = _SOURCES.get(feed.source.qualname)
    if source is None or feed.target.qualname not in _NORMS:
        return False
    dims = _NORMS[feed.target.qualname]
    return dims is None or dims == source[0]


def _redundant_bias(layer: Layer) -> bool:
    """Bias absent (default True) or literally True; unknown values stay silent."""
    value = layer.argument("bias", _SOURCES[layer.qualname][1]).value
    return value is MISSING or value is True


def flagged(facts: ModuleFacts) -> Dict[int, Layer]:
    """id(conv call) -> conv layer, for convs whose output only feeds a matching BatchNorm."""
    forward: Dict[int, List[Feed]] = {}
    out: Dict[int, Layer] = {}
    for feed in facts.feeds:
        if feed.source.qualname not in _SOURCES:
            continue
        if feed.how == "forward":
            forward.setdefault(id(feed.source.call), []).append(feed)
        elif _matches(feed) and _redundant_bias(feed.source):
            out[id(feed.source.call)] = feed.source
    for feeds in forward.values():
        if all(_matches(f) for f in feeds) and _redundant_bias(feeds[0].source):
            out[id(feeds[0].source.call)] = feeds[0].source
    return out


class ConvBiasBeforeBatchnorm(Rule):
    """## What it does
    Flags a convolution (`nn.Conv1d/2d/3d` and their lazy forms) or an `nn.Linear` that
    keeps its bias although its output goes straight into a matching `BatchNorm*d` (or
    `SyncBatchNorm`): adjacent in an `nn.Sequential` (arguments, a list, an `OrderedDict`,
    `layers.append(...)` sequences) or in `forward` (`self.bn(self.conv(x))`, or
    `x = self.conv(x)` followed by `x = self.bn(x)`).

    ## Why is this bad?
    BatchNorm subtracts the per-channel mean of its input, so a per-channel constant added
    just before it cancels out: the bias is dead weight. It still costs an extra kernel (or
    epilogue) in the forward pass, a reduction in the backward pass, optimizer state and
    memory, for exactly the same function.

    ## Example
    ```python
    self.conv = nn.Conv2d(64, 128, 3, padding=1)
    self.bn = nn.BatchNorm2d(128)
    ...
    x = self.bn(self.conv(x))
    ```

    ## Use instead
    ```python
    self.conv = nn.Conv2d(64, 128, 3, padding=1, bias=False)
    ```

    ## Fix safety
    The fix adds `bias=False`. It is unsafe: checkpoints saved with the bias no longer load
    with `strict=True`, and code that reads `conv.bias` gets `None`. Where `bias=True` is
    written out (by keyword or position, or through a name bound to `True`) the finding is
    reported but its fix is display-only: a library that ships pretrained weights would
    change its public `state_dict`. Nothing is flagged when an activation, dropout or any other op
    sits between the layers, when the norm is a GroupNorm/LayerNorm/InstanceNorm, or when
    the bias is not a literal.
    """

    code = "TPF301"
    name = "conv-bias-before-batchnorm"
    message = (
        "Bias of a layer followed directly by BatchNorm is cancelled by the normalisation; "
        "pass `bias=False`"
    )
    fix_applicability = Applicability.UNSAFE
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    triggers = ("BatchNorm",)

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A BatchNorm and a layer that could feed it."""
        return "BatchNorm" in source and ("Conv" in source or "Linear" in source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code calls a BatchNorm class and a Conv or Linear class that may keep its bias."""
        return _builds_layer_and_norm(tree)

    VALID = (
        # An activation between the conv and the norm.
        "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))\n",
        # bias=False already.
        "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n",
        # Not a BatchNorm.
        "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8))\n",
        # Dimensions do not match.
        "import torch.nn as nn\nm = nn.Sequential(nn.Conv1d(3, 8, 3), nn.BatchNorm2d(8))\n",
        # A bias that is not a literal.
        "import torch.nn as nn\ndef f(use_bias):\n    return nn.Sequential(nn.Conv2d(3, 8, 3, bias=use_bias), nn.BatchNorm2d(8))\n",
        # A local class that happens to be called Conv2d.
        "import torch.nn as nn\nclass Conv2d: pass\nm = nn.Sequential(Conv2d(3, 8, 3), nn.BatchNorm2d(8))\n",
        # The conv output is also used past the norm.
        "import torch.nn as nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n        self.bn = nn.BatchNorm2d(8)\n"
        "    def forward(self, x):\n        y = self.conv(x)\n        z = self.bn(y)\n        return z + y\n",
    )
    INVALID = (
        Invalid(
            "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())\n",
            line=2,
            expected_fix=(
                "import torch.nn as nn\nm = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU())\n"
            ),
        ),
        Invalid(
            "from torch import nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.conv = nn.Conv2d(3, 8, 3, bias=True)\n        self.bn = nn.BatchNorm2d(8)\n"
            "    def forward(self, x):\n        return self.bn(self.conv(x)).relu()\n",
            line=5,
            # Written out: the fix is display-only.
            expected_fix=(
                "from torch import nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.conv = nn.Conv2d(3, 8, 3, bias=True)\n        self.bn = nn.BatchNorm2d(8)\n"
                "    def forward(self, x):\n        return self.bn(self.conv(x)).relu()\n"
            ),
        ),
        Invalid(
            "import torch\nhead = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8))\n",
            line=2,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        layer = self.context.fact(_flagged).get(id(node))
        if layer is not None:
            self.report(node, fix=self._fix(layer))

    def _fix(self, layer: Layer) -> Optional[NodeFix]:
        """``bias=False`` on the call itself; none for a layer object shared by name."""
        if layer.via_name is not None and self._shared(layer):
            return None
        call = layer.call
        passed = layer.argument("bias", _SOURCES[layer.qualname][1]).node
        if passed is not None:  # `bias=True` written out: the author chose the parameter set
            new = call.with_changes(
                args=[a.with_changes(value=cst.Name("False")) if a is passed else a for a in call.args]
            )
            return self.fix([(call, new)], message=_EXPLICIT_BIAS, applicability=Applicability.DISPLAY_ONLY)
        elif any(a.star == "**" for a in call.args):
            return None  # bias comes from a known dict: adding it would pass it twice
        else:
            new = with_keywords(call, [keyword_arg("bias", cst.Name("False"))])
        return self.fix([(call, new)], message="Pass `bias=False`")

    def _shared(self, layer: Layer) -> bool:
        """Whether the layer's name is read more than once (a sibling branch may use it)."""
        name = layer.via_name
        count = sum(1 for n in variables(layer.scope.node) if n.value == name)
        return count > 2  # the binding and the one use


_EXPLICIT_BIAS = (
    "`bias=True` is written out, so it is left as it is: `bias=False` removes the parameter "
    "from the module's `state_dict` (pretrained or saved checkpoints no longer load strictly); "
    "pass `bias=False` where no checkpoint holds this bias"
)


def _flagged(context: FileContext) -> Dict[int, Layer]:
    return flagged(context.fact(module_facts))


def _builds_layer_and_norm(tree: ast.Module) -> bool:
    """Some call names a BatchNorm class, and another a Conv/Linear class without a literal
    ``bias=False`` (by its last name, or the alias ``from torch.nn import X as Y`` binds):
    ``modules.module_facts`` only pairs layers it sees constructed."""
    index = tree_index(tree)
    aliases = {
        alias.asname: alias.name
        for node in index.imports
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname
    }
    norm = layer = False
    for call in index.calls:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        name = aliases.get(name, name)
        if name in _NORM_NAMES:
            norm = True
        elif name in _SOURCE_NAMES and not layer:
            layer = not _bias_off(call, _SOURCE_NAMES[name])
        if norm and layer:
            return True
    return False


def _bias_off(call: ast.Call, position: int) -> bool:
    """``bias=False`` (or False at the bias position) as a literal."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        value: Optional[ast.AST] = call.args[position]
    else:
        value = next((k.value for k in call.keywords if k.arg == "bias"), None)
    return isinstance(value, ast.Constant) and value.value is False
