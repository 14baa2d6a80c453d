"""What library calls, methods, attributes and subscripts give, as kinds: the value engine's
knowledge of NumPy, SciPy, pandas, h5py and the image readers (``numpy_api`` lists them),
and of torch's tensors (``tensor_values``).

Pure functions of kinds already worked out: the engine (``values``) evaluates the operands
and asks here. Each answer is a known kind only where the library always returns it (a
NumPy scalar or a list never passes for an array); anything else is ``Unknown``.
"""

from __future__ import annotations

from typing import Callable, Optional

from .forms import Call, Form, Lit, Seq, Unknown as UnknownForm
from . import autograd_values as autograd
from . import tensor_values as tensors
from . import device_values as devices
from .records import Record, record_item
from .kinds import (
    UNKNOWN,
    Array,
    ArrayArchive,
    Arrays,
    DeviceTensor,
    DType,
    Flag,
    Frame,
    H5Dataset,
    H5File,
    HostTensor,
    Items,
    Kind,
    MaybeNone,
    NoneValue,
    Number,
    RandomGenerator,
    SparseMatrix,
    Text,
    Unknown,
)
from .numpy_api import (
    ALWAYS_ARRAY_DRAWS,
    ARRAY_FUNCTIONS,
    ARRAY_METHODS,
    ARRAY_TUPLES,
    ELEMENTWISE,
    GENERATORS,
    H5PY_FILES,
    OTHER_ARRAY_FUNCTIONS,
    PATH_JOINERS,
    REDUCTIONS,
    SHAPED_BY,
    SCIPY_MAT_FILES,
    SCIPY_MINIMISERS,
    SCIPY_TUPLES,
    SHAPE_AS_ARGS,
    SPARSE_DENSE_METHODS,
    SPARSE_MAKERS,
    SPARSE_METHODS,
    SIZED_RANDOM,
    TO_NUMPY_METHODS,
    UNIQUE_EXTRAS,
)

Evaluate = Callable[[Form], Kind]
# The libraries this module knows: a qualified name under another one is not asked about.
LIBRARIES = ("numpy.", "scipy.", "cv2.", "imageio.", "skimage.", "pandas.", "h5py.", "os.", "posixpath.", "pathlib.", "torch.")
_ARITHMETIC = frozenset({"Add", "Sub", "Mult", "Div", "FloorDiv", "Pow", "Mod"})


def knows(qualname: str) -> bool:
    return qualname.startswith(LIBRARIES)


def call(qualname: str, form: Call, evaluate: Evaluate) -> Kind:
    """What calling the library function ``qualname`` with ``form``'s arguments gives."""
    if qualname.startswith("torch."):  # a loss, else a tensor factory (it reads `*sizes` itself)
        made = devices.factory(form, evaluate) if qualname in tensors.FACTORIES or qualname in tensors.RANDOM else None
        return autograd.call(qualname) or made or tensors.call(qualname, form, evaluate)
    if qualname in ARRAY_FUNCTIONS or qualname in OTHER_ARRAY_FUNCTIONS:
        return Array()
    if form.star or form.dstar:
        return UNKNOWN
    if qualname in ELEMENTWISE:
        return Array() if any(type(evaluate(arg)) is Array for arg in form.args[:2]) else UNKNOWN
    if qualname in SHAPED_BY:  # `np.digitize(x, bins)`: the shape of `x`
        position = SHAPED_BY[qualname]
        return Array() if len(form.args) > position and type(evaluate(form.args[position])) is Array else UNKNOWN
    if qualname.startswith("numpy.") and qualname[len("numpy."):] in REDUCTIONS:  # `np.sum(w)`: a NumPy scalar
        return _reduced(form, evaluate)
    if qualname == "numpy.linspace":
        retstep = form.keyword("retstep") or (form.args[5] if len(form.args) > 5 else None)
        return Array() if retstep is None or (type(retstep) is Lit and retstep.value is False) else UNKNOWN
    if qualname == "numpy.where":
        return Array() if len(form.args) == 3 else Arrays() if len(form.args) == 1 and not form.kwargs else UNKNOWN
    if qualname == "numpy.unique":
        flags = [form.keyword(name) for name in UNIQUE_EXTRAS]
        if all(flag is None or (type(flag) is Lit and flag.value is False) for flag in flags) and len(form.args) == 1:
            return Array()
        if all(flag is None or type(flag) is Lit for flag in flags) and len(form.args) == 1:
            return Arrays()  # a tuple: the unique values and what was asked for
        return UNKNOWN
    if qualname in ARRAY_TUPLES:
        return Arrays()
    if qualname == "numpy.load":
        return _load(form, evaluate)
    if qualname in GENERATORS:
        return RandomGenerator()
    if qualname.startswith("numpy.random."):
        return draw(qualname[len("numpy.random."):], form, evaluate)
    if qualname in H5PY_FILES:
        return H5File()
    if qualname.startswith("pandas."):
        return Frame()
    if qualname in PATH_JOINERS:
        last = evaluate(form.args[-1]) if form.args else UNKNOWN
        return Text(tail=last.value or last.tail) if type(last) is Text else UNKNOWN
    return _scipy(qualname, form)


