"""The kinds of value the value-flow engine (``values``) tells apart: a small lattice.

Each kind is a frozen dataclass. ``Unknown`` is the top of the lattice and the honest
default: every value the engine cannot describe, and every disagreement (two callers
passing different kinds, two branches returning different ones), is ``Unknown``, and a rule
stays silent on it. ``join`` is the only way two answers meet.

Kinds rules ask about (``Array``, the tensors, ``Loader``, ``Batch``, ``Module``,
``Optimizer``, ``Wrapper``, ``Accelerator``) sit beside carriers the engine needs on the way
(a project class's instance to dispatch methods on, an ``.npz`` archive whose keys are
arrays, a literal string for a factory's name...). Not every kind has a producer yet: the
engine grows them family by family (issue 22).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple, Union

from .resolution import Definition


@dataclass(frozen=True)
class Unknown:
    """Not known (``why`` is for debugging, never for deciding)."""

    why: str = ""


@dataclass(frozen=True)
class Array:
    """A ``numpy.ndarray`` (possibly 0-d): certainly an array, never a NumPy scalar."""


@dataclass(frozen=True)
class Arrays:
    """A tuple or list of arrays: ``np.meshgrid(...)``, ``np.where(cond)``,
    ``np.unique(x, return_inverse=True)``; an item at a literal index is an array."""


@dataclass(frozen=True)
class ArrayArchive:
    """What ``np.load`` of an ``.npz`` (or of a path not known) gives, or a structured array:
    a string key gives an array. ``may_be_array``: it may be a plain array (``np.load`` of a
    path not known), so a slice of it is an array too (an archive cannot be sliced)."""

    may_be_array: bool = False


@dataclass(frozen=True)
class H5File:
    """An ``h5py.File``: a string key gives a dataset."""


@dataclass(frozen=True)
class H5Dataset:
    """An ``h5py`` dataset: read whole or sliced (``[:]``, ``[a:b]``, ``[...]``) it is an array."""


@dataclass(frozen=True)
class Frame:
    """A pandas object: its ``.values`` / ``.to_numpy()`` are arrays."""


@dataclass(frozen=True)
class SparseMatrix:
    """A SciPy sparse matrix or array (``scipy.sparse.csr_matrix(...)``): its ``.toarray()``
    and ``.todense()`` are arrays."""


@dataclass(frozen=True)
class RandomGenerator:
    """``np.random.default_rng(...)`` / ``RandomState(...)``: its sized draws are arrays."""


@dataclass(frozen=True)
class Number:
    """A Python int or float (a literal, or arithmetic of them); ``value`` when known."""

    value: Optional[float] = None


@dataclass(frozen=True)
class Options:
    """A dict with literal string keys (``{"pin_memory": True}``, ``dict(num_workers=0)``):
    each key and its value's ``describe``; ``open`` when it may hold other keys too (a
    dict comprehension: no key known, ``value`` is what each holds)."""

    items: Tuple[Tuple[str, str], ...] = ()
    open: bool = False
    value: "Kind" = Unknown("values")  # the kind every value is (``loaders[phase]``)


@dataclass(frozen=True)
class Iterator:
    """Something whose iteration yields ``element`` (``enumerate(loader)``, ``iter(loader)``,
    ``batch.items()``)."""

    element: "Kind"
    indexable: bool = False  # a list built by a comprehension: ``xs[i]`` is an element too


@dataclass(frozen=True)
class Text:
    """A string: ``value`` when known whole, else ``tail`` (its known ending: an f-string,
    ``root + "/x.npy"``, ``os.path.join(root, "x.npy")``)."""

    value: Optional[str] = None
    tail: str = ""

    def endswith(self, suffix: str) -> bool:
        return (self.value if self.value is not None else self.tail).endswith(suffix)


@dataclass(frozen=True)
class Flag:
    """``True`` or ``False`` (a literal, or a parameter whose every caller passes it)."""

    value: bool


@dataclass(frozen=True)
class NoneValue:
    """``None``."""


@dataclass(frozen=True)
class MaybeNone:
    """``kind`` or ``None`` (``Noise() if c else None``; callers passing one or the other).
    Not ``kind`` itself to a rule; but an attribute, item, method or call of it is
    ``kind``'s, as ``None`` has none of them (the program stops there on ``None``)."""

    kind: "Kind"


