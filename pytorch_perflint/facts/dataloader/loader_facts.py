"""Facts about ``torch.utils.data.DataLoader`` that the TPF1xx rules share.

* ``loader_args``: what a DataLoader call passes for the parameters the rules care about,
  read from keywords, positions and known ``**`` dicts (UNKNOWN where it cannot be known).
* ``loader_facts``: one walk of the module (only in files that mention DataLoader) that finds
  every DataLoader call and follows each loader to the places it is iterated: through names
  bound once, ``self.attr`` set once in a class, parameters of same-module functions whose
  every call passes a loader, helpers that return one (or a tuple the caller unpacks),
  dicts and lists of loaders (``loaders[phase]``), and ``enumerate``/``tqdm``/``iter``.
  From that it knows which loaders are iterated again and again (inside an outer loop that
  did not create them: TPF103, TPF105), with the loops around each pass. What a loader or a
  batch *is* (pinned, its workers, its dataset) is the value engine's answer
  (``project/loader_values.py``, asked through ``FileContext.value_of``); this walk answers
  only the loop question, which is about where code runs, not about a value.

Anything that cannot be followed (a wrapper such as ``accelerator.prepare``, a name bound
twice, a call with ``*args``) ends the trail, so the rules stay silent there.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, Optional, Tuple

import libcst as cst

from ...analysis.ast_index import tree_index
from ...context import FileContext
from ...analysis.values import UNKNOWN
from .loader_args import Path, known_loader_args
from .loader_sites import LoaderFacts, LoaderSiteRecorder
from .loader_sources import LoaderSourceResolver
from .trainer_walks import walked_by_trainer
from .handed_walks import find_handed_walks


def loader_facts(context: FileContext) -> LoaderFacts:
    """Walk the module once and derive the TPF103/TPF105 facts."""
    if "DataLoader" not in context.source:
        return LoaderFacts()
    collector = LoaderSiteRecorder(context)
    collector.walk(context.module)
    facts = LoaderFacts(sites=collector.sites)
    if not collector.sites:
        return facts
    resolver = LoaderSourceResolver(context, collector)
    facts.resolver = resolver
    _find_reiterated(resolver, facts)
    if context.project is not None:
        _find_reiterated_elsewhere(context, resolver, facts)
        _find_walked_by_trainers(context, facts)
        find_handed_walks(context, resolver, facts)
    return facts


def could_iterate_helper_loaders(source: str) -> bool:
    """A cheap over-approximation for loaders built elsewhere: a copy to the device and a
    name that says loader (``train_loader``, ``make_loader(...)``, ``get_loader``)."""
    return (".to(" in source or ".cuda(" in source) and "loader" in source.lower()


def could_copy_loader_batches(tree: ast.Module) -> bool:
    """TPF104's ast screen: a ``.to(...)`` or ``.cuda(...)`` call, and a name in the code
    that says loader (``DataLoader``, ``train_loader``, ``get_loader``)."""
    index = tree_index(tree)
    if not any("loader" in name.lower() for name in index.identifiers):
        return False
    return any(type(call.func) is ast.Attribute and call.func.attr in ("to", "cuda") for call in index.calls)


def _iteration_sites(collector: LoaderSiteRecorder) -> Iterable[Tuple[cst.BaseExpression, Path]]:
    """Every expression that starts a pass over an iterable, with its ancestors."""
    for node, path in collector.fors:
        yield node.iter, path + (node,)
    for node, path in collector.comp_fors:
        yield node.iter, path + (node,)
    for call, path in collector.iter_calls:
        arg = call.args[0]
        if not arg.star and arg.keyword is None:
            yield arg.value, path + (call, arg)
    for node, path in collector.yield_froms:
        yield node.item, path + (node,)


def _find_reiterated(resolver: LoaderSourceResolver, facts: LoaderFacts) -> None:
    for expr, path in _iteration_sites(resolver.recorded):
        for source in resolver.resolve(expr, path).sources:
            loops = source.epoch_loops
            if loops:
                facts.reiterated.add(id(source.site.call))
                if not source.prepared:  # TPF105's passes: Accelerate sets a prepared loader's epoch
                    facts.passes.setdefault(id(source.site.call), []).append((path, loops, source.creators))


def _find_reiterated_elsewhere(context: FileContext, resolver: LoaderSourceResolver, facts: LoaderFacts) -> None:
    """Loaders with workers that a module-level helper here returns, walked every epoch by
    a caller in another module (``project_iterations``): the same question TPF105 asks
    (``walked_every_epoch_elsewhere``), without its ``set_epoch`` and evaluation screens.
    Workers the call's text does not tell are the value engine's (``num_workers=workers``,
    a parameter every project caller passes the same number for)."""
    for site in facts.sites.values():
        workers = site.args.num_workers.value
        if id(site.call) in facts.reiterated:
            continue
        if workers is UNKNOWN and site.args.num_workers.node is not None:
            workers = known_loader_args(context, site.call, site.ancestors[1] if len(site.ancestors) > 1 else None).num_workers.value
        if not (type(workers) is int and workers > 0):
            continue
        if walked_every_epoch_elsewhere(context, facts, site.call):
            facts.reiterated.add(id(site.call))


def _find_walked_by_trainers(context: FileContext, facts: LoaderFacts) -> None:
    """Loaders handed to a project trainer class that walks them every epoch
    (``trainer_walks``); TPF103 asks their workers itself, where the engine can read them."""
    for site in facts.sites.values():
        if id(site.call) not in facts.reiterated and walked_by_trainer(context, site.call, site.ancestors):
            facts.reiterated.add(id(site.call))


def walked_every_epoch_elsewhere(
    context: FileContext,
    facts: LoaderFacts,
    call: cst.Call,
    unless_text: Optional[str] = None,
    unless_name: Optional["re.Pattern[str]"] = None,
) -> bool:
    """A module-level helper here returns the loader ``call`` builds, and a caller in
    another module walks it every epoch (itself, through a ``tqdm`` bar, or by passing it
    to a project function that walks it), unless that caller's module (or a project module
    it imports) mentions ``unless_text`` or binds it to a name ``unless_name`` matches.
    TPF103 asks it with no screens, TPF105 with ``set_epoch`` and evaluation names."""
    resolver = facts.resolver
    if resolver is None or context.project is None:
        return False
    from .project_iterations import iterated_every_epoch

    for name, definitions in resolver.recorded.functions.items():
        if len(definitions) != 1 or len(definitions[0][1]) != 1:
            continue  # not one module-level def
        function, _ = definitions[0]
        for value, path in resolver.recorded.returns.get(id(function), []):
            for element, (expr, expr_path) in _returned_parts(value, path):
                if not any(s.site.call is call for s in resolver.resolve(expr, expr_path).sources):
                    continue
                if iterated_every_epoch(context.project, str(context.path), name, element, unless_text, unless_name):  # type: ignore[arg-type]
                    return True
    return False


def _returned_parts(value, path: Path):
    """(tuple position or None, expression, its ancestors) for what ``return value`` gives."""
    if value is None:
        return
    if isinstance(value, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
        for index, element in enumerate(value.elements):
            yield index, (element.value, path + (value, element))
    else:
        yield None, (value, path)