def _reduced(form: Call, evaluate: Evaluate) -> Kind:
    """A reduction of a known array: a NumPy scalar with no axis, an array with
    ``keepdims=True`` (as many dimensions as it had); else not known."""
    if not form.args or type(evaluate(form.args[0])) is not Array:
        return UNKNOWN
    if len(form.args) == 1 and not form.kwargs:
        return Number()
    keep = form.keyword("keepdims")
    if type(keep) is Lit and keep.value is True and form.keyword("out") is None and len(form.args) <= 2:
        return Array()
    axis = form.args[1] if len(form.args) == 2 and not form.kwargs else form.keyword("axis") if len(form.args) == 1 and len(form.kwargs) == 1 else None
    return Array() if _beyond_first_axis(axis) else UNKNOWN


def _beyond_first_axis(axis: object) -> bool:
    """A literal axis a 1-d array lacks (``1``, ``-2``): the reduction raises on one, so where
    the program runs its array has two dimensions or more and the result is an array."""
    value = axis.value if type(axis) is Lit else None  # type: ignore[union-attr]
    return type(value) is int and value not in (0, -1)


def _scipy(qualname: str, form: Call) -> Kind:
    """SciPy readers and minimisers (``numpy_api``'s lists)."""
    if qualname in SCIPY_TUPLES:
        return Items(tuple(Array() if p == "array" else Number() if p == "number" else UNKNOWN for p in SCIPY_TUPLES[qualname]))
    if qualname in SCIPY_MINIMISERS:
        asked = [form.keyword(name) for name in ("full_output", "retall")]
        plain = all(flag is None or (type(flag) is Lit and not flag.value) for flag in asked)
        return Array() if plain and len(form.args) <= 3 else UNKNOWN
    if qualname in SPARSE_MAKERS:
        return SparseMatrix()
    if qualname in SCIPY_MAT_FILES:
        squeezed = [form.keyword(name) for name in ("squeeze_me", "simplify_cells", "mdict")]
        return ArrayArchive() if len(form.args) == 1 and all(flag is None for flag in squeezed) else UNKNOWN
    return UNKNOWN


def _load(form: Call, evaluate: Evaluate) -> Kind:
    """``np.load``: an array for an ``.npy`` path; else an archive (an ``.npz``) or an array,
    unless pickles are allowed (then it may be any object)."""
    path = form.args[0] if form.args else form.keyword("file")
    where = evaluate(path) if path is not None else UNKNOWN
    if type(where) is Text and where.endswith(".npy"):
        return Array()
    pickles = form.keyword("allow_pickle")
    if pickles is not None and not (type(pickles) is Lit and pickles.value is False):
        return ArrayArchive() if type(where) is Text and where.endswith(".npz") else UNKNOWN
    return ArrayArchive(may_be_array=not (type(where) is Text and where.endswith(".npz")))


