"""What TPF105 reads about a DistributedSampler: where it is bound, the epoch loop, the
passes that evaluate, and small walks of the module (for the rule module to stay short)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

import libcst as cst

from ...analysis.calls import argument
from ...analysis.walk import own_returns, child_nodes
from ...analysis.scope import Scope, dotted_name
from ...context import FileContext
from .iterable_wrappers import walked_argument
from .loader_args import _TQDM, Path
from .loader_facts import loader_facts
from .loader_sites import LoaderSite, _method_class
from ..training.reaching import binds
from ...project.reads import spells

# An evaluation pass, whose order does not matter: a function that says so, or a pass
# under no_grad.
_EVALUATES = re.compile(r"eval|valid|test|infer|predict", re.IGNORECASE)
_NO_GRAD = re.compile(r"no_grad|inference_mode|set_grad_enabled")
_EPOCH_NAME = re.compile(r"epoch|^ep$|^e$", re.IGNORECASE)
_RANGES = frozenset({"range", "trange"})


@dataclass(frozen=True)
class Helper:
    """A module-level function that returns the sampler: loaders get it by calling it."""

    name: str
    function: cst.FunctionDef


@dataclass(frozen=True)
class Keyed:
    """A dict of samplers (``samplers = {x: DistributedSampler(ds[x]) for x in phases}``):
    loaders get one by subscript (``sampler=samplers[x]``)."""

    name: str


def bound_name(call: cst.Call, ancestors: Path):
    """``name`` for ``name = DistributedSampler(...)`` (also as a branch of ``x if c else
    None`` or ``RandomSampler(ds) if c else x``, or an item of a tuple unpacked into names:
    ``name, shuffle = DistributedSampler(ds), False``), ``(attr, class)`` for ``self.attr = ...``
    in a method, ``Keyed(name)`` for the value of a dict comprehension bound to ``name``,
    else None."""
    parent = ancestors[-1] if ancestors else None
    if isinstance(parent, cst.IfExp) and (parent.body is call or parent.orelse is call) and len(ancestors) > 1:
        parent = ancestors[-2]
    if isinstance(parent, cst.Element) and len(ancestors) > 2:
        return _unpacked_name(parent, ancestors[-2], ancestors[-3])
    if isinstance(parent, cst.DictComp) and parent.value is call and len(ancestors) > 1:
        holder = ancestors[-2]
        if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name):
            return Keyed(holder.targets[0].target.value)
        return None
    if isinstance(parent, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        if len(targets) != 1:
            return None
        if isinstance(targets[0], cst.Name):
            return targets[0].value
        attr = self_attr(targets[0])
        cls = _method_class(ancestors)
        if attr is not None and cls is not None:
            return (attr, cls)
    return None


def _unpacked_name(element: cst.Element, display: cst.CSTNode, statement: cst.CSTNode) -> Optional[str]:
    """``sampler`` for ``sampler, shuffle = DistributedSampler(ds), False``: the name at the
    same place of a target tuple as long as the value tuple (no ``*``)."""
    if not isinstance(display, (cst.Tuple, cst.List)) or not isinstance(statement, cst.Assign) or statement.value is not display:
        return None
    if len(statement.targets) != 1 or not isinstance(statement.targets[0].target, (cst.Tuple, cst.List)):
        return None
    names = statement.targets[0].target.elements  # type: ignore[attr-defined]
    values = display.elements
    if len(names) != len(values) or any(not isinstance(e, cst.Element) for e in (*names, *values)):
        return None
    position = next((i for i, e in enumerate(values) if e is element), None)
    target = None if position is None else names[position].value
    return target.value if isinstance(target, cst.Name) else None


def self_attr(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def binding_scope(scope: Scope, name: str) -> Optional[Scope]:
    """The scope whose binding of ``name`` a reference in ``scope`` sees."""
    for current in scope.visible():
        if name in current.declared_outer:
            return None
        if name in current.bindings or name in current.imports:
            return current
    return None


def names_bound_to(site: LoaderSite) -> set:
    """``loader`` for ``loader = DataLoader(...)``: the name a pass may hand on."""
    parent = site.ancestors[-1] if site.ancestors else None
    if isinstance(parent, cst.Assign):
        return {t.target.value for t in parent.targets if isinstance(t.target, cst.Name)}
    return set()


def evaluates(path: Path) -> bool:
    """The pass evaluates: it runs under no_grad, or in a function named for evaluation."""
    for index, ancestor in enumerate(path):
        if isinstance(ancestor, cst.FunctionDef) and _EVALUATES.search(ancestor.name.value):
            return True
        if isinstance(ancestor, cst.With) and index + 1 < len(path) and path[index + 1] is ancestor.body:
            if any(_NO_GRAD.search(cst.Module([]).code_for_node(item.item)) for item in ancestor.items):
                return True
    return False


def epoch_variable(loop: cst.CSTNode) -> Optional[str]:
    """``epoch`` for ``for epoch in range(...)`` (``trange``, ``tqdm(range(...))``)."""
    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
        return None
    if not _EPOCH_NAME.search(loop.target.value):
        return None
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "tqdm" and it.args:
        it = it.args[0].value
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in _RANGES:
        return loop.target.value
    return None


def ancestors_of(root: cst.CSTNode, target: cst.CSTNode) -> Optional[Path]:
    """The nodes from ``root`` down to ``target``'s parent (statements only are entered)."""
    stack: List[Tuple[cst.CSTNode, Path]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, _STATEMENT_NODES):
            stack.extend((child, path + (node,)) for child in child_nodes(node))
    return None


