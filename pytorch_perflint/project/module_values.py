"""Models as values: the value engine's knowledge of ``nn.Module`` objects.

Producers of the ``Module`` and ``Wrapper`` kinds (``kinds``), asked by the engine
(``values``) for library calls and methods, and the questions rules ask about a kind:

* ``torch.nn`` layers (a convolution is ``Module(conv=True)``, another layer
  ``Module(conv=False)``), ``nn.Sequential``/``nn.ModuleList`` of known layers, torchvision's
  convolutional networks (by builder or class name, ``get_model("resnet50")``,
  ``models.__dict__[name]``), ``timm.create_model`` / ``torch.hub.load`` with a known name,
  segmentation_models_pytorch and efficientnet_pytorch networks;
* ``.to()``, ``.cuda()``, ``.eval()``... return the module they are called on;
  ``torch.compile`` and ``convert_sync_batchnorm`` the module they are given;
  ``nn.DataParallel`` / ``DistributedDataParallel`` a ``Wrapper`` of it (``.module`` is it);
* a project ``nn.Module`` class is convolutional when a call in one of its methods (or its
  project bases') builds a convolutional module, directly, through a project helper
  (``conv_nd(dims, ...)``, any depth), a submodule of a convolutional project class or a
  method of its own, or when it derives from a convolutional library class;
* a project class derived (at any depth) from ``nn.DataParallel`` wraps like it;
* objects of other frameworks (mxnet, tensorflow...) are ``Foreign``: certainly not torch.

Where several models may be returned (``get_model(name)`` with an ``if``/``elif`` over
names), the answer is convolutional when every candidate is (``join``). Answers about a
class are memoised by the engine (its reads replayed for the cache).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Callable, List, Optional

from .argparse_values import KEY as ARGPARSE
from .autograd_values import LOSS_CLASS
from .argparse_values import changed, default_of
from .bodies import locate
from .choices import members
from .forms import Call, Form, Item, Ref
from .layer_lists import added_layers, any_conv
from .kinds import UNKNOWN, Foreign, Instance, Items, Kind, Module, Namespace, OneOf, Parser, ProjectCallable, ProjectModules, Text, Unknown, Wrapper
from .resolution import Definition
from .scopes import build_scope, expression_form

if TYPE_CHECKING:
    from .values import ValueEngine, Where

Evaluate = Callable[[Form], Kind]

CONV_LAYERS = frozenset(
    f"torch.nn.{prefix}{kind}{dims}d" for prefix in ("", "Lazy") for kind in ("Conv", "ConvTranspose") for dims in (1, 2, 3)
)
# torchvision.models builders and classes (lower-cased) that are convolutional networks.
TORCHVISION_CONV = (
    "resnet", "resnext", "wide_resnet", "vgg", "alexnet", "densenet", "mobilenet",
    "efficientnet", "regnet", "shufflenet", "squeezenet", "mnasnet", "googlenet", "inception",
    "convnext", "maxvit", "fasterrcnn", "maskrcnn", "keypointrcnn", "retinanet", "ssd", "fcos",
    "fcn", "deeplabv3", "lraspp", "r3d", "mc3", "r2plus1d", "s3d", "videoresnet", "raft",
)
# timm (and torch.hub) model names that are convolutional networks.
NAMED_CONV = TORCHVISION_CONV + (
    "seresne", "senet", "ecaresnet", "skresnet", "res2ne", "resnest", "tf_efficientnet",
    "mixnet", "tf_mixnet", "fbnet", "ghostnet", "rexnet", "hrnet", "dla", "dpn", "xception",
    "cspdarknet", "cspresne", "darknet", "nfnet", "dm_nfnet", "eca_nfnet", "nf_resnet",
    "repvgg", "selecsls", "tresnet", "vovnet", "ese_vovnet", "hardcorenas", "lcnet",
    "tf_mobilenet", "gernet", "legacy_se", "bat_resnext", "unet",
)
SMP_MODELS = frozenset(("Unet", "UnetPlusPlus", "FPN", "PSPNet", "DeepLabV3", "DeepLabV3Plus", "Linknet", "PAN", "MAnet"))
# Methods that return the module they are called on (``Net().cuda().eval()`` is still it).
MODEL_METHODS = frozenset(
    ("to", "cuda", "cpu", "train", "eval", "requires_grad_", "float", "half", "double", "bfloat16", "to_empty", "share_memory")
)
# Hugging Face bases whose inherited ``from_pretrained`` classmethod gives an object of the
# class it is called on: diffusers pipelines (whose ``.to(device)`` gives the pipeline back)
# and the libraries' ``nn.Module`` bases (``ModelMixin``, ``*PreTrainedModel``).
_HF_PIPELINE = re.compile(r"^diffusers\.(?:\w+\.)*\w*Pipeline$")
_HF_MODULE = re.compile(r"^(?:diffusers\.(?:\w+\.)*ModelMixin|transformers\.(?:\w+\.)*\w*PreTrainedModel)$")
WRAPPERS = {"torch.nn.DataParallel": "DataParallel", "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel"}
# Calls that give back the module they are given (compiled, converted).
_PASS_THROUGH = frozenset(("torch.compile", "torch.jit.script", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"))
_CONTAINERS = frozenset(("torch.nn.Sequential", "torch.nn.ModuleList"))
_NOT_LAYERS = frozenset(("torch.nn.Parameter", "torch.nn.UninitializedParameter", "torch.nn.Buffer"))
# Other frameworks: their objects are never torch modules.
FOREIGN = frozenset(("mxnet", "gluoncv", "tensorflow", "keras", "tf_keras", "jax", "flax", "haiku", "paddle", "mindspore", "oneflow", "chainer"))
_LIBRARIES = ("torch.", "torchvision.", "timm.", "segmentation_models_pytorch.", "efficientnet_pytorch.", "argparse.")
_MAX_CANDIDATES = 64  # factories offered by a module chosen by an unknown name
_MAX_CALLS = 200  # calls of one class read for a convolution (past that: not known)


def knows(qualname: str) -> bool:
    return qualname.startswith(_LIBRARIES) or qualname.partition(".")[0] in FOREIGN


def conv_name(name: Optional[str], prefixes=NAMED_CONV) -> bool:
    return name is not None and name.lower().startswith(prefixes)


def _library_model(qualname: str) -> Optional[Kind]:
    """A library network or layer class / builder named by its qualified name."""
    last = qualname.rsplit(".", 1)[-1]
    if qualname in CONV_LAYERS:
        return Module(conv=True)
    if qualname.startswith("torchvision.models."):
        if "_Weights" in last or last.startswith("_") or last in ("get_model", "get_weight", "list_models"):
            return None
        return Module(conv=True) if conv_name(last, TORCHVISION_CONV) else Module()
    if qualname.startswith("segmentation_models_pytorch.") and last in SMP_MODELS:
        return Module(conv=True)
    if qualname.startswith("efficientnet_pytorch.EfficientNet"):
        return Module(conv=True)
    return None


class ModuleValues:
    """The model knowledge of one engine (``engine``: the ``ValueEngine`` that asks)."""

    def __init__(self, engine: "ValueEngine", where: Callable[..., "Where"]) -> None:
        self.engine = engine
        self.where = where  # the engine's ``Where`` (this module cannot import ``values``)

    # -- producers -------------------------------------------------------------------------
    def call(self, qualname: str, form: Call, evaluate: Evaluate, path: Optional[str], where: Optional["Where"] = None, depth: int = 0) -> Optional[Kind]:
        """What calling library function ``qualname`` gives, when it is a model's business
        (None: ask the other library knowledge)."""
        head = qualname.partition(".")[0]
        if head in FOREIGN:
            return Foreign(head)
        if qualname == "argparse.ArgumentParser":
            return Parser(path)
        if qualname in WRAPPERS:
            inner = evaluate(form.args[0]) if form.args else UNKNOWN
            return Wrapper(WRAPPERS[qualname], self.as_module(inner))
        if qualname in _PASS_THROUGH:
            return evaluate(form.args[0]) if form.args else UNKNOWN
        if qualname in _CONTAINERS:
            kinds = [evaluate(arg) for arg in form.args]
            if any(self.conv(k) for k in kinds) or self._listed_conv(form, where, depth):
                return Module(conv=True)
            known = not form.star and all(type(k) is Module and k.conv is False for k in kinds)  # type: ignore[union-attr]
            return Module(conv=False) if known else Module()
        if qualname in ("timm.create_model", "torchvision.models.get_model", "torch.hub.load"):
            position = 1 if qualname == "torch.hub.load" else 0
            name = form.args[position] if len(form.args) > position else form.keyword("model_name" if position == 0 else "model")
            chosen = evaluate(name) if name is not None else UNKNOWN
            known = type(chosen) is Text and chosen.value is not None  # type: ignore[union-attr]
            return Module(conv=True) if known and conv_name(chosen.value) else Module()  # type: ignore[union-attr]
        found = _library_model(qualname)
        if found is not None:
            return found
        if qualname.startswith("torch.nn.") and qualname.count(".") == 2 and qualname[9:10].isupper():
            return None if qualname in _NOT_LAYERS else Module(conv=False, loss=bool(LOSS_CLASS.match(qualname)))
        return None

    def _listed_conv(self, form: Call, where: Optional["Where"], depth: int) -> bool:
        """``nn.Sequential(*layers)``, ``nn.Sequential(OrderedDict(layers))``,
        ``nn.ModuleList(blocks)`` of a list the function fills with layers, one of them a
        convolution (``layer_lists``)."""
        listed = form.starred if form.star and not form.args else form.args[0] if len(form.args) == 1 and not form.star else None
        if type(listed) is Call and type(listed.func) is Ref and listed.func.qualname == "collections.OrderedDict" and len(listed.args) == 1:
            listed = listed.args[0]
        if where is None or type(listed) is not Ref or "." in listed.name:
            return False
        items = added_layers(where.scope, listed.name)
        return items is not None and any_conv(items, lambda item, line: self.conv(self.engine._eval(item, where.at(line), depth + 1)))

    def library_call(self, form: Call, evaluate: Evaluate, path: Optional[str], where: Optional["Where"] = None, depth: int = 0) -> Optional[Kind]:
        """A call the engine asks about first: a library function of models, argparse or
        another framework; ``models.__dict__[arch](...)`` / ``getattr(models, arch)(...)``
        of a library module (None: not one of these)."""
        func = form.func
        if type(func) is Ref:
            return self.call(func.qualname, form, evaluate, path, where, depth) if func.qualname and knows(func.qualname) else None
        if type(func) is Call and type(func.func) is Ref and func.func.name == "getattr" and len(func.args) == 2:
            owner = func.args[0]
            return self.member_call(owner, func.args[1], form, evaluate, path) if type(owner) is Ref else None
        if type(func) is Item and type(func.value) is Ref and func.value.name.endswith(".__dict__") and func.value.qualname:
            owner = Ref(func.value.name[:-9], func.value.qualname[:-9])
            return self.member_call(owner, func.index, form, evaluate, path)
        return None

    def by_name(self, owner: str, name: Form, where: "Where", depth: int) -> Kind:
        """A factory chosen by name: ``models.__dict__[arch]``, ``getattr(models, arch)``
        with ``arch`` a known string (a literal, a name bound to one, a command-line default)."""
        engine = self.engine
        chosen = engine._eval(name, where, depth + 1)
        module = engine._ref(Ref(owner), where, depth + 1) if "." not in owner else UNKNOWN
        if type(module) is ProjectModules:  # `getattr(importlib.import_module(...), name)`
            known = type(chosen) is Text and chosen.value is not None and chosen.value.isidentifier()  # type: ignore[union-attr]
            return engine._attribute(module, chosen.value, depth) if known else members(engine, module)  # type: ignore[union-attr,arg-type]
        if type(chosen) is not Text or chosen.value is None or not chosen.value.isidentifier():  # type: ignore[union-attr]
            return UNKNOWN
        return engine._ref(Ref(f"{owner}.{chosen.value}"), where, depth + 1)  # type: ignore[union-attr]

    def call_by_name(self, owner: str, name: Form, where: "Where", depth: int) -> Kind:
        """What calling a factory chosen by name gives; when the name is not known and
        ``owner`` is a project module, a convolutional model if every public class and
        function it offers builds one."""
        engine = self.engine
        chosen = self.by_name(owner, name, where, depth)
        if type(chosen) is not Unknown or engine.index is None or where.path is None:
            return engine._call_kind(chosen, depth)
        module = engine.index.resolve(where.path, owner)
        if module is None or module.kind != "module" or module.path is None:
            return UNKNOWN
        candidates = self._offered(module.path)
        if not candidates or len(candidates) > _MAX_CANDIDATES:
            return UNKNOWN
        kinds = [engine._call_kind(engine._definition(c, depth + 1), depth + 1) for c in candidates]
        return self.join(kinds) if len(kinds) > 1 else kinds[0]

    def _offered(self, path: str) -> List[Definition]:
        """The public classes and functions module ``path`` defines or imports by name."""
        index = self.engine.index
        assert index is not None
        summary = index.summary(path)
        names = [f.name for f in summary.functions] + [c.name for c in summary.classes]
        names += [r.asname or r.name for r in summary.imports if r.name not in (None, "*") and r.module_scope]  # type: ignore[misc]
        out = []
        for name in dict.fromkeys(n for n in names if not n.startswith("_")):
            found = index.resolve(path, name)
            if found is not None and found.kind in ("class", "function"):
                out.append(found)
            elif found is None or found.kind != "module":
                return []  # a library callable may be chosen too
        return out

    def member_call(self, owner: Ref, name: Form, form: Call, evaluate: Evaluate, path: Optional[str]) -> Optional[Kind]:
        """``models.__dict__[arch](...)`` / ``getattr(models, arch)(...)`` with ``models`` a
        library module and ``arch`` a known string: the member called."""
        if owner.qualname is None or not knows(owner.qualname + "."):
            return None
        chosen = evaluate(name)
        if type(chosen) is not Text or chosen.value is None or not chosen.value.isidentifier():  # type: ignore[union-attr]
            return UNKNOWN
        found = self.call(f"{owner.qualname}.{chosen.value}", form, evaluate, path)  # type: ignore[union-attr]
        return UNKNOWN if found is None else found

    def keeps(self, receiver: Instance, name: str) -> bool:
        """``Net().cuda()``: a project module's method that returns the module itself (a
        project diffusers pipeline's inherited ``.to(device)`` too)."""
        engine = self.engine
        if name not in MODEL_METHODS or engine.index is None or engine._method_of(receiver.klass, name) is not None:
            return False
        if engine.index.is_nn_module(receiver.klass):
            return True
        found = self._hugging_face(receiver.klass)
        return found == "module" or (found == "pipeline" and name == "to")

    def _hugging_face(self, klass: Definition) -> Optional[str]:
        """Whether a project class derives from a diffusers pipeline (``"pipeline"``) or a
        Hugging Face ``nn.Module`` base (``"module"``), through its bases; else None."""
        bases = self.engine.index.external_bases(klass)  # type: ignore[union-attr]
        if any(_HF_MODULE.match(base) for base in bases):
            return "module"
        return "pipeline" if any(_HF_PIPELINE.match(base) for base in bases) else None

    def pretrained(self, receiver: ProjectCallable) -> Optional[Kind]:
        """``Pipe.from_pretrained(path)`` of a project class that inherits it from a Hugging
        Face base: an object of that class (None: not that convention)."""
        klass = receiver.definition
        engine = self.engine
        if klass.kind != "class" or engine.index is None or engine._method_of(klass, "from_pretrained") is not None:
            return None
        return Instance(klass) if self._hugging_face(klass) is not None else None

    def method(self, receiver: Kind, name: str, form: Call) -> Optional[Kind]:
        """``receiver.name(...)`` for a module, a wrapper or a parser (None: not known here)."""
        kind = type(receiver)
        if (kind in (Module, Wrapper) or kind is Instance) and name in MODEL_METHODS:
            return receiver
        if kind is ProjectCallable and name == "from_pretrained":
            return self.pretrained(receiver)  # type: ignore[arg-type]
        if kind is Parser and not form.args and not form.kwargs and not form.star and not form.dstar:
            if name == "parse_args":
                return Namespace(receiver.path)  # type: ignore[union-attr]
            if name == "parse_known_args":
                return Items((Namespace(receiver.path), UNKNOWN))  # type: ignore[union-attr]
        return None

    def attribute(self, receiver: Kind, name: str) -> Optional[Kind]:
        if type(receiver) is Wrapper and name == "module":
            return receiver.module if receiver.module is not None else UNKNOWN  # type: ignore[union-attr]
        if type(receiver) is Namespace:
            path = receiver.path  # type: ignore[union-attr]
            index = self.engine.index
            defaults = index.summary(path).extra(ARGPARSE) if index is not None and path is not None else None
            return default_of(receiver, name, defaults)  # type: ignore[arg-type]
        return None

    def read_namespace(self, kind: Kind, head: str, rest: str, where: "Where") -> Kind:
        """``args.arch`` read where ``args`` holds a namespace: unknown when that module
        changes the namespace."""
        index = self.engine.index
        dest = rest.partition(".")[0]
        text = index.text(where.path) if index is not None and where.path is not None else None
        if changed(text, head, dest):
            return UNKNOWN
        home = kind.path  # type: ignore[union-attr]  # the module that parses it may change it too
        if home != where.path and changed(index.text(home) if index is not None and home is not None else None, None, dest):
            return UNKNOWN
        return kind

    def join(self, kinds: List[Kind]) -> Kind:
        """Several candidate models (a factory's returns): convolutional when every one is."""
        if kinds and all(self._model_like(kind) for kind in kinds) and all(self.conv(kind) for kind in kinds):
            return Module(conv=True)
        return Unknown("disagree")

    def _model_like(self, kind: Kind) -> bool:
        """A module, a wrapper, or an object of a project ``nn.Module`` class: cheap to tell,
        asked before reading any class's calls (a factory of IR nodes is no model)."""
        if type(kind) in (Module, Wrapper):
            return True
        if type(kind) is OneOf:
            return all(self._model_like(one) for one in kind.kinds)  # type: ignore[union-attr]
        index = self.engine.index
        return type(kind) is Instance and index is not None and index.is_nn_module(kind.klass)  # type: ignore[union-attr]

    # -- questions ---------------------------------------------------------------------------
    def as_module(self, kind: Kind) -> Optional[Module]:
        if type(kind) is Module:
            return kind  # type: ignore[return-value]
        if type(kind) is OneOf:  # one of several models: convolutional when each is
            found = [self.as_module(one) for one in kind.kinds]  # type: ignore[union-attr]
            return None if None in found else Module(conv=True) if all(m.conv is True for m in found) else Module()  # type: ignore[union-attr]
        if type(kind) is Instance and self.engine.index is not None and self.engine.index.is_nn_module(kind.klass):  # type: ignore[union-attr]
            return Module(conv=True) if self.class_conv(kind.klass) else Module()  # type: ignore[union-attr]
        return None

    def conv(self, kind: Kind) -> bool:
        """Whether the value is certainly a module holding convolutions."""
        if type(kind) is Module:
            return kind.conv is True  # type: ignore[union-attr]
        if type(kind) is Wrapper:
            return kind.module is not None and kind.module.conv is True  # type: ignore[union-attr]
        if type(kind) is Instance:
            return self.class_conv(kind.klass)  # type: ignore[union-attr]
        if type(kind) is OneOf:  # every candidate a convolutional model
            return self._model_like(kind) and all(self.conv(one) for one in kind.kinds)  # type: ignore[union-attr]
        return False

    def wrapper(self, kind: Kind) -> Optional[str]:
        """``DataParallel`` / ``DistributedDataParallel`` for a wrapper, or an object of a
        project subclass of one (at any depth)."""
        if type(kind) is Wrapper:
            return kind.parallel  # type: ignore[union-attr]
        if type(kind) is Instance and self.engine.index is not None:
            bases = self.engine.index.external_bases(kind.klass)  # type: ignore[union-attr]
            found = [WRAPPERS[b] for b in bases if b in WRAPPERS]
            return found[0] if len(found) == 1 else None
        return None

    def is_torch_module(self, kind: Kind) -> Optional[bool]:
        """True: a torch module; False: certainly not one (another framework's object, or a
        project class derived only from one); None: not known."""
        if type(kind) in (Module, Wrapper):
            return True
        if type(kind) is Foreign:
            return False
        if type(kind) is OneOf:
            found = {self.is_torch_module(one) for one in kind.kinds}  # type: ignore[union-attr]
            return found.pop() if len(found) == 1 else None
        if type(kind) is Instance and self.engine.index is not None:
            index = self.engine.index
            if index.is_nn_module(kind.klass):  # type: ignore[union-attr]
                return True
            bases = index.external_bases(kind.klass)  # type: ignore[union-attr]
            if bases and all(b.partition(".")[0] in FOREIGN for b in bases):
                return False
        return None

    # -- project classes ---------------------------------------------------------------------
    def class_conv(self, klass: Definition, depth: int = 0) -> bool:
        engine = self.engine
        if engine.index is None or klass.klass is None or klass.path is None or depth > 6:
            return False
        key = ("conv-class", klass.path, klass.name)
        return type(engine._memoised(key, lambda: self._class_conv(klass, depth))) is Module

    def _class_conv(self, klass: Definition, depth: int) -> Kind:
        engine = self.engine
        index = engine.index
        assert index is not None
        for base in index.external_bases(klass):
            found = _library_model(base)
            if found is not None and self.conv(found):
                return Module(conv=True)
        pending = []
        for owner in index.resolution.lineage(klass):
            for call, scope, where in self._calls(owner):
                form = expression_form(call, scope)
                func = form.func if type(form) is Call else None
                if type(func) is not Ref:
                    continue
                if func.qualname is not None and knows(func.qualname):
                    if func.qualname in CONV_LAYERS or self.conv(_library_model(func.qualname) or UNKNOWN):
                        return Module(conv=True)
                    if func.qualname not in ("timm.create_model", "torch.hub.load", "torchvision.models.get_model"):
                        continue
                if func.name in _BUILTINS:
                    continue
                pending.append((form, where))
        for form, where in pending[:_MAX_CALLS]:
            if self.conv(engine._eval(form, where, depth + 1)):
                return Module(conv=True)
        for owner in index.resolution.lineage(klass):  # `self.encoder = net_enc`: a submodule its callers pass
            for method in owner.klass.methods if owner.klass is not None else ():
                definition = Definition("method", owner.path, f"{owner.name}.{method.name}", function=method, klass=owner.klass)
                scope = engine.scope_of(definition) if method.name == "__init__" else None
                for line, _, _, form in scope.own_attrs if scope is not None else ():
                    if type(form) is Ref and "." not in form.name and form.name in scope.params[1:]:  # type: ignore[union-attr]
                        if self.conv(engine._eval(form, self.where(owner.path, scope, line, self.where(owner.path)), depth + 1)):
                            return Module(conv=True)
        return Unknown("no convolution")

    def _calls(self, owner: Definition):
        """The calls in the methods of a project class, each with the method's scope."""
        engine = self.engine
        index = engine.index
        assert index is not None and owner.klass is not None and owner.path is not None
        text = index.text(owner.path)
        node = None if text is None else locate(text, owner.klass.line, owner.klass.end_line, owner.klass.name, True)
        if node is None:
            return
        aliases = dict(index.summary(owner.path).aliases)
        outer = self.where(owner.path)
        for method in node.body:  # type: ignore[attr-defined]
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            summary = owner.klass.method(method.name)
            if summary is None:
                continue
            key = (owner.path, f"{owner.name}.{method.name}", summary.line)
            scope = engine._scopes.get(key) or build_scope(method, aliases, owner.path, key[1])
            engine._scopes[key] = scope
            for sub in ast.walk(method):
                if type(sub) is ast.Call:
                    yield sub, scope, self.where(owner.path, scope, sub.lineno, outer)


_BUILTINS = frozenset(("super", "len", "range", "print", "isinstance", "getattr", "setattr", "hasattr", "int", "float", "str", "list", "dict", "tuple", "zip", "enumerate", "min", "max", "sum", "round", "type", "format"))