def draw(method: str, form: Call, evaluate: Evaluate) -> Kind:
    """A NumPy random draw (``np.random.<method>`` or a generator's): an array only with a
    size (``np.random.rand()`` is a float)."""
    if method in ALWAYS_ARRAY_DRAWS:
        return Array()
    if form.star or form.dstar:
        return UNKNOWN
    if method in SHAPE_AS_ARGS:
        return Array() if form.args and not form.kwargs else UNKNOWN
    position = SIZED_RANDOM.get(method)
    if position is None:
        return UNKNOWN
    size = form.keyword("size")
    if size is None and len(form.args) > position:
        size = form.args[position]
    if size is None or type(evaluate(size)) in (NoneValue, MaybeNone):
        return UNKNOWN
    return Array()


def method(receiver: Kind, name: str, form: Call, evaluate: Evaluate) -> Kind:
    """What ``receiver.name(...)`` gives for a library kind."""
    if name in TO_NUMPY_METHODS:
        return Array() if not form.args else UNKNOWN  # `.numpy()` of a tensor or a pandas object
    kind = type(receiver)
    if (kind is Array or (kind is ArrayArchive and receiver.may_be_array)) and name in ARRAY_METHODS:  # type: ignore[union-attr]
        return Array()  # an archive has no `.astype()`: `np.load(path).astype(...)` is an array
    if kind is Array and name in REDUCTIONS and not form.args and not form.kwargs:  # `w.sum()`: a NumPy scalar
        return Number()
    if kind is Array and name in REDUCTIONS and len(form.args) == 1 and not form.kwargs and _beyond_first_axis(form.args[0]):
        return Array()  # `w.argmax(1)`
    if kind is Frame:
        return Array() if name == "to_numpy" else Frame()
    if kind is RandomGenerator:
        return draw(name, form, evaluate)
    if kind is SparseMatrix:  # `.toarray()` of a sparse matrix is dense; its conversions stay sparse
        return Array() if name in SPARSE_DENSE_METHODS else SparseMatrix() if name in SPARSE_METHODS else UNKNOWN
    if kind is HostTensor or kind is DeviceTensor:
        found = tensors.method(receiver, name, form, evaluate)
        if type(found) is not Unknown:
            return found
    moved = devices.method(receiver, name, form, evaluate)  # to the accelerator, or computed there
    if moved is not None:
        return moved
    if kind is Text and name in _CASES and not form.args and not form.kwargs:  # `args.model.lower()`
        value, tail = receiver.value, receiver.tail  # type: ignore[union-attr]
        return Text(value=_CASES[name](value)) if value is not None else Text(tail=_CASES[name](tail))
    return autograd.method(receiver, name) or UNKNOWN


_CASES = {"lower": str.lower, "upper": str.upper, "casefold": str.casefold}


def attribute(receiver: Kind, name: str) -> Kind:
    kind = type(receiver)
    there = devices.attribute(receiver, name)
    if there is not None:
        return there
    if name == "dtype" and kind in (HostTensor, DeviceTensor, Unknown):  # `x.dtype`: what `.to()` casts to
        return DType()
    if kind is Array and name == "T":
        return Array()
    if kind is SparseMatrix and name == "T":
        return SparseMatrix()
    if kind is Frame:
        return Array() if name == "values" else Frame()
    return UNKNOWN