def another_sampler(context: FileContext, receiver: cst.BaseExpression, root: cst.CSTNode, sampler: Optional[cst.Call], samplers: FrozenSet[str]) -> bool:
    """``self.other.set_epoch(...)`` (in ``root``, a method or a loop in one) sets the epoch of
    another sampler than ``sampler`` when every assignment of ``.other`` in the module is a
    ``self.other = DistributedSampler(...)`` of that class building a new one, not ``sampler``
    (RobustVideoMatting's trainer: four samplers, three set in their helpers)."""
    attr = self_attr(receiver)
    path = ancestors_of(context.module, root) if attr is not None else None
    cls = _method_class(path + (root,)) if path is not None else None
    resolver = context.fact(loader_facts).resolver
    if cls is None or resolver is None:
        return False
    assigned = resolver.recorded.self_assigns.get((id(cls), attr), [])  # type: ignore[attr-defined]
    if not assigned or len(re.findall(rf"\.{re.escape(attr)}\s*(?:=(?!=)|[-+*/|&]=)", context.source)) != len(assigned):  # type: ignore[arg-type]
        return False  # assigned elsewhere too (another class, another object, an alias)
    return all(
        isinstance(value, cst.Call) and value is not sampler and context.qualname(value.func, context.scope_for(value, value_path)) in samplers
        for value, value_path in assigned
    )


