"""Convolutional models built in the file (TPF403): torchvision, timm, smp and own nn.Module classes with convolutions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ...analysis.scope import Scope, dotted_name
from ...analysis.values import literal_value
from ...analysis.walk import child_nodes, descendants
from ...context import FileContext
from .arg_defaults import argparse_default
from .conv_names import CONV_LAYERS, TORCHVISION_CONV
from .module_parts import _SEQUENTIAL, walk_scoped

if TYPE_CHECKING:
    from .project_models import ProjectModels

# -- convolutional models built in the file (TPF403) -----------------------------------------

# timm (and torch.hub) model names that are convolutional networks.
_NAMED_CONV = TORCHVISION_CONV + (
    "seresne", "senet", "ecaresnet", "skresnet", "res2ne", "resnest", "tf_efficientnet",
    "mixnet", "tf_mixnet", "fbnet", "ghostnet", "rexnet", "hrnet", "dla", "dpn", "xception",
    "cspdarknet", "cspresne", "darknet", "nfnet", "dm_nfnet", "eca_nfnet", "nf_resnet",
    "repvgg", "selecsls", "tresnet", "vovnet", "ese_vovnet", "hardcorenas", "lcnet",
    "tf_mobilenet", "gernet", "legacy_se", "bat_resnext", "unet",
)
_SMP_MODELS = frozenset(
    ("Unet", "UnetPlusPlus", "FPN", "PSPNet", "DeepLabV3", "DeepLabV3Plus", "Linknet", "PAN", "MAnet")
)
# Calls that return (a wrapper of) the model they are given, or the model itself.
_WRAPPERS = frozenset(
    (
        "torch.nn.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.compile",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    )
)
# Methods that return the module they are called on (`resnet50(...).eval()` is still it).
_MODEL_METHODS = frozenset(
    ("to", "cuda", "train", "eval", "requires_grad_", "float", "half", "double", "bfloat16", "to_empty")
)


@dataclass(frozen=True)
class ModelBuild:
    """A statement that builds a convolutional model and binds it (``model = Net().cuda()``)."""

    line: cst.SimpleStatementLine
    assign: cst.BaseSmallStatement
    target: str  # dotted: ``model`` or ``self.net``
    # The convolutional class of the file whose body builds it (a sub-network), if any.
    inside_model: bool = False


def _literal_name(call: cst.Call, position: int, context: FileContext, scope: Scope) -> Optional[str]:
    """A model name passed as a string (see ``_model_name``)."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    keyword = next((a for a in call.args if a.keyword is not None and a.keyword.value == "model_name"), None)
    value = args[position].value if len(args) > position else keyword.value if keyword else None
    return _model_name(value, context, scope) if value is not None else None


def _model_name(value: cst.BaseExpression, context: FileContext, scope: Scope) -> Optional[str]:
    """A model name given as a literal, a constant, ``CFG.model_name`` or the command-line
    default of ``args.arch``."""
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
        constant = _class_constant(context, value.value.value, value.attr.value)
        if constant is None:
            return argparse_default(context, value, scope)
        value = constant
    found = literal_value(value, scope.lookup_value)
    return found if isinstance(found, str) else None


def _class_constant(context: FileContext, cls: str, attr: str) -> Optional[cst.BaseExpression]:
    """``attr = value`` in the body of module-level class ``cls`` (Kaggle's ``CFG``), if set
    exactly once there and never assigned from outside (``CFG.model_name = ...``)."""
    bindings = context.module_scope.bindings.get(cls)
    if bindings != [None]:
        return None
    node = next(
        (s for s in context.module.body if isinstance(s, cst.ClassDef) and s.name.value == cls), None
    )
    if node is None:
        return None
    values = context.scope_of([context.module, node]).bindings.get(attr)
    if not values or len(values) != 1 or values[0] is None:
        return None
    outside = any(
        isinstance(n, cst.AssignTarget) and dotted_name(n.target) == f"{cls}.{attr}"
        for n in descendants(context.module)
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Attribute)
    )
    return None if outside else values[0]


def _conv_name(name: Optional[str]) -> bool:
    return name is not None and name.lower().startswith(_NAMED_CONV)


