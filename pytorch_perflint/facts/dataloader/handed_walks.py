"""Loaders of this module handed to a train-loop function of another module that walks
them (TPF103 across files, the loader built here).

An entry script builds its loaders and calls ``fit_one_epoch(model, gen, gen_val, ...)``
from ``utils/fit.py`` on every epoch; that function walks each parameter once per call, so
every epoch restarts the loaders' workers. The argument at such a call is a pass over the
loader it holds, with the loops around the call (those that do not build the loader anew)
as its epoch loops; a function that walks the parameter in a loop inside another loop of
its own (``fit(model, loader, epochs)``) restarts them on every call, in a loop or not.
Functions of this module are followed by ``loader_sources`` itself (their parameters).
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

import libcst as cst

from ...context import FileContext
from .loader_sites import LoaderFacts
from .project_iterations import parameter_walked


def find_handed_walks(context: FileContext, resolver, facts: LoaderFacts) -> None:
    """Add to ``facts.reiterated`` the loaders handed, as a plain argument, to a project
    function of another module that walks that parameter: every call when its walk is in
    an epoch loop of its own, else a call in a loop that does not build the loader."""
    index = context.project
    if index is None:
        return
    path = os.path.abspath(str(context.path))
    callees: Dict[str, Optional[Tuple[str, ...]]] = {}
    answers: Dict[Tuple[str, int, bool], bool] = {}

    def asked(name: str, place: int, nested: bool) -> bool:  # each callee's module is parsed once per question
        key = (name, place, nested)
        if key not in answers:
            answers[key] = parameter_walked(index, path, name, place, nested)
        return answers[key]

    for name, calls in resolver.recorded.name_calls.items():
        for call, call_path in calls:
            if any(arg.star for arg in call.args):
                continue
            params = callees.get(name, ())
            if params == ():
                params = callees[name] = _elsewhere(index, path, name)
            if params is None:
                continue
            for position, arg in enumerate(call.args):
                keyword = arg.keyword.value if arg.keyword is not None else None
                place = position if keyword is None else params.index(keyword) if keyword in params else None
                if place is None or not isinstance(arg.value, (cst.Name, cst.Attribute)):
                    continue
                sources = [s for s in resolver.resolve(arg.value, call_path + (call, arg)).sources if id(s.site.call) not in facts.reiterated]
                if not sources:
                    continue
                walked = [s for s in sources if s.epoch_loops]
                if walked and asked(name, place, False):
                    facts.reiterated.update(id(s.site.call) for s in walked)
                elif asked(name, place, True):
                    facts.reiterated.update(id(s.site.call) for s in sources)


def _elsewhere(index, path: str, name: str) -> Optional[Tuple[str, ...]]:
    """The positional parameters of the project function of another module that ``name``
    means in module ``path``; None when it is not one."""
    found = index.resolve(path, name)
    if found is None or found.kind != "function" or found.function is None or found.path in (None, path):
        return None
    return tuple(p.name for p in found.function.params if p.kind == "positional")

