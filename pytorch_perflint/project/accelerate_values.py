"""Hugging Face Accelerate's part of the value engine.

``accelerator = Accelerator(...)`` is an ``Accelerate`` object. ``accelerator.prepare(model,
optimizer, loader)`` gives back what it is handed, each wrapped, in the order handed (one
argument: that one alone), so ``model, optimizer, loader = accelerator.prepare(model,
optimizer, loader)`` names the same model, optimizer and loader as before: the model's
forward, the loader's arguments and where it is walked (TPF103) follow them. A prepared
loader is marked ``prepared``: Accelerate places its batches on the device itself, so they
are no pinned batches to copy (TPF104), and it calls ``set_epoch`` on its sampler (TPF105).
Its ``.device`` is the accelerator.
"""

from __future__ import annotations

from typing import Callable, Optional

from .forms import Call, Form
from .kinds import Accelerate, Accelerator, Items, Kind, Loader, Unknown

Evaluate = Callable[[Form], Kind]
ACCELERATORS = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
# ``prepare`` takes any number of objects; the others one.
_PREPARES = frozenset({"prepare", "prepare_data_loader", "prepare_model", "prepare_optimizer", "prepare_scheduler"})


def call(qualname: Optional[str]) -> Optional[Kind]:
    """``Accelerator(...)`` (None: another call)."""
    return Accelerate() if qualname in ACCELERATORS else None


def method(receiver: Kind, name: str, form: Call, evaluate: Evaluate) -> Optional[Kind]:
    """``accelerator.prepare(a, b)``: what it is handed, wrapped, in order (None: not known here)."""
    if type(receiver) is not Accelerate or name not in _PREPARES:
        return None
    if form.star or form.dstar or form.kwargs or not form.args or (name != "prepare" and len(form.args) != 1):
        return Unknown("prepare")
    kinds = tuple(prepared(evaluate(arg)) for arg in form.args)
    return kinds[0] if len(kinds) == 1 else Items(kinds)


def prepared(kind: Kind) -> Kind:
    """A loader handed to ``prepare`` is the same loader, its batches placed by Accelerate;
    a model, an optimizer, a scheduler are themselves (wrapped)."""
    if type(kind) is Loader:
        return Loader((*kind.arguments, ("prepared", "True")), kind.dataset)  # type: ignore[union-attr]
    return kind


def attribute(receiver: Kind, name: str) -> Optional[Kind]:
    """``accelerator.device``: the accelerator (where it runs at all on one)."""
    return Accelerator() if type(receiver) is Accelerate and name == "device" else None