class ConvModelFinder:
    """Which classes and expressions of a file build convolutional models."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.classes: Set[str] = set()
        self._functions: Optional[Dict[str, List[cst.FunctionDef]]] = None
        self._project: Optional["ProjectModels"] = None

    def core(self, call: cst.Call, scope: Scope) -> bool:
        """Whether a call by itself builds a convolutional network or layer."""
        name = self.context.qualname(call.func, scope)
        written: Optional[str] = None
        if name is None:
            func = call.func
            if not isinstance(func, cst.Name):
                member = self._named_member(func, scope)
                if member is None:
                    return False
                written, name = member
            else:
                return (
                    func.value in self.classes
                    and scope.lookup_import(func.value) is None
                    and func.value in self.context.module_scope.bindings
                )
        if name in CONV_LAYERS:
            return True
        last = name.rsplit(".", 1)[-1]
        if name.startswith("torchvision.models."):
            if last in ("get_model", "__dict__"):
                return _conv_name(_literal_name(call, 0, self.context, scope))
            return "_Weights" not in last and last.lower().startswith(TORCHVISION_CONV)
        if name == "timm.create_model":
            return _conv_name(_literal_name(call, 0, self.context, scope))
        if name == "torch.hub.load":
            return _conv_name(_literal_name(call, 1, self.context, scope))
        if name.startswith("segmentation_models_pytorch.") and last in _SMP_MODELS:
            return True
        if name.startswith("efficientnet_pytorch.EfficientNet"):
            return True
        return self._from_project(written or dotted_name(call.func), name)

    def _named_member(self, func: cst.BaseExpression, scope: Scope) -> Optional[Tuple[str, str]]:
        """``models.__dict__[arch]`` / ``getattr(models, arch)`` with the name known (a
        literal, a constant, a command-line default): the member as written and qualified
        (``models.resnet18``, ``torchvision.models.resnet18``)."""
        if (
            type(func) is cst.Subscript
            and type(func.value) is cst.Attribute
            and func.value.attr.value == "__dict__"
            and len(func.slice) == 1
            and type(func.slice[0].slice) is cst.Index
        ):
            owner, key = func.value.value, func.slice[0].slice.value
        elif (
            type(func) is cst.Call
            and type(func.func) is cst.Name
            and func.func.value == "getattr"
            and not scope.binds_in_chain("getattr")
            and len(func.args) == 2
            and all(a.keyword is None and not a.star for a in func.args)
        ):
            owner, key = func.args[0].value, func.args[1].value
        else:
            return None
        module = self.context.qualname(owner, scope)
        written = dotted_name(owner) if type(owner) in (cst.Name, cst.Attribute) else None
        member = _model_name(key, self.context, scope)
        if module is None or written is None or member is None or not member.isidentifier():
            return None
        return f"{written}.{member}", f"{module}.{member}"

    def _from_project(self, written: Optional[str], name: str) -> bool:
        """A class or factory of another project module (``from model import Net``)."""
        project = self.context.project
        if project is None or written is None or name.split(".", 1)[0] in _LIBRARIES:
            return False
        if self._project is None:
            from .project_models import ProjectModels

            self._project = ProjectModels(project)
        return self._project.builds_conv(str(self.context.path), written)

    def model(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether ``expr`` is a convolutional model (possibly moved, wrapped or compiled)."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            bound = scope.lookup_value(expr.value)
            return bound is not None and self.model(bound, scope, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MODEL_METHODS:
            if self.model(func.value, scope, depth + 1):
                return True
        name = self.context.qualname(func, scope)
        if name in _WRAPPERS and expr.args:
            return self.model(expr.args[0].value, scope, depth + 1)
        if name == _SEQUENTIAL:
            return any(
                isinstance(n, cst.Call) and self.core(n, scope) for a in expr.args for n in descendants(a.value)
            )
        return self.core(expr, scope) or (name is None and self.factory(expr, scope, depth))

    def factory(self, call: cst.Call, scope: Scope, depth: int) -> bool:
        """``build_model(cfg)``: a function defined once at the top of this module (and not
        shadowed where it is called) whose every ``return`` gives a convolutional model."""
        func = call.func
        if type(func) is not cst.Name:
            return False
        if self._functions is None:
            self._functions = {}
            for statement in self.context.module.body:
                if type(statement) is cst.FunctionDef:
                    self._functions.setdefault(statement.name.value, []).append(statement)
        definitions = self._functions.get(func.value)
        if definitions is None or len(definitions) != 1 or not _module_binds(scope, func.value):
            return False
        if self.context.module_scope.bindings.get(func.value) != [None]:
            return False
        function = definitions[0]
        inner = self.context.scope_of([self.context.module, function])
        values = [node.value for node in _own_nodes(function.body) if type(node) is cst.Return]
        return bool(values) and all(v is not None and self.model(v, inner, depth + 1) for v in values)


def _module_binds(scope: Scope, name: str) -> bool:
    """Whether ``name`` seen from ``scope`` is the module's own binding (no local, no import)."""
    current: Optional[Scope] = scope
    while current is not None and current.parent is not None:
        # A class body's names are not seen from the methods inside it.
        if not current.is_class or current is scope:
            if name in current.bindings or name in current.imports or name in current.declared_outer:
                return False
        current = current.parent
    return current is not None and name in current.bindings and name not in current.imports