@dataclass(frozen=True)
class Items:
    """A list or tuple display whose items are known kinds (``(obs, actions)``)."""

    items: Tuple["Kind", ...]


@dataclass(frozen=True)
class Instance:
    """An object of a project class (methods dispatch to it, attributes read from it).
    ``exact``: made by calling that class; else (a method's ``self``) it may be an object
    of a project subclass, whose overrides and assignments count too."""

    klass: Definition
    exact: bool = True


@dataclass(frozen=True)
class ProjectCallable:
    """A project function or class as a value (``factory = models.resnet18``)."""

    definition: Definition


@dataclass(frozen=True)
class OneOf:
    """One of several known values, the choice made by a name the engine does not know: a
    class looked up with ``importlib`` by a computed module name, an entry of a registry,
    a builder's ``if``/``elif`` over names (``choices``). Never a kind a rule asks for by
    type (unknown to it); questions that hold for every choice (a convolutional model, the
    methods a call may run) are asked of each."""

    kinds: Tuple["Kind", ...]


@dataclass(frozen=True)
class ProjectModules:
    """The project module(s) ``importlib.import_module(name)`` may give: every module whose
    dotted name fits the known parts of ``name`` (absolute paths)."""

    paths: Tuple[str, ...]


# -- kinds the engine describes for the other families (producers arrive family by family) --
@dataclass(frozen=True)
class HostTensor:
    """A ``torch.Tensor`` in host memory. ``factory``: the torch factory that made it (its
    qualified name), through steps that keep it where it is (``.zero_()``, ``.view()``,
    ``Variable(...)``), when known; ``random``: the factory or a step drew random numbers
    (``tensor_values``)."""

    factory: str = ""
    random: bool = False


@dataclass(frozen=True)
class TensorType:
    """A legacy typed constructor taken as a value (``self.Tensor = torch.cuda.FloatTensor
    if gpu else torch.FloatTensor``): calling it copies its data into a new tensor."""

    names: FrozenSet[str]


@dataclass(frozen=True)
class TensorStorage:
    """A ``torch.*Storage`` (``torch.ByteStorage.from_buffer(b)``): bytes a legacy
    constructor wraps rather than copies."""


@dataclass(frozen=True)
class DType:
    """A torch dtype (``torch.float16``, ``x.dtype``): ``.to(dtype)`` keeps a tensor where it
    is, so a factory's tensor cast by it is still the host tensor the factory made."""


@dataclass(frozen=True)
class DeviceTensor:
    """A ``torch.Tensor`` on an accelerator (or what a model there computes from inputs
    there: a tensor, or an output object holding such tensors)."""


@dataclass(frozen=True)
class OnDevice:
    """Something moved to the accelerator whose type is not known (``vae.to("cuda")``,
    ``x.cuda()``): a tensor or a model. Its ``.device`` is the accelerator; calling it, or a
    method of it, on inputs there gives a ``DeviceTensor`` (``device_values``)."""


@dataclass(frozen=True)
class GraphTensor:
    """A tensor that carries an autograd graph: a loss made where autograd records, and
    arithmetic on one (``autograd_values``)."""


@dataclass(frozen=True)
class Dataset:
    """A ``torch.utils.data`` dataset: ``storage`` is ``memory`` (a ``TensorDataset``),
    ``device`` (its tensors are on the accelerator: they cannot be pinned, nor shared with
    workers), ``map`` or ``iterable`` (``""``: not known)."""

    storage: str = ""


