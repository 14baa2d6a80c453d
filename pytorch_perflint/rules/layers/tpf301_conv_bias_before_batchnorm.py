"""TPF301 conv-bias-before-batchnorm."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from ...analysis.ast_index import tree_index
from ...analysis.call_edits import keyword_arg, with_keywords
from ...analysis.calls import MISSING
from ...analysis.values import UNKNOWN
from ...analysis.walk import descendants
from ...context import FileContext
from ...finding import NodeFix
from ...rule import Invalid, Rule
from ...types import Applicability
from ...analysis.scope import Scope
from ...project.kinds import Flag, Options
from ...facts.layers.bias_sources import HelperLayer, HelperLayers
from ...facts.layers.module_facts import Feed, Layer, ModuleFacts, module_facts
from ...facts.layers.module_parts import HELPER, variables

# Layer -> (BatchNorm dimensions it matches, position of ``bias``).
_SOURCES: Dict[str, Tuple[int, int]] = {
    "torch.nn.Conv1d": (1, 7),
    "torch.nn.Conv2d": (2, 7),
    "torch.nn.Conv3d": (3, 7),
    "torch.nn.LazyConv1d": (1, 6),
    "torch.nn.LazyConv2d": (2, 6),
    "torch.nn.LazyConv3d": (3, 6),
    "torch.nn.ConvTranspose1d": (1, 7),
    "torch.nn.ConvTranspose2d": (2, 7),
    "torch.nn.ConvTranspose3d": (3, 7),
    "torch.nn.LazyConvTranspose1d": (1, 6),
    "torch.nn.LazyConvTranspose2d": (2, 6),
    "torch.nn.LazyConvTranspose3d": (3, 6),
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
_BIAS_POSITIONS = {name: bias for name, (_, bias) in _SOURCES.items()}
_SOURCE_NAMES = {name.rsplit(".", 1)[1]: bias for name, (_, bias) in _SOURCES.items()}
_NORM_NAMES = frozenset(name.rsplit(".", 1)[1] for name in _NORMS)
_TORCH_PACKAGES = frozenset(("torch", "torchvision"))


@dataclass(frozen=True)
class Flagged:
    """A layer whose bias the BatchNorm after it cancels, and where that bias is decided:
    ``keyword``/``position`` name the call's argument that sets it (a helper's parameter
    for a layer built by project helper ``helper``; None when the helper fixes it), and
    ``owner`` the function whose parameter default gives it (``bias=bias``)."""

    layer: Layer
    qualname: str
    keyword: Optional[str]
    position: Optional[int]
    helper: Optional[str] = None
    owner: Optional[str] = None
    spread: Optional[str] = None  # the ``**kwargs`` it is built with, that no caller gives the bias


def _dims_match(source: str, norm: str) -> bool:
    dims = _NORMS[norm]
    return dims is None or dims == _SOURCES[source][0]


def _decide(layer: Layer, helpers: HelperLayers, context: FileContext) -> Optional[Flagged]:
    """The layer, if its bias is known to be on: absent (the class default is True),
    literally True, or a parameter whose default and every project caller say True.
    Unknown values stay silent."""
    helper: Optional[HelperLayer] = None
    if layer.qualname == HELPER:
        helper = helpers.of(layer.call, layer.scope)
        if helper is None:
            return None
        if helper.parameter is None:
            on = helper.fixed is MISSING or helper.fixed is True
            return Flagged(layer, helper.qualname, None, None, helper.name) if on else None
        qualname, keyword, position, default = helper.qualname, helper.parameter, helper.position, helper.default
    else:
        qualname, keyword, position, default = layer.qualname, "bias", _SOURCES[layer.qualname][1], True
    name = None if helper is None else helper.name
    passed = layer.argument(keyword, position)
    value = default if passed.value is MISSING else passed.value
    if value is True:
        return Flagged(layer, qualname, keyword, position, name)
    if value is UNKNOWN and passed.node is not None:
        owner = _parameter_owner(context, passed.node.value, layer)
        if owner is not None:
            return Flagged(layer, qualname, keyword, position, name, owner)
    if value is UNKNOWN and passed.node is None and default is True:
        spread = _spread_without(context, layer, keyword, position)
        if spread is not None:
            return Flagged(layer, qualname, keyword, position, name, spread=spread)
    return None


def _spread_without(context: FileContext, layer: Layer, keyword: str, position: Optional[int]) -> Optional[str]:
    """``nn.Conv2d(a, b, k, **kwargs)`` where ``kwargs`` is the ``**`` parameter of the
    enclosing function or constructor, passed on untouched, and the value engine says no
    project caller gives it ``keyword`` (every caller known, none passing an unknown dict):
    the layer's default holds. The parameter's name, else None."""
    spreads = [a for a in layer.call.args if a.star == "**"]
    if context.project is None or len(spreads) != 1 or type(spreads[0].value) is not cst.Name:
        return None
    if any(a.star == "*" for a in layer.call.args) or (position is not None and sum(1 for a in layer.call.args if not a.star and a.keyword is None) > position):
        return None
    name = spreads[0].value.value  # type: ignore[attr-defined]
    owner = _binding_scope(layer.scope, name)
    function = owner.node if owner is not None else None
    if type(function) is not cst.FunctionDef or owner.parent is None:  # type: ignore[union-attr]
        return None
    star = function.params.star_kwarg
    if not isinstance(star, cst.Param) or star.name.value != name:
        return None
    spread = sum(1 for n in descendants(function) if type(n) is cst.Arg and n.star == "**" and type(n.value) is cst.Name and n.value.value == name)
    if sum(1 for n in descendants(function) if type(n) is cst.Name and n.value == name) != spread + 1:
        return None  # read, changed or rebound otherwise (`kwargs["bias"] = True`, `kwargs.pop(...)`)
    outer = owner.parent.node  # type: ignore[union-attr]
    top = next((s for s in context.module.body if s is function or s is outer), None)
    if top is None or (top is outer and type(outer) is not cst.ClassDef):
        return None
    kind = context.value_of(spreads[0].value, top)
    return name if type(kind) is Options and not kind.open and keyword not in dict(kind.items) else None


def _parameter_owner(context: FileContext, value: cst.BaseExpression, layer: Layer) -> Optional[str]:
    """``bias=bias`` where ``bias`` is a parameter of the enclosing module-level function or
    method and the value engine says it is ``True`` there (its default, and what every
    project caller passes): the function's name (``conv_bn``, ``Block.__init__``)."""
    if context.project is None or type(value) is not cst.Name:
        return None
    owner = _binding_scope(layer.scope, value.value)
    if owner is None or type(owner.node) is not cst.FunctionDef or owner.parent is None:
        return None
    function, outer = owner.node, owner.parent
    if type(outer.node) is cst.Module:
        written = function.name.value
    elif type(outer.node) is cst.ClassDef and outer.parent is not None and type(outer.parent.node) is cst.Module:
        written = f"{outer.node.name.value}.{function.name.value}"
    else:
        return None
    top = next((s for s in context.module.body if s is function or s is outer.node), None)
    if top is None:
        return None
    return written if context.value_of(value, top) == Flag(True) else None


