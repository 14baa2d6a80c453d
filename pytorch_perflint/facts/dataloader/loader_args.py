"""What a DataLoader call passes for the parameters the TPF1xx rules care about."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

import libcst as cst

from ...analysis.ast_index import code_identifiers
from ...analysis.calls import MISSING, Argument, argument
from ...analysis.scope import dotted_name
from ...analysis.values import UNKNOWN, Lookup
from ...context import FileContext
from ...project.kinds import Loader

DATALOADER = "torch.utils.data.DataLoader"
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, multiprocessing_context,
#            generator, *, prefetch_factor, persistent_workers, pin_memory_device)
NUM_WORKERS_POSITION = 5
COLLATE_FN_POSITION = 6
PIN_MEMORY_POSITION = 7
WORKER_INIT_FN_POSITION = 10

_TQDM = frozenset(
    {"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.autonotebook.tqdm", "tqdm.rich.tqdm"}
)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_LOOPS = (cst.For, cst.While)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
Path = Tuple[cst.CSTNode, ...]


@dataclass(frozen=True)
class LoaderArgs:
    """What a DataLoader call passes for the parameters the TPF1xx rules read."""

    dataset: Argument
    num_workers: Argument
    pin_memory: Argument
    persistent_workers: Argument
    collate_fn: Argument

    @property
    def pinned(self) -> bool:
        return self.pin_memory.value is True

    @property
    def custom_collate(self) -> bool:
        """A collate_fn may build batches of any type (with a `.to` of its own)."""
        return not self.collate_fn.missing and self.collate_fn.value is not None


def loader_args(call: cst.Call, lookup: Optional[Lookup], source: str = "") -> LoaderArgs:
    """The call's arguments; ``source`` (the module's text) lets a ``**`` dict that is
    changed after it is built (``kwargs.update(...)``) count as unknown."""
    changed = _changed_kwargs(call, source)

    def read(keyword: str, position: Optional[int]) -> Argument:
        found = argument(call, keyword, position, lookup)
        return Argument(UNKNOWN) if changed and found.node is None else found

    return LoaderArgs(
        dataset=read("dataset", 0),
        num_workers=read("num_workers", NUM_WORKERS_POSITION),
        pin_memory=read("pin_memory", PIN_MEMORY_POSITION),
        persistent_workers=read("persistent_workers", None),
        collate_fn=read("collate_fn", COLLATE_FN_POSITION),
    )


def known_loader_args(context: FileContext, call: cst.Call, statement: Optional[cst.CSTNode] = None) -> LoaderArgs:
    """``loader_args``, with what the project's value engine knows where the call's own text
    does not tell (``num_workers=workers`` whose default no caller overrides, ``**`` a dict
    a project helper returns, one changed in place by literal writes). ``statement``: the
    module-level statement holding a call the pass is not at (``FileContext.value_of``)."""
    args = loader_args(call, context.lookup, context.source)
    if not (args.num_workers.unknown or args.pin_memory.unknown or args.persistent_workers.unknown):
        return args
    loader = context.value_of(call, statement)
    if type(loader) is not Loader:
        return args

    def known(found: Argument, name: str) -> Argument:
        if not found.unknown:
            return found
        value = loader.argument(name)
        if value is None:
            return Argument(MISSING, found.node)
        return Argument(UNKNOWN if value == "?" else ast.literal_eval(value), found.node)

    return replace(
        args,
        num_workers=known(args.num_workers, "num_workers"),
        pin_memory=known(args.pin_memory, "pin_memory"),
        persistent_workers=known(args.persistent_workers, "persistent_workers"),
    )


def project_loader(context: FileContext, call: cst.Call) -> Optional[Loader]:
    """The loader a call of a project subclass of DataLoader builds (``AudioLoader(ds,
    **kw)``, ``project/loader_classes.py``), None for any other call (DataLoader itself
    included). A screen first: the class's name says ``Loader``."""
    if context.project is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    dotted = dotted_name(call.func)
    if dotted is None or "Loader" not in dotted.rpartition(".")[2] or context.qualname(call.func) == DATALOADER:
        return None
    found = context.value_of(call)
    return found if type(found) is Loader else None