def item(receiver: Kind, index: Form, evaluate: Evaluate) -> Optional[Kind]:
    """``receiver[index]`` for a library kind (None: not one of those)."""
    kind = type(receiver)
    if kind is Array:
        return Array() if _keeps_array(index, evaluate) else UNKNOWN
    if kind is HostTensor and _basic_index(index):  # `torch.eye(d)[None, :, :]`: a view, where it was made
        return HostTensor(receiver.factory, receiver.random)  # type: ignore[union-attr]
    if kind is ArrayArchive:
        if (_is_key(index) and not index.value.startswith("__")) or (receiver.may_be_array and _reads_whole(index)):  # type: ignore[union-attr]
            return Array()
        return UNKNOWN
    if kind is Arrays:
        return Array() if type(index) is Lit and type(index.value) is int else UNKNOWN
    if kind is H5File:
        return H5Dataset() if _is_key(index) else UNKNOWN
    if kind is H5Dataset:
        parts = index.items if type(index) is Seq and index.kind == "tuple" else (index,)
        return Array() if parts and all(_reads_whole(p) for p in parts) else UNKNOWN
    if kind is Frame:
        return Frame()
    if kind is Record:  # a dict filled by item writes
        return record_item(receiver, index)  # type: ignore[arg-type]
    return None


def _basic_index(index: Form) -> bool:
    """Basic indexing (slices, ``None``, ``...``, integers): a view of the tensor."""
    parts = index.items if type(index) is Seq and index.kind == "tuple" else (index,)
    return all((type(p) is UnknownForm and p.kind in ("slice", "ellipsis")) or (type(p) is Lit and (p.value is None or type(p.value) is int)) for p in parts)


def _is_key(index: Form) -> bool:
    return type(index) is Lit and isinstance(index.value, str)


def _reads_whole(index: Form) -> bool:
    """``[:]``, ``[a:b]`` or ``[...]`` (``[0]`` of a dataset may be a scalar)."""
    return type(index) is UnknownForm and index.kind in ("slice", "ellipsis")


def _keeps_array(index: Form, evaluate: Evaluate) -> bool:
    """An array indexed by a slice, ``None``, ``...``, a field name, a list or an array
    stays an array (an int index may give a scalar; with ``...`` a 0-d array)."""
    if _is_key(index):
        return True  # a field of a structured array
    parts = index.items if type(index) is Seq and index.kind == "tuple" else (index,)
    for part in parts:
        if type(part) is UnknownForm and part.kind in ("slice", "ellipsis"):
            return True
        if type(part) is Lit and part.value is None:
            return True
        if type(part) is Seq and part.kind == "list":
            return True
        if type(part) is not Lit and type(evaluate(part)) is Array:
            return True
    return False


def arithmetic(op: str, left: Kind, right: Kind) -> Kind:
    """``arr / 255.0``: an array with a number or another array; numbers stay numbers; a
    path joined to a text ending keeps that ending; a loss with a number or a tensor keeps its graph.
    ``op`` ending in ``=`` is in place (``poss *= mask``) and reads as the operator: with an
    unknown operand the result is unknown (``arr += series`` binds a pandas Series: NumPy
    defers to the operand's reflected operator)."""
    op = op[:-1] if op.endswith("=") else op
    graph = autograd.arithmetic(op, left, right) or devices.arithmetic(op, left, right)
    if graph is not None:
        return graph
    if op in _ARITHMETIC:  # an archive takes no arithmetic: `np.load(path) / 255.0` is an array
        kinds = {Array if type(k) is ArrayArchive and k.may_be_array else type(k) for k in (left, right)}  # type: ignore[union-attr]
        if Array in kinds and kinds <= {Array, Number}:
            return Array()
        if kinds == {Number}:
            return Number()
    if op in ("Add", "Div") and type(right) is Text:
        return Text(tail=right.value if right.value is not None else right.tail)  # type: ignore[union-attr]
    return UNKNOWN


def literal(value: object) -> Kind:
    if value is None:
        return NoneValue()
    if isinstance(value, bool):
        return Flag(value)
    if isinstance(value, str):
        return Text(value=value)
    if isinstance(value, (int, float)):
        return Number(value)
    return UNKNOWN


def items(kinds) -> Kind:
    return Items(tuple(kinds))