def _binding_scope(scope: Scope, name: str) -> Optional[Scope]:
    return next((s for s in scope.visible() if name in s.bindings or name in s.imports or name in s.declared_outer), None)


def flagged(facts: ModuleFacts, context: FileContext) -> Dict[int, Flagged]:
    """id(layer call) -> the layer, for layers whose output only feeds a matching BatchNorm."""
    groups: List[List[Feed]] = []
    forward: Dict[int, List[Feed]] = {}
    for feed in facts.feeds:
        if feed.source.qualname not in _SOURCES and feed.source.qualname != HELPER:
            continue
        if feed.how == "forward":
            forward.setdefault(id(feed.source.call), []).append(feed)
        else:
            groups.append([feed])
    groups.extend(forward.values())
    helpers = HelperLayers(context, _BIAS_POSITIONS)
    out: Dict[int, Flagged] = {}
    for feeds in groups:
        source = feeds[0].source
        if id(source.call) in out or not all(f.target.qualname in _NORMS for f in feeds):
            continue
        found = _decide(source, helpers, context)
        if found is not None and all(_dims_match(found.qualname, f.target.qualname) for f in feeds):
            out[id(source.call)] = found
    return out


class ConvBiasBeforeBatchnorm(Rule):
    """## What it does
    Flags a convolution (`nn.Conv1d/2d/3d`, `nn.ConvTranspose1d/2d/3d` and their lazy forms)
    or an `nn.Linear` that keeps its bias although its output goes straight into a matching
    `BatchNorm*d` (or `SyncBatchNorm`): adjacent in an `nn.Sequential` (arguments, a list,
    an `OrderedDict`, `layers.append(...)` sequences) or in `forward`
    (`self.bn(self.conv(x))`, or `x = self.conv(x)` followed by `x = self.bn(x)`).

    The layer may be built by a helper of the project, in this module or another
    (`conv3x3(a, b)` with `def conv3x3(in_planes, out_planes, stride=1, bias=True): return
    nn.Conv2d(..., bias=bias)`), or by a project `nn.Module` that wraps one (its `__init__`
    binds `self.conv = nn.Conv2d(..., bias=bias)`, its `forward` ends in `return
    self.conv(x)`, as a same-padding conv does): then the helper call is reported. `bias=bias` counts as
    true when `bias` is a parameter of the enclosing function or constructor that defaults
    to `True` and no caller in the project passes anything else; a layer built with the
    `**kwargs` of its function or constructor (`nn.Conv2d(cin, cout, k, **kwargs)`, passed
    on untouched) keeps its default bias when no project caller passes `bias` (every caller
    known, none with an unknown `**` dict). `if batch_norm: layers += [nn.BatchNorm2d(c)]`
    (no `else`) right after the conv is added counts as adjacent when every project caller
    turns the flag on.

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
    change its public `state_dict`. For a helper call the fix passes `False` for the
    helper's bias parameter; where the helper has none, or the bias is a parameter's
    default, the fix only says what to change. Nothing is flagged when an activation,
    dropout or any other op sits between the layers, when the norm is a
    GroupNorm/LayerNorm/InstanceNorm, or when the bias is not known (a parameter without a
    default, one that a caller sets otherwise, `bias=args.bias`, a helper that passes
    `**kwargs` on).
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
        """A BatchNorm and a layer that could feed it (``Conv2d``, or a helper ``conv3x3``)."""
        return "BatchNorm" in source and ("onv" in source or "inear" in source)

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
        Invalid(
            "import torch.nn as nn\nup = nn.Sequential(nn.ConvTranspose2d(16, 8, 2, stride=2), nn.BatchNorm2d(8))\n",
            line=2,
            expected_fix="import torch.nn as nn\n"
            "up = nn.Sequential(nn.ConvTranspose2d(16, 8, 2, stride=2, bias=False), nn.BatchNorm2d(8))\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        found = self.context.fact(_flagged).get(id(node))
        if found is not None:
            self.report(node, fix=self._fix(found))

    def _fix(self, found: Flagged) -> Optional[NodeFix]:
        """``bias=False`` on the call itself; none for a layer object shared by name."""
        layer = found.layer
        if layer.via_name is not None and self._shared(layer):
            return None
        if found.spread is not None:
            return self.fix([], message=_SPREAD_BIAS.format(spread=found.spread), applicability=Applicability.DISPLAY_ONLY)
        if found.owner is not None:
            message = _PARAMETER_BIAS.format(name=found.owner, parameter=_argument_code(self.context, layer, found))
            return self.fix([], message=message, applicability=Applicability.DISPLAY_ONLY)
        if found.keyword is None:
            message = _HELPER_BIAS.format(helper=found.helper, layer=found.qualname.replace("torch.nn.", "nn."))
            return self.fix([], message=message, applicability=Applicability.DISPLAY_ONLY)
        call = layer.call
        passed = layer.argument(found.keyword, found.position).node
        if passed is not None:  # `bias=True` written out: the author chose the parameter set
            new = call.with_changes(
                args=[a.with_changes(value=cst.Name("False")) if a is passed else a for a in call.args]
            )
            return self.fix([(call, new)], message=_EXPLICIT_BIAS, applicability=Applicability.DISPLAY_ONLY)
        elif any(a.star == "**" for a in call.args):
            return None  # bias comes from a known dict: adding it would pass it twice
        else:
            new = with_keywords(call, [keyword_arg(found.keyword, cst.Name("False"))])
        return self.fix([(call, new)], message=f"Pass `{found.keyword}=False`")

    def _shared(self, layer: Layer) -> bool:
        """Whether the layer's name is read more than once (a sibling branch may use it)."""
        name = layer.via_name
        count = sum(1 for n in variables(layer.scope.node) if n.value == name)
        return count > 2  # the binding and the one use


