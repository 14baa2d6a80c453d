"""Values on the accelerator: what the value engine knows lives there, and which datasets
hold such values.

A loader over tensors that are already on the accelerator is no input pipeline to speed
up: ``pin_memory=True`` raises on them ("only dense CPU tensors can be pinned") and
worker processes cannot share CUDA tensors. So TPF101 and TPF102 ask whether a loader's
dataset is known to hold them (``Loader.dataset == "device"``), and say nothing then.

Known to be on the accelerator:

* a move to it: ``x.cuda()``, ``x.to(device)`` with ``device`` the accelerator
  (``torch.device("cuda")``, a ``"cuda:0"`` text, the ``.device`` of something there); a
  known tensor stays a tensor (``DeviceTensor``), anything else moved is ``OnDevice`` (a
  tensor or a model: ``vae.to(device)``);
* a torch factory with ``device=`` the accelerator;
* what a tensor there computes (its methods, arithmetic with numbers or tensors, its
  attributes), except what gives host values (``.cpu()``, ``.item()``, ``.tolist()``,
  ``.size()``, ``.shape``...);
* what a model there computes from an input there: calling a module or an ``OnDevice``
  object, or a method of an ``OnDevice`` object, with an argument on the accelerator
  (``vae.encode(x.to(vae.device)).latent_dist.sample()``).

A dataset holds them when it is such a value, a ``TensorDataset`` of one, or a list whose
every added item holds one: the item itself, a tuple of them, or an object the function
writes one into before adding it (``batch["latents"] = z; cached.append(batch)``).
Anything else (a tensor moved only later, in the training loop) is not known: the rules
then behave as before.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional

from .appended_lists import Appended, Collected
from .forms import Call, Form, Lit, Ref
from .scopes import expression_form
from .tensor_values import ACCELERATOR_TEXT
from .kinds import Accelerator, Dataset, DeviceTensor, DType, HostTensor, Items, Iterator, Kind, Module, Number, OnDevice, Text, Unknown

Evaluate = Callable[[Form], Kind]

# Tensor methods whose result is a host value (a number, a list, a size) or another object.
HOST_METHODS = frozenset(
    "cpu numpy item tolist size dim ndimension numel nelement element_size stride data_ptr is_contiguous "
    "get_device type storage untyped_storage is_floating_point is_complex keys __len__ __repr__ __str__ "
    "__format__ __bool__ __int__ __float__ __index__ pin_memory".split()
)
# Attributes of a tensor that are not tensors on its device.
HOST_ATTRIBUTES = frozenset("shape ndim dtype is_cuda requires_grad names layout is_leaf is_sparse itemsize nbytes".split())
# Methods of an object moved to the accelerator that give it back (a cast, a mode switch).
KEEPS_OBJECT = frozenset("float half double bfloat16 train eval requires_grad_ contiguous".split())
_ARITHMETIC = frozenset({"Add", "Sub", "Mult", "Div", "FloorDiv", "Pow", "Mod", "MatMult"})


def on_accelerator(kind: Kind) -> bool:
    """``torch.device("cuda")`` or a ``"cuda:0"`` text: the accelerator as a device."""
    if type(kind) is Accelerator:
        return True
    return type(kind) is Text and kind.value is not None and bool(ACCELERATOR_TEXT.match(kind.value))  # type: ignore[union-attr]


def holds(kind: Kind) -> bool:
    """A value on the accelerator, or a tuple, list or dataset holding one."""
    kind_type = type(kind)
    if kind_type in (DeviceTensor, OnDevice):
        return True
    if kind_type is Items:
        return any(holds(item) for item in kind.items)  # type: ignore[union-attr]
    if kind_type is Iterator:
        return holds(kind.element)  # type: ignore[union-attr]
    return kind_type is Dataset and kind.storage == "device"  # type: ignore[union-attr]


def factory(form: Call, evaluate: Evaluate) -> Optional[Kind]:
    """``torch.zeros(n, device=dev)`` with ``dev`` the accelerator (None: not so)."""
    device = form.keyword("device")
    if device is None or form.dstar or form.keyword("out") is not None:
        return None
    return DeviceTensor() if on_accelerator(evaluate(device)) else None


def method(receiver: Kind, name: str, form: Call, evaluate: Evaluate) -> Optional[Kind]:
    """``receiver.name(...)`` when it moves something to the accelerator or computes there
    (None: not known here)."""
    kind = type(receiver)
    if form.star or form.dstar or kind not in (Unknown, OnDevice, HostTensor, DeviceTensor):
        return None
    tensor = kind in (HostTensor, DeviceTensor)
    if name == "cuda":
        return DeviceTensor() if tensor else OnDevice()
    if name == "to":
        targets = [*form.args, *(value for key, value in form.kwargs if key == "device")]
        if any(on_accelerator(evaluate(target)) for target in targets):
            return DeviceTensor() if tensor else OnDevice()
        if kind in (DeviceTensor, OnDevice) and _casts(form, evaluate):
            return receiver
        return None
    if kind is DeviceTensor:
        return None if name in HOST_METHODS else DeviceTensor()
    if kind is OnDevice:
        if name in KEEPS_OBJECT:
            return receiver
        return DeviceTensor() if _device_input(form, evaluate) else None
    return None


def called(callee: Kind, form: Optional[Call], evaluate: Optional[Evaluate]) -> Optional[Kind]:
    """A module or an object on the accelerator run on an input there: its output is there."""
    if form is None or evaluate is None or form.star or form.dstar:
        return None
    if type(callee) is OnDevice or (type(callee) is Module and not callee.loss):  # type: ignore[union-attr]
        return DeviceTensor() if _device_input(form, evaluate) else None
    return None


def attribute(receiver: Kind, name: str) -> Optional[Kind]:
    """``x.device`` of a value there is the accelerator; a tensor's other attributes
    (``.data``, ``.T``, an output's fields) are there too."""
    kind = type(receiver)
    if kind not in (DeviceTensor, OnDevice):
        return None
    if name == "device":
        return Accelerator()
    if name == "dtype":
        return DType()
    return DeviceTensor() if kind is DeviceTensor and name not in HOST_ATTRIBUTES else None


def arithmetic(op: str, left: Kind, right: Kind) -> Optional[Kind]:
    """``latents * 0.18215``: a tensor there with numbers or tensors stays there."""
    kinds = {type(left), type(right)}
    if op.rstrip("=") in _ARITHMETIC and DeviceTensor in kinds and kinds <= {DeviceTensor, Number, HostTensor}:
        return DeviceTensor()
    return None


def _device_input(form: Call, evaluate: Evaluate) -> bool:
    values = [*form.args, *(value for _, value in form.kwargs)]
    return any(type(value) is not Lit and holds(evaluate(value)) for value in values)


def _casts(form: Call, evaluate: Evaluate) -> bool:
    """``.to(torch.float16)`` / ``.to(dtype=...)``: a cast, not a move."""
    values = [*form.args, *(value for key, value in form.kwargs if key == "dtype")]
    return bool(values) and len(values) == len(form.args) + len(form.kwargs) and all(type(evaluate(v)) is DType for v in values)


# -- datasets --------------------------------------------------------------------------------
def written_into(scope, name: str, bound: int, at: int, evaluate_at: Callable[[Form, int], Kind]) -> bool:
    """The function writes a value on the accelerator into the object ``name`` holds
    (``name[k] = v`` / ``name.k = v``) after its binding on line ``bound`` and before line
    ``at``, in the block that line stands in (so on every path to it)."""
    node = getattr(scope, "node", None)
    if node is None:
        return False
    here = scope.blocks_at(at)
    for statement in ast.walk(node):
        if type(statement) is not ast.Assign or len(statement.targets) != 1 or not bound < statement.lineno < at:
            continue
        target = statement.targets[0]
        if type(target) not in (ast.Subscript, ast.Attribute) or type(target.value) is not ast.Name or target.value.id != name:  # type: ignore[attr-defined]
            continue
        if scope.blocks_at(statement.lineno) != here:
            continue
        if holds(evaluate_at(expression_form(statement.value, scope), statement.lineno)):
            return True
    return False


def filled_there(engine, form: Form, where, depth: int) -> bool:
    """``form`` names a list built by appends (``cached.append(item)``) every item of which
    holds a value on the accelerator, or is an object the function wrote one into before
    adding it."""
    from_scope = getattr(where, "scope", None)
    if type(form) is not Ref or "." in form.name or from_scope is None:
        return False
    status, built, _ = from_scope.value_at(form.name, where.line)
    if status != "value" or type(built) not in (Appended, Collected) or not built.items:  # type: ignore[union-attr]
        return False

    def evaluate_at(value: Form, line: int) -> Kind:
        return engine._eval(value, where.at(line), depth + 1)

    for item, at in built.items:  # type: ignore[union-attr]
        if holds(evaluate_at(item, at)):
            continue
        if type(item) is not Ref or "." in item.name:
            return False
        found, _, bound = from_scope.value_at(item.name, at)
        if found != "value" or not written_into(from_scope, item.name, bound, at, evaluate_at):
            return False
    return True
