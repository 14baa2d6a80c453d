"""A model handed to a call together with the loop's item runs on that item there (TPF206's
evaluation loops).

``pred = sliding_window_inference(image, roi, 1, model)`` in ``for batch in loader:`` (with
``image = batch["image"].cuda()``) runs ``model`` on windows of the current image: the
forward is an argument of a library call. A call counts when one of its arguments is a
model (named like one, or put in eval mode before the loop) that the loop does not bind,
another is the loop's item or a value its body computes from it (``item_pieces.item_names``;
not the counter of ``enumerate``), and the callee runs what it is handed:

* a project function or method that calls the parameter receiving the model outside its
  own loops, or in loops over pieces of its input (``forward_calls.calls_parameter``): one
  that loops over the data it is handed evaluates a whole set per call;
* a library callable (the project index resolves it outside the project), unless its name
  says it does something else to the model (``save_model``, ``log``, ``deepcopy``,
  ``export``: ``forward_calls.names_other_use``) or the item is a loader or a dataset
  (a loop over datasets, each evaluated in full by the library).

Unknown callees (a local callable, an unresolved name) stay silent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Collection, FrozenSet, List, Optional, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...project.forward_calls import calls_parameter, is_model_name, names_other_use
from .classifiers import last_name

if TYPE_CHECKING:
    from ...context import FileContext

# An item that is a whole set, evaluated in full per call (`for name, loader in loaders.items()`).
_WHOLE_SET = re.compile(r"(?:loader|dataset|data_?set|iterator|split|task)s?$", re.IGNORECASE)

Handed = Tuple[Optional[int], Optional[str]]


def handed_at(call: cst.Call, is_model: Callable[[Optional[str]], bool]) -> List[Handed]:
    """Where the call hands a model: (position, None) or (None, keyword); nothing after a
    ``*args``."""
    out: List[Handed] = []
    position = 0
    for arg in call.args:
        if arg.star:
            break
        name = dotted_name(arg.value) if type(arg.value) in (cst.Name, cst.Attribute) else None
        if arg.keyword is not None:
            if is_model(name):
                out.append((None, arg.keyword.value))
            continue
        if is_model(name):
            out.append((position, None))
        position += 1
    return out


def item_values(loop: cst.CSTNode, names: FrozenSet[str]) -> FrozenSet[str]:
    """The item's names less the counter of ``for i, x in enumerate(...)``."""
    if type(loop) is cst.For and type(loop.iter) is cst.Call and type(loop.iter.func) is cst.Name:
        target = loop.target
        if loop.iter.func.value == "enumerate" and type(target) in (cst.Tuple, cst.List) and target.elements:  # type: ignore[union-attr]
            first = target.elements[0].value  # type: ignore[union-attr]
            if type(first) is cst.Name:
                return names - {first.value}
    return names


def runs_model_on_item(
    context: "FileContext",
    call: cst.Call,
    statement: cst.CSTNode,
    bound: Collection[str],
    items: FrozenSet[str],
    evaluated: Collection[str],
) -> Optional[bool]:
    """Whether ``call`` runs a model it is handed on the loop's item: None when not (as far
    as can be known), False when autograd is as the caller has it, True when the callee
    turns it off."""
    def is_model(name: Optional[str]) -> bool:
        return name is not None and name.split(".")[0] not in bound and (name in evaluated or is_model_name(name))

    handed = handed_at(call, is_model)
    if not handed or not _hands_item(call, items):
        return None
    values = context.values()
    project = context.project
    spelled = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    if values is None or project is None or spelled is None:
        return None
    targets = values.callees(call, statement)
    if targets:
        found = [calls_parameter(values.engine, d, *at) for d in targets for at in handed]
        return None if any(f is None for f in found) else any(found)
    definition = project.resolve(context.path, spelled) if type(call.func) is cst.Name or context.qualname(call.func) else None
    if definition is None or definition.kind != "external" or names_other_use(spelled.rsplit(".", 1)[-1]):
        return None
    return False


def _hands_item(call: cst.Call, items: FrozenSet[str]) -> bool:
    """Some argument reads the item (``image``, ``batch["image"].cuda()``), and none of the
    arguments naming it is a whole set (a loader, a dataset)."""
    read = False
    for arg in call.args:
        names = _names_in(arg.value)
        if names & items:
            read = True
            spelled = last_name(arg.value) if type(arg.value) in (cst.Name, cst.Attribute) else None
            if spelled is not None and _WHOLE_SET.search(spelled):
                return False
    return read


def _names_in(node: cst.CSTNode) -> FrozenSet[str]:
    found = set()
    stack: List[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            found.add(current.value)
        elif type(current) is cst.Attribute:
            stack.append(current.value)
            continue
        elif isinstance(current, (cst.Lambda, cst.FunctionDef)):
            continue
        stack.extend(current.children)
    return frozenset(found)
