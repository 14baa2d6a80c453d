"""TPF105 across files for a sampler packed into a dict of loader arguments a module-level
helper returns (``kwargs["sampler"] = DistributedSampler(...)``; ``return kwargs``), read
with ``ast`` in its callers as ``project_iterations`` reads a caller's loader."""

from __future__ import annotations

import ast
import re
from typing import Optional, Sequence, Tuple

from ...project import ProjectIndex
from .project_iterations import (
    _Walker, _argument, _bound_name, _bound_once, _holds_in_loop, _name_walked, _one_loader, _own_nodes, _passes_true, _results_bound_once,
)


def packed_sampler_walked_every_epoch(
    index: ProjectIndex, path: str, helper: str, knob: Optional[Tuple[str, object]], unless_text: str, unless_name: "re.Pattern[str]"
) -> bool:
    """TPF105 across files, for a sampler packed into a dict of loader arguments: module-level
    function ``helper`` of ``path`` returns the dict (``kwargs["sampler"] = DistributedSampler(
    ...)``); a caller in another module binds the result once (passing a value for which the
    sampler shuffles: ``knob``), unpacks it into one ``DataLoader(ds, **kwargs)`` bound once,
    and walks that loader every epoch: in a loop of its own, or by handing it once to a
    project function that walks it inside its epoch loop. The caller's module and the
    modules it imports, and the walking function's module, never mention ``set_epoch``."""
    for caller_path, body, assign, params in _results_bound_once(index, path, helper, unless_text):
        kwargs = assign.targets[0].id  # type: ignore[attr-defined]
        if knob is not None and not _passes(assign.value, knob, params) or _sampler_written(body, kwargs):  # type: ignore[arg-type]
            continue
        loader = _loader_unpacking(body, kwargs)  # type: ignore[arg-type]
        name = _bound_name(loader.targets[0], None) if loader is not None else None
        if loader is None or name is None or unless_name.search(name):
            continue
        walker = _Walker(index, caller_path, unless_text, unless_name)
        if _name_walked(body, loader, name, unless_name, walker):  # type: ignore[arg-type]
            return True
        if _bound_once(body, name) and any(walker.walks_every_epoch(n, (name,)) for n in _own_nodes(body) if not _holds_in_loop(body, n)):  # type: ignore[arg-type]
            return True  # as ``_handed_to_epoch_loop`` reads it
    return False


def _passes(call: ast.Call, knob: Tuple[str, object], params: Sequence[str]) -> bool:
    """The call passes ``True`` for the parameter (``(param, None)``) or the literal the
    sampler's ``shuffle=param == literal`` compares it with."""
    name, literal = knob
    if literal is None:
        return _passes_true(call, name, params)
    value = _argument(call, name, params)
    return type(value) is ast.Constant and value.value == literal  # type: ignore[union-attr]


def _sampler_written(body: Sequence[ast.stmt], kwargs: str) -> bool:
    """``kwargs["sampler"] = ...`` / ``kwargs.pop(...)``/``update``: the caller changes it."""
    for node in _own_nodes(body):
        if type(node) is ast.Subscript and type(node.ctx) is not ast.Load and type(node.value) is ast.Name and node.value.id == kwargs:  # type: ignore[attr-defined]
            key = node.slice  # type: ignore[attr-defined]
            if not (type(key) is ast.Constant and key.value not in ("sampler", "batch_sampler", "shuffle")):
                return True
        if type(node) is ast.Call and type(node.func) is ast.Attribute and type(node.func.value) is ast.Name:  # type: ignore[attr-defined]
            if node.func.value.id == kwargs and node.func.attr in ("pop", "update", "clear", "setdefault"):  # type: ignore[attr-defined]
                return True
    return False


def _loader_unpacking(body: Sequence[ast.stmt], kwargs: str) -> Optional[ast.Assign]:
    """The one ``loader = DataLoader(..., **kwargs)`` of the scope (no ``sampler=`` of its own)."""
    return _one_loader(
        body,
        lambda keywords: any(k.arg is None and type(k.value) is ast.Name and k.value.id == kwargs for k in keywords)
        and not any(k.arg in ("sampler", "batch_sampler") for k in keywords),
    )
