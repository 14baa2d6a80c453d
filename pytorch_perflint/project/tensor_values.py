"""Tensor producers of the value engine: which torch calls and tensor methods make a tensor
in host memory (``HostTensor``, with the factory that made it) or on an accelerator
(``DeviceTensor``). ``library_values`` asks here for ``torch.*`` calls and for methods of a
known tensor; TPF402 asks the engine whether a move's receiver is a host tensor fresh from
a factory (``FileContext.value_of``).

A factory's tensor is known only where nothing else decides its placement: no ``device=``,
``out=``, ``pin_memory=``, ``generator=`` or ``layout=``, no ``**kwargs``; a legacy typed
constructor only with positional sizes or data (``torch.FloatTensor()`` is empty, and a
storage it wraps is not copied). Whether the file changes the default tensor type is the
rule's to say: it is a fact of the file, not of the value.
"""

from __future__ import annotations

from typing import Callable, Optional

import re

from .forms import Call, Either, Form, Lit, Ref
from .kinds import UNKNOWN, Accelerator, DeviceTensor, DType, HostTensor, Kind, TensorStorage, TensorType

Evaluate = Callable[[Form], Kind]

FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor")
)
# On the GPU these draw from the GPU's generator: a seeded run gets other numbers.
RANDOM = frozenset(f"torch.{name}" for name in ("rand", "randn", "randint", "randperm", "normal"))
# Legacy typed constructors: always a host tensor (``torch.Tensor`` follows the default
# tensor type). They take no ``device="cuda"``.
LEGACY = frozenset(
    f"torch.{name}"
    for name in (
        "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor "
        "ShortTensor CharTensor ByteTensor BoolTensor"
    ).split()
)
# The same on the GPU (``torch.cuda.FloatTensor(x)``): they copy their data as well.
CUDA_LEGACY = frozenset(f"torch.cuda.{name[len('torch.'):]}" for name in LEGACY if name != "torch.Tensor")
VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# A device text naming an accelerator: "cuda", "cuda:1", "mps"... (also read by ``device_values``).
ACCELERATOR_TEXT = re.compile(r"^(?:cuda|mps|xpu|hpu|npu)(?::\d+)?$")
# Methods whose result lives where their receiver does: in-place fills, dtype casts, views.
KEEP_DEVICE = frozenset(
    "zero_ fill_ float double half long int bool byte short char bfloat16 view reshape unsqueeze "
    "squeeze expand expand_as contiguous repeat t transpose permute detach".split()
)
# The dtypes torch names (``.to(torch.float16)`` casts, it does not move).
DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float float16 float32 float64 half double bfloat16 int int8 int16 int32 int64 long short "
        "uint8 bool complex64 complex128 cfloat cdouble"
    ).split()
)
# In-place fills that draw random numbers (random on the device too, from its generator).
RANDOM_FILLS = frozenset({"normal_", "uniform_", "random_", "bernoulli_", "exponential_"})
# Factory keywords after which a tensor's placement is not the plain "made on the host".
BLOCKERS = frozenset({"device", "out", "pin_memory", "generator", "layout"})


def call(qualname: str, form: Call, evaluate: Evaluate) -> Kind:
    """What the torch function ``qualname`` gives, called with ``form``'s arguments."""
    if qualname in VARIABLES:  # `Variable(t, requires_grad=True)` is `t`
        made = evaluate(form.args[0]) if form.args and not form.star else UNKNOWN
        return made if type(made) in (HostTensor, DeviceTensor) else UNKNOWN
    if qualname == "torch.device":
        return _device(form)
    if form.dstar or any(key in BLOCKERS for key, _ in form.kwargs):
        return UNKNOWN  # `torch.zeros(n, *shape)`: sizes, still made on the host
    if qualname in LEGACY:
        if not form.args or form.kwargs or form.star:
            return UNKNOWN
        if len(form.args) == 1 and type(evaluate(form.args[0])) is TensorStorage:
            return UNKNOWN  # `torch.ByteTensor(storage)` wraps bytes already on the host
        return HostTensor(qualname)
    if qualname in FACTORIES or qualname in RANDOM:
        return HostTensor(qualname, qualname in RANDOM)
    if qualname == "torch.from_numpy":
        return HostTensor()
    if "Storage" in qualname:
        return TensorStorage()
    return UNKNOWN


def _device(form: Call) -> Kind:
    """``torch.device("cuda")``, ``torch.device("cuda" if ok else "cpu")``: the
    accelerator (where it runs at all on one); a host device or an unknown name: unknown."""
    if len(form.args) != 1 or form.kwargs or form.star or form.dstar:
        return UNKNOWN
    arg = form.args[0]
    arms = (arg.body, arg.orelse) if type(arg) is Either else (arg,)
    texts = [a.value for a in arms if type(a) is Lit and isinstance(a.value, str)]
    if len(texts) != len(arms) or not any(ACCELERATOR_TEXT.match(t) for t in texts):
        return UNKNOWN
    return Accelerator()


def method(receiver: Kind, name: str, form: Call, evaluate: Optional[Evaluate] = None) -> Kind:
    """``tensor.name(...)`` of a known tensor: a step that keeps it where it is (a dtype
    cast, ``.to(x.dtype)`` included), ``.cuda()``, ``.cpu()``."""
    if (form.star or form.dstar) and name not in KEEP_DEVICE:  # `.view(*shape)` still keeps it
        return UNKNOWN
    if type(receiver) is HostTensor and (name in KEEP_DEVICE or name in RANDOM_FILLS or (name == "to" and _casts(form, evaluate))):
        return HostTensor(receiver.factory, receiver.random or name in RANDOM_FILLS)
    if name == "cuda" and type(receiver) in (HostTensor, DeviceTensor):
        return DeviceTensor()
    if name == "cpu" and type(receiver) in (HostTensor, DeviceTensor):
        return HostTensor()
    return UNKNOWN


def _casts(form: Call, evaluate: Optional[Evaluate]) -> bool:
    """``.to(dtype)`` / ``.to(dtype=...)`` with a value that is certainly a dtype (a torch
    dtype, or ``x.dtype``): a cast, not a move. Anything else may name a device."""
    if len(form.args) == 1 and not form.kwargs:
        value = form.args[0]
    elif not form.args and len(form.kwargs) == 1 and form.kwargs[0][0] == "dtype":
        value = form.kwargs[0][1]
    else:
        return False
    if type(value) is Ref and value.qualname in DTYPES:
        return True
    return evaluate is not None and type(evaluate(value)) is DType


def tensor_type(qualname: Optional[str]) -> Optional[Kind]:
    """A legacy typed constructor named as a value (bound to a name or an attribute)."""
    return TensorType(frozenset({qualname})) if qualname in LEGACY or qualname in CUDA_LEGACY else None