def subclass_loader_args(loader: Loader) -> LoaderArgs:
    """What a project DataLoader subclass's call passes on to DataLoader, from the engine
    (its own positions need not be DataLoader's). No argument has a node: the call's own
    keyword may reach DataLoader changed, so no fix edits it."""

    def read(name: str) -> Argument:
        value = loader.argument(name)
        if value is None:
            return Argument(MISSING)
        return Argument(UNKNOWN if value == "?" else ast.literal_eval(value))

    return LoaderArgs(
        dataset=Argument(UNKNOWN),
        num_workers=read("num_workers"),
        pin_memory=read("pin_memory"),
        persistent_workers=read("persistent_workers"),
        collate_fn=read("collate_fn"),
    )


def _changed_kwargs(call: cst.Call, source: str) -> bool:
    """Whether a ``**name`` dict of the call may gain or lose keys after it is built:
    ``name.update(...)``, ``name[key] = ...``, ``name |= ...``, or ``name`` handed to a call."""
    for arg in call.args:
        if arg.star == "**" and isinstance(arg.value, cst.Name):
            name = re.escape(arg.value.value)
            pattern = (
                rf"\b{name}\s*(?:\.\s*(?:update|setdefault|pop|popitem|clear)\s*\(|\[[^\]\n]*\]\s*=(?!=)|\|=)"
                rf"|[(,]\s*{name}\s*[,)]"
            )
            if re.search(pattern, source):
                return True
    return False


def is_dataloader(context: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` constructs ``torch.utils.data.DataLoader`` (at the current point)."""
    return context.qualname(call.func) == DATALOADER


def names_dataloader(tree: ast.Module) -> bool:
    """The ast screen of the rules that read ``DataLoader(...)`` calls (``is_dataloader``):
    every spelling of its qualified name puts ``DataLoader`` among the code's identifiers."""
    return "DataLoader" in code_identifiers(tree)


def names_dataloader_class(tree: ast.Module) -> bool:
    """``names_dataloader``, or a name that holds the word (``AudioDataLoader``: a project
    subclass, ``project_loader``)."""
    identifiers = code_identifiers(tree)
    return "DataLoader" in identifiers or any("DataLoader" in name for name in identifiers)


def dataset_on_device(call: cst.Call, lookup: Optional[Lookup], code_for) -> bool:
    """Whether the dataset visibly holds tensors already moved to a device.

    Pinning such tensors raises, so TPF102 must not ask for it. Looks one name deep into the
    dataset expression and the arguments of a call that builds it (``TensorDataset(x, y)``).
    """
    dataset = argument(call, "dataset", 0, lookup).node
    if dataset is None:
        return False
    expressions: List[cst.BaseExpression] = [_bound(dataset.value, lookup)]
    if isinstance(expressions[0], cst.Call):
        expressions.extend(_bound(arg.value, lookup) for arg in expressions[0].args)
    for expression in expressions:
        text = code_for(expression)
        if ".cuda(" in text or ".to(" in text or "device=" in text:
            return True
    return False


def dataset_on_accelerator(context: FileContext, call: cst.Call) -> bool:
    """The value engine knows the loader's dataset holds tensors on the accelerator (a
    ``TensorDataset`` of moved tensors, a list filled with a model's outputs there:
    ``project/device_values.py``). Pinning them raises and workers cannot share them, so
    TPF101 and TPF102 stay silent."""
    loader = context.value_of(call)
    return type(loader) is Loader and loader.dataset == "device"


def _bound(expr: cst.BaseExpression, lookup: Optional[Lookup]) -> cst.BaseExpression:
    if isinstance(expr, cst.Name) and lookup is not None:
        return lookup(expr.value) or expr
    return expr