def _argument_code(context: FileContext, layer: Layer, found: Flagged) -> str:
    """The source of the argument that passes the parameter (``bias``)."""
    passed = layer.argument(found.keyword or "bias", found.position).node
    return context.module.code_for_node(passed.value) if passed is not None else "bias"


_EXPLICIT_BIAS = (
    "`bias=True` is written out, so it is left as it is: `bias=False` removes the parameter "
    "from the module's `state_dict` (pretrained or saved checkpoints no longer load strictly); "
    "pass `bias=False` where no checkpoint holds this bias"
)
_PARAMETER_BIAS = (
    "The bias is `{parameter}`, a parameter of `{name}` that defaults to True and that no "
    "caller in the project sets to False: pass `bias=False` here, or make the default False"
)
_SPREAD_BIAS = (
    "The bias comes through `**{spread}`, to which no caller in the project passes `bias`, so "
    "it is on: pass `bias=False` here (or from the callers)"
)
_HELPER_BIAS = (
    "`{helper}` builds `{layer}` with its bias: give it a `bias` parameter and pass "
    "`bias=False` here"
)


def _flagged(context: FileContext) -> Dict[int, Flagged]:
    return flagged(context.fact(module_facts), context)


def _builds_layer_and_norm(tree: ast.Module) -> bool:
    """Some call names a BatchNorm class, and another a Conv/Linear class without a literal
    ``bias=False`` (by its last name, or the alias ``from torch.nn import X as Y`` binds),
    or a function that may be a project helper building one, where a layer stands
    (``modules.module_facts`` only pairs layers it sees constructed)."""
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
    return norm and _builds_with_helper(tree, index)