def calls_in(root: cst.CSTNode):
    stack: List[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not root:
            continue
        stack.extend(child_nodes(node))


_STATEMENT_NODES = (cst.Module, cst.BaseCompoundStatement, cst.BaseSuite, cst.ExceptHandler, cst.Else, cst.Finally)


def defs_by_name(context: FileContext) -> Dict[str, List[cst.FunctionDef]]:
    """Every function and method of the module by name (a per-file fact)."""
    found: Dict[str, List[cst.FunctionDef]] = {}
    stack: List[cst.CSTNode] = [context.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            found.setdefault(node.name.value, []).append(node)
        if isinstance(node, _STATEMENT_NODES):
            stack.extend(child_nodes(node))
    return found


_BUILTINS = frozenset({"len", "print", "iter", "next", "enumerate", "zip", "isinstance", "range", "str", "repr", "id", "type"})


def is_builtin_call(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value in _BUILTINS


def only_walks(context: FileContext, call: cst.Call) -> bool:
    """A call handed the loader that only reads it: a builtin (``len(loader)``), a progress
    bar (``tqdm(loader, desc=...)``), or a project iterable whose endless ``__iter__`` walks
    it again and again and whose class never calls ``set_epoch`` (``for b in
    Forever(loader)``)."""
    if is_builtin_call(call) or context.qualname(call.func) in _TQDM:
        return True
    walked = walked_argument(context, call) if context.project is not None else None
    return walked is not None and walked.endless


_BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})


def sampler_of(context: FileContext, site: LoaderSite) -> Optional[cst.BaseExpression]:
    """What the loader's ``sampler=`` is, or the sampler a ``batch_sampler=BatchSampler(
    sampler, ...)`` wraps (inline, or a name bound once in the loader's scope)."""
    passed = argument(site.call, "sampler", 3).node
    if passed is not None:
        return passed.value
    batches = argument(site.call, "batch_sampler", 4).node
    value = batches.value if batches is not None else None
    if isinstance(value, cst.Name):
        name, value = value, context.scope_for(site.call, site.ancestors).lookup_value(value.value)
        if value is None:
            return name if rewrapped(context, site, name.value) else None
    if not isinstance(value, cst.Call) or not _batch_sampler(context, value):
        return None
    inner = argument(value, "sampler", 0).node
    return inner.value if inner is not None else None


def rewrapped(context: FileContext, site: LoaderSite, name: str) -> bool:
    """The loader's ``batch_sampler=`` names a sampler rebound to a batch sampler wrapping
    it (``sampler = DistributedSampler(ds)``; ``sampler = BatchSampler(sampler=sampler,
    ...)`` or a project subclass of it, one per branch): the loader batches whatever
    sampler the name held before. Every binding that wraps must wrap that name."""
    scope = binding_scope(context.scope_for(site.call, site.ancestors), name)
    values = scope.bindings.get(name, []) if scope is not None else []
    wrappers = [v for v in values if isinstance(v, cst.Call) and _batch_sampler(context, v)]
    if not wrappers or any(v is None for v in values):
        return False
    for wrapper in wrappers:
        inner = argument(wrapper, "sampler", 0).node
        if inner is None or not (isinstance(inner.value, cst.Name) and inner.value.value == name):
            return False
    return True


def _batch_sampler(context: FileContext, call: cst.Call) -> bool:
    """torch's ``BatchSampler``, or a project class deriving from it."""
    if context.qualname(call.func) in _BATCH_SAMPLERS:
        return True
    project, dotted = context.project, dotted_name(call.func)
    if project is None or dotted is None or (not dotted[:1].isupper() and "." not in dotted):
        return False
    try:
        definition = project.resolve(str(context.path), dotted)
    except Exception:  # noqa: BLE001 - an unresolvable name is unknown
        return False
    return definition is not None and definition.kind == "class" and bool(project.external_bases(definition) & _BATCH_SAMPLERS)


def project_sets_epoch(context: FileContext, call: cst.Call) -> bool:
    """A function of another project module (``engine.train_one_epoch(...)``) whose
    module's text mentions ``set_epoch``; one that cannot be read counts as setting it."""
    project = context.project
    func = call.func
    if project is None or not isinstance(func, (cst.Name, cst.Attribute)):
        return False
    dotted = dotted_name(func)
    if dotted is None:
        return False
    try:
        definition = project.resolve(str(context.path), dotted)
    except Exception:  # noqa: BLE001 - an unresolvable name is unknown
        return False
    if definition is None or definition.path is None or definition.kind not in ("function", "method", "class"):
        return False
    return spells(project, definition.path, "set_epoch") is not False


def local_defs(context: FileContext, call: cst.Call) -> List[cst.FunctionDef]:
    """Same-module functions or methods a call may run, by name (``f()``, ``self.f()``)."""
    func = call.func
    if isinstance(func, cst.Name):
        name = func.value
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        name = func.attr.value
    else:
        return []
    return context.fact(defs_by_name).get(name, [])


# -- a sampler a same-module helper returns (TPF105) ---------------------------------
def returned_by(context: FileContext, call: cst.Call, ancestors: Path) -> Optional[Helper]:
    """``def data_sampler(...): return DistributedSampler(...)`` at module level."""
    if not ancestors or not isinstance(ancestors[-1], cst.Return):
        return None
    function = next((a for a in reversed(ancestors) if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    if not isinstance(function, cst.FunctionDef) or len(context.fact(defs_by_name).get(function.name.value, [])) != 1:
        return None
    if not any(a is function for a in context.module.body):
        return None
    return Helper(function.name.value, function)

def helper_calls(context: FileContext, function: cst.FunctionDef) -> List[cst.Call]:
    """The calls ``name(...)`` of a module-level function in this module, at module level
    and inside functions (where no local of that name shadows it: a def or a binding)."""
    name = function.name.value
    found: List[cst.Call] = []
    stack: List[cst.CSTNode] = [context.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            found.append(node)
        if isinstance(node, (cst.FunctionDef, cst.Lambda)) and node is not function and _shadows(node, name):
            continue
        stack.extend(child_nodes(node))
    return found


def _shadows(function: cst.CSTNode, name: str) -> bool:
    """``function`` binds ``name`` itself: a parameter, or a statement of its body (an
    assignment, a loop target, an import ``as`` it, a nested ``def``)."""
    params = function.params  # type: ignore[attr-defined]
    every = (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg)
    if any(isinstance(p, cst.Param) and p.name.value == name for p in every):
        return True
    return binds(function.body, name)  # type: ignore[attr-defined]

def shuffled_by_callers(context: FileContext, arg: Optional[cst.Arg], ancestors: Path) -> bool:
    """``shuffle=shuffle``, a parameter of the module-level helper the call stands in,
    that every call of the helper in this module passes as ``True`` (by keyword)."""
    helper = _returned_by_any(context, ancestors)
    if arg is None or helper is None or not isinstance(arg.value, cst.Name):
        return False
    name = arg.value.value
    if name not in [p.name.value for p in helper.params.params]:
        return False
    calls = helper_calls(context, helper)
    if not calls:
        return False
    for call in calls:
        passed = argument(call, name, None)
        if passed.value is not True:
            return False
    return True

def shuffling_calls(context: FileContext, arg: Optional[cst.Arg], ancestors: Path) -> Optional[FrozenSet[int]]:
    """``shuffle=is_train``, a parameter of the module-level helper the call stands in,
    that some calls of the helper in this module pass as ``True`` and others not (a
    training loader and an evaluation one from one builder): the ids of the calls that
    shuffle, whose loaders are the ones to follow; None when no call passes ``True`` or
    the parameter is read some other way."""
    helper = _returned_by_any(context, ancestors)
    if arg is None or helper is None or not isinstance(arg.value, cst.Name):
        return None
    params = [p.name.value for p in helper.params.params]
    name = arg.value.value
    if name not in params or any(p.name.value == name for p in helper.params.kwonly_params):
        return None
    found = frozenset(id(c) for c in helper_calls(context, helper) if argument(c, name, params.index(name)).value is True)
    return found or None


def through_any(creators: Tuple[Path, ...], calls: FrozenSet[int]) -> bool:
    """A loader's trail ran through one of ``calls`` (the helper calls that returned it)."""
    return any(creator and id(creator[-1]) in calls for creator in creators)


def _returned_by_any(context: FileContext, ancestors: Path) -> Optional[cst.FunctionDef]:
    function = next((a for a in reversed(ancestors) if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
    if isinstance(function, cst.FunctionDef) and any(a is function for a in context.module.body):
        return function
    return None


# -- a sampler packed into a dict of loader arguments a helper returns (TPF105) --------
@dataclass(frozen=True)
class Packed:
    """``kwargs["sampler"] = DistributedSampler(...)`` in a module-level function that
    returns ``kwargs``: callers elsewhere unpack it into a loader (``DataLoader(ds,
    **kwargs)``). ``knob``: how ``shuffle`` depends on the caller (None: it always shuffles;
    ``(param, None)``: it is that parameter; ``(param, literal)``: ``param == literal``)."""

    name: str
    function: cst.FunctionDef
    knob: Optional[Tuple[str, object]]


def packed_into(context: FileContext, call: cst.Call, ancestors: Path, shuffle: Optional[cst.Arg]) -> Optional[Packed]:
    """The ``Packed`` the sampler call is, or None (also when ``shuffle`` is not known)."""
    parent = ancestors[-1] if ancestors else None
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or parent.value is not call:
        return None
    target = parent.targets[0].target
    if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name) or _key(target) != "sampler":
        return None
    function = _returned_by_any(context, ancestors)
    if function is None or len(context.fact(defs_by_name).get(function.name.value, [])) != 1:
        return None
    returns = list(own_returns(function.body))
    if not returns or any(not isinstance(r.value, cst.Name) or r.value.value != target.value.value for r in returns):
        return None
    knob = _knob(shuffle, [p.name.value for p in function.params.params])
    if knob is False:
        return None
    return Packed(function.name.value, function, knob)  # type: ignore[arg-type]


def _key(subscript: cst.Subscript) -> Optional[str]:
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    index = subscript.slice[0].slice.value
    return index.evaluated_value if isinstance(index, cst.SimpleString) else None  # type: ignore[return-value]


def _knob(shuffle: Optional[cst.Arg], params: List[str]):
    """None (shuffles), ``(param, None)``, ``(param, literal)``; False: not shuffled or not known."""
    if shuffle is None:
        return None
    value = shuffle.value
    if isinstance(value, cst.Name) and value.value == "True":
        return None
    if isinstance(value, cst.Name) and value.value in params:
        return (value.value, None)
    if isinstance(value, cst.Comparison) and len(value.comparisons) == 1 and isinstance(value.comparisons[0].operator, cst.Equal):
        left, right = value.left, value.comparisons[0].comparator
        if isinstance(left, cst.SimpleString):
            left, right = right, left
        if isinstance(left, cst.Name) and left.value in params and isinstance(right, cst.SimpleString):
            return (left.value, right.evaluated_value)
    return False