@dataclass(frozen=True)
class Loader:
    """A ``torch.utils.data.DataLoader``: its known arguments (name -> ``describe`` of the
    value: ``"True"``, ``"0"``, ``"None"``, ``"?"`` when not known; a name absent was not
    passed, unless ``("*", "?")`` says an unknown ``*args``/``**kwargs`` may pass it) and
    its dataset's kind (``memory``, ``device``, ``map``, ``iterable`` or ``""`` when not known)."""

    arguments: Tuple[Tuple[str, str], ...] = ()
    dataset: str = ""

    def argument(self, name: str) -> Optional[str]:
        """The argument's value as described, ``"?"`` when not known, None when not passed."""
        for key, value in self.arguments:
            if key == name:
                return value
        return "?" if ("*", "?") in self.arguments else None

    @property
    def pinned(self) -> bool:
        """Batches come pinned: ``pin_memory=True``, and not wrapped by a framework that
        moves them itself (``accelerator.prepare(loader)``: ``prepared``)."""
        return self.argument("pin_memory") == "True" and not self.prepared

    @property
    def prepared(self) -> bool:
        """Handed to ``accelerator.prepare`` (on some path): Accelerate moves its batches."""
        return any(name == "prepared" for name, _ in self.arguments)

    @property
    def custom_collate(self) -> bool:
        """A ``collate_fn`` (or one not known) may build batches of any type."""
        return self.argument("collate_fn") not in (None, "None")


@dataclass(frozen=True)
class Batch:
    """A batch from a loader, or an element of one (``path``: the keys/indices taken)."""

    loader: Loader
    path: Tuple[Union[str, int], ...] = ()


@dataclass(frozen=True)
class Module:
    """An ``nn.Module``: ``conv`` whether it holds convolutions (None: not known), its
    device when known, and ``loss``: an ``nn.*Loss`` (calling it gives a ``GraphTensor``)."""

    conv: Optional[bool] = None
    device: Optional[str] = None
    loss: bool = False


@dataclass(frozen=True)
class Optimizer:
    """A ``torch.optim`` optimizer."""


@dataclass(frozen=True)
class Wrapper:
    """A ``DistributedDataParallel`` / ``DataParallel`` wrapper of a module."""

    parallel: str
    module: Optional[Module] = None


@dataclass(frozen=True)
class Accelerator:
    """The accelerator device (``torch.device("cuda")``)."""


@dataclass(frozen=True)
class Accelerate:
    """An ``accelerate.Accelerator()``: ``prepare(a, b, ...)`` gives back what it is handed,
    wrapped, in order (``accelerate_values``); its ``.device`` is the accelerator."""


@dataclass(frozen=True)
class Parser:
    """An ``argparse.ArgumentParser`` built in module ``path`` (its options' defaults are
    that module's summary's)."""

    path: Optional[str]


@dataclass(frozen=True)
class Namespace:
    """What ``parser.parse_args()`` gives: an attribute is the option's default."""

    path: Optional[str]


@dataclass(frozen=True)
class Foreign:
    """An object of another framework (``mxnet``, ``tensorflow``...): certainly not a
    torch module or tensor."""

    library: str


Kind = Union[
    Unknown, Array, Arrays, ArrayArchive, H5File, H5Dataset, Frame, RandomGenerator, Number, Flag, Options, Iterator,
    Text, NoneValue, MaybeNone, Items, Dataset, Instance, ProjectCallable, HostTensor, TensorStorage, DeviceTensor, OnDevice,
    GraphTensor, Loader, Batch, Module, Optimizer, Wrapper, Accelerator, Accelerate, Parser, Namespace, Foreign, OneOf, ProjectModules,
    TensorType, DType, SparseMatrix,
]
UNKNOWN = Unknown()