def _builds_with_helper(tree: ast.Module, index) -> bool:
    """A call of a name that may reach a project function stands where a layer does: the
    value of an assignment (``self.conv = conv3x3(a, b)``), an argument (``Sequential(
    conv3x3(a, b), ...)``, ``layers.append(...)``), or an item of a list either holds."""
    helpers: Optional[Set[str]] = None
    values: List[ast.AST] = [node.value for node in index.assignments if node.value is not None]
    values.extend(arg for call in index.calls for arg in call.args)
    for value in values:
        if isinstance(value, ast.Starred):
            value = value.value
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else (value,)
        for item in items:
            if not isinstance(item, ast.Call):
                continue
            head = item.func
            while isinstance(head, ast.Attribute):
                head = head.value
            if not isinstance(head, ast.Name):
                continue
            if helpers is None:
                helpers = _helper_names(tree, index.imports)
            if head.id in helpers:
                return True
    return False


def _helper_names(tree: ast.Module, imports) -> Set[str]:
    """Names that may reach a project function: the module's own defs and what it imports
    from anything but torch (``conv3x3``, ``blocks`` in ``blocks.conv_bn(...)``)."""
    names = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    for node in imports:
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").partition(".")[0] not in _TORCH_PACKAGES:
                names.update(alias.asname or alias.name for alias in node.names)
        else:
            for alias in node.names:
                if alias.name.partition(".")[0] not in _TORCH_PACKAGES:
                    names.add(alias.asname or alias.name.partition(".")[0])
    return names


def _bias_off(call: ast.Call, position: int) -> bool:
    """``bias=False`` (or False at the bias position) as a literal."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        value: Optional[ast.AST] = call.args[position]
    else:
        value = next((k.value for k in call.keywords if k.arg == "bias"), None)
    return isinstance(value, ast.Constant) and value.value is False