def _own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes under ``root`` outside nested functions, lambdas and classes."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in child_nodes(node) if type(c) not in (cst.FunctionDef, cst.Lambda, cst.ClassDef))


# Imports that are never the project's own model code.
_LIBRARIES = frozenset(("torch", "torchvision", "timm", "numpy", "segmentation_models_pytorch", "efficientnet_pytorch"))


def could_build_conv_model(source: str) -> bool:
    """Whether ``source`` has a word every convolutional model build needs (a text screen)."""
    return any(word in source for word in ("Conv", "torchvision", "timm", "hub.load", "segmentation_models", "EfficientNet"))


def conv_model_builds(context: FileContext) -> Tuple[ModelBuild, ...]:
    """Statements that build a convolutional model (use with ``context.fact``)."""
    if not could_build_conv_model(context.source) and context.project is None:
        return ()
    finder = ConvModelFinder(context)
    class_calls: List[Tuple[cst.ClassDef, cst.Call, Scope]] = []
    class_bases: List[Tuple[cst.ClassDef, Scope]] = []
    assigns: List[Tuple[cst.SimpleStatementLine, cst.BaseSmallStatement, Scope, Optional[str]]] = []
    for visited in walk_scoped(context.module):
        node = visited.node
        if type(node) is cst.ClassDef:
            class_bases.append((node, context.scope_of(visited.chain)))
        elif type(node) is cst.Call and visited.cls is not None:
            class_calls.append((visited.cls, node, context.scope_of(visited.chain)))
        elif type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if type(small) in (cst.Assign, cst.AnnAssign) and small.value is not None:
                    owner = visited.cls.name.value if visited.cls is not None else None
                    assigns.append((node, small, context.scope_of(visited.chain), owner))
    # Classes are convolutional when they build a conv layer or model, or inherit from one:
    # iterate to a fixpoint, since a class may build another class of the file.
    changed = True
    while changed:
        changed = False
        for cls, call, scope in class_calls:
            if cls.name.value not in finder.classes and (finder.core(call, scope) or finder.factory(call, scope, 0)):
                finder.classes.add(cls.name.value)
                changed = True
        for cls, scope in class_bases:
            if cls.name.value in finder.classes:
                continue
            for base in cls.bases:
                qualified = context.qualname(base.value, scope)
                local = type(base.value) is cst.Name and base.value.value in finder.classes
                tv = qualified is not None and qualified.startswith("torchvision.models.") and (
                    qualified.rsplit(".", 1)[-1].lower().startswith(TORCHVISION_CONV)
                )
                if local or tv:
                    finder.classes.add(cls.name.value)
                    changed = True
                    break
    builds = []
    for line, small, scope, owner in assigns:
        targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
        if len(targets) != 1:
            continue
        target = dotted_name(targets[0]) if type(targets[0]) in (cst.Name, cst.Attribute) else None
        if target is None:
            continue
        assert small.value is not None
        if finder.model(small.value, scope):
            builds.append(ModelBuild(line, small, target, owner in finder.classes))
    return tuple(builds)