def join(first: Kind, second: Kind) -> Kind:
    """Where two values meet (branches, callers): the kind both are, a known kind or
    ``None`` (``MaybeNone``), two numbers, loaders on the arguments they agree on, an array
    and a load that may be one; else ``Unknown``."""
    if first == second:
        return first
    if type(first) is Number and type(second) is Number:
        return Number()  # two numbers: still a number
    if type(first) is TensorType and type(second) is TensorType:
        return TensorType(first.names | second.names)  # either constructor copies
    if type(first) is Loader and type(second) is Loader:
        return _loaders(first, second)
    if type(first) is Batch and type(second) is Batch and first.path == second.path:
        return Batch(_loaders(first.loader, second.loader), first.path)
    if type(first) is Options and type(second) is Options:
        return _options(first, second)
    if {type(first), type(second)} == {Array, ArrayArchive} and ArrayArchive(may_be_array=True) in (first, second):
        return ArrayArchive(may_be_array=True)  # an array, or what `np.load` of a path not known gives
    nones = (NoneValue, MaybeNone)
    inner = [k.kind if type(k) is MaybeNone else k for k in (first, second) if type(k) is not NoneValue]  # type: ignore[union-attr]
    if (type(first) in nones or type(second) in nones) and all(k == inner[0] for k in inner) and type(inner[0]) is not Unknown:
        return MaybeNone(inner[0])
    return Unknown("disagree")


def present(kind: Kind) -> Kind:
    """What an attribute, item, method or call reads ``kind`` as: ``MaybeNone``'s kind."""
    return kind.kind if type(kind) is MaybeNone else kind  # type: ignore[union-attr]


def _loaders(first: Loader, second: Loader) -> Loader:
    """Two loaders (a train and a validation loader passed to one function): a loader whose
    arguments are known where both agree."""
    names = [n for n, _ in (*first.arguments, *second.arguments) if n != "*"]
    arguments = []
    for name in dict.fromkeys(names):
        one, other = first.argument(name), second.argument(name)
        if one is not None or other is not None:
            arguments.append((name, one if one == other else "?"))
    if ("*", "?") in first.arguments or ("*", "?") in second.arguments:
        arguments.append(("*", "?"))
    return Loader(tuple(arguments), first.dataset if first.dataset == second.dataset else "")


def _options(first: Options, second: Options) -> Options:
    """Two keyword dicts (a helper's ``kwargs = {}`` and, on one arm, ``kwargs = {...}``;
    two callers' ``**kwargs``): every key either holds, its value known where both hold
    the same one (a key one leaves out is unknown there); a key neither holds is absent."""
    one, other = dict(first.items), dict(second.items)
    keys = dict.fromkeys((*one, *other))
    items = tuple((k, one[k] if one.get(k) == other.get(k) else "?") for k in keys)
    return Options(items, first.open or second.open, join(first.value, second.value))


def join_all(kinds) -> Kind:
    """Where several values meet: the kind all are, else ``Unknown`` (none: ``Unknown``)."""
    if not kinds:
        return UNKNOWN
    out = kinds[0]
    for kind in kinds[1:]:
        out = join(out, kind)
    return out


def may_hold_array(kind: Kind) -> bool:
    """An array, or a tuple, list or iterator some of whose items are arrays: what a
    project call gives that code may unpack, index or walk into an array (screens ask)."""
    if type(kind) in (Array, Arrays):
        return True
    if type(kind) is Iterator:
        return may_hold_array(kind.element)  # type: ignore[union-attr]
    return type(kind) is Items and any(may_hold_array(k) for k in kind.items)  # type: ignore[union-attr]


def converted_as_array(kind: Kind) -> bool:
    """Whether a value handed to a tensor constructor (or anything else that takes only
    arrays and sequences) is an array there: an array, or what ``np.load`` of a path not
    known gives (an ``.npz`` archive makes the constructor raise, so where the program runs
    it was an array)."""
    return type(kind) is Array or (type(kind) is ArrayArchive and kind.may_be_array)  # type: ignore[union-attr]
