"""Loaders handed to Hugging Face Accelerate's ``prepare`` and taken back under their own
name: ``model, opt, loader = accelerator.prepare(model, opt, loader)`` wraps the same
loader, so where that name is walked is where the loader is walked (TPF103). The value
engine says what ``accelerator`` is (``project/accelerate_values.py``); this module finds,
on the LibCST tree the loop walk reads, the binding of the loader the name still holds."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from ...analysis.scope import Scope
from ...context import FileContext
from ...project.kinds import Accelerate
from .loader_args import Path
from .loader_sites import LoaderSiteRecorder

_PREPARES = frozenset({"prepare", "prepare_data_loader"})


def prepared_binding(context: FileContext, recorded: LoaderSiteRecorder, name: str, scope: Scope) -> Optional[Tuple[cst.BaseExpression, Path]]:
    """``loader = DataLoader(...)``, then ``model, loader = accelerator.prepare(model,
    loader)`` (once, or on branches): every other binding of the name hands it to
    ``prepare`` at the position it takes back. The one binding left, and its ancestors
    (None: the name is bound some other way)."""
    found = scope.binder(name)
    if found is None:
        return None
    current, values = found
    if name in current.mutated:
        return None
    plain = [v for v in values if v is not None]
    rewraps = [v for v in plain if isinstance(v, cst.Call) and _prepares(context, v, None, name, recorded.value_paths.get(id(v)))]
    others = [v for v in plain if not any(v is r for r in rewraps)]
    unpacked = recorded.unpacked.get((id(current.node), name), [])
    if len(values) - len(plain) != len(unpacked) or not all(_prepares(context, call, index, name, path) for call, index, path in unpacked):
        return None
    if len(others) != 1 or not (rewraps or unpacked):
        return None
    value_path = recorded.value_paths.get(id(others[0]))
    return None if value_path is None else (others[0], value_path)


def prepared_parameter(context: FileContext, recorded: LoaderSiteRecorder, name: str, scope: Scope, function: cst.FunctionDef) -> bool:
    """A parameter of ``function`` that it rebinds only by handing it to ``prepare`` and
    taking it back (``model, loader = accelerator.prepare(model, loader)``, as a tuple or
    alone): it still holds the loader its callers pass."""
    params = function.params
    if scope.node is not function or name in scope.mutated or name not in {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}:
        return False
    values = scope.bindings.get(name, [])
    plain = [v for v in values if v is not None]
    unpacked = recorded.unpacked.get((id(function), name), [])
    if len(values) - len(plain) != len(unpacked) + 1 or not (plain or unpacked):
        return False  # bound some other way too (a loop target, a `with`)
    rewraps = all(isinstance(v, cst.Call) and _prepares(context, v, None, name, recorded.value_paths.get(id(v))) for v in plain)
    return rewraps and all(_prepares(context, call, index, name, path) for call, index, path in unpacked)


def _prepares(context: FileContext, call: cst.Call, index: Optional[int], name: str, path: Optional[Path]) -> bool:
    """``accelerator.prepare(..., name, ...)`` with ``name`` at ``index`` (the only argument
    when None), ``accelerator`` an ``accelerate.Accelerator`` to the value engine (asked in
    the module-level statement of ``path``, the call's ancestors)."""
    func = call.func
    if path is None or len(path) < 2 or not isinstance(func, cst.Attribute) or func.attr.value not in _PREPARES or any(a.star or a.keyword is not None for a in call.args):
        return False
    position = 0 if index is None else index
    if (index is None and len(call.args) != 1) or position >= len(call.args):
        return False
    arg = call.args[position].value
    return isinstance(arg, cst.Name) and arg.value == name and type(context.value_of(func.value, path[1])) is Accelerate
