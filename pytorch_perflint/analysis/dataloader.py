"""Facts about ``torch.utils.data.DataLoader`` that the TPF1xx rules share.

* ``loader_args``: what a DataLoader call passes for the parameters the rules care about,
  read from keywords, positions and known ``**`` dicts (UNKNOWN where it cannot be known).
* ``loader_facts``: one walk of the module (only in files that mention DataLoader) that finds
  every DataLoader call and follows each loader to the places it is iterated: through names
  bound once, ``self.attr`` set once in a class, parameters of same-module functions whose
  every call passes a loader, helpers that return one (or a tuple the caller unpacks),
  dicts and lists of loaders (``loaders[phase]``), and ``enumerate``/``tqdm``/``iter``.
  From that it knows which loaders are iterated again and again (inside an outer loop that
  did not create them: TPF103) and which ``.to(device)``/``.cuda()`` calls copy a batch taken
  straight from a loader known to pin memory (TPF104).

Anything that cannot be followed (a wrapper such as ``accelerator.prepare``, a name bound
twice, a call with ``*args``) ends the trail, so the rules stay silent there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..rule import FileContext
from .calls import Argument, argument
from .scope import Scope, dotted_name
from .values import UNKNOWN, Lookup
from .walk import child_nodes

DATALOADER = "torch.utils.data.DataLoader"
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
#            pin_memory, drop_last, timeout, worker_init_fn, multiprocessing_context,
#            generator, *, prefetch_factor, persistent_workers, pin_memory_device)
NUM_WORKERS_POSITION = 5
COLLATE_FN_POSITION = 6
PIN_MEMORY_POSITION = 7

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


def _bound(expr: cst.BaseExpression, lookup: Optional[Lookup]) -> cst.BaseExpression:
    if isinstance(expr, cst.Name) and lookup is not None:
        return lookup(expr.value) or expr
    return expr


# -- the module walk ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoaderSite:
    """One DataLoader call, where it stands, and what it passes."""

    call: cst.Call
    ancestors: Path
    args: LoaderArgs


@dataclass(frozen=True)
class Source:
    """A loader a reference may hold, with the loops around the reference on the way to it
    and the ancestors of every node that (re)creates it (the DataLoader call, helper calls
    that return it)."""

    site: LoaderSite
    loops: Tuple[cst.CSTNode, ...]
    creators: Tuple[Path, ...]

    @property
    def reiterated(self) -> bool:
        """Iterated in a loop that does not also build the loader anew each time round."""
        return any(all(not _contains(path, loop) for path in self.creators) for loop in self.loops)

    def through(self, loops: Sequence[cst.CSTNode], creator: Optional[Path] = None) -> "Source":
        creators = self.creators + ((creator,) if creator is not None else ())
        return Source(self.site, self.loops + tuple(loops), creators)


@dataclass(frozen=True)
class Resolution:
    """The loaders an expression may hold; ``complete`` when no path was lost on the way."""

    sources: Tuple[Source, ...] = ()
    complete: bool = False

    @property
    def known(self) -> bool:
        return self.complete and bool(self.sources)


_NOTHING = Resolution()


@dataclass
class LoaderFacts:
    """What the TPF103/TPF104 rules read, keyed by ``id`` of nodes of the parsed module."""

    sites: Dict[int, LoaderSite] = field(default_factory=dict)
    reiterated: Set[int] = field(default_factory=set)
    blocking_copies: Dict[int, cst.Call] = field(default_factory=dict)


_RECORDED = frozenset(
    {cst.Call, cst.For, cst.CompFor, cst.FunctionDef, cst.Return, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.From}
)


class _Collector:
    """Records, with their ancestors, the nodes the resolution needs."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.stack: List[cst.CSTNode] = []
        self.sites: Dict[int, LoaderSite] = {}
        self.fors: List[Tuple[cst.For, Path]] = []
        self.comp_fors: List[Tuple[cst.CompFor, Path]] = []
        self.iter_calls: List[Tuple[cst.Call, Path]] = []
        self.yield_froms: List[Tuple[cst.From, Path]] = []  # `yield from loader`
        self.next_assigns: List[Tuple[cst.Assign, Path]] = []
        self.functions: Dict[str, List[Tuple[cst.FunctionDef, Path]]] = {}
        self.name_calls: Dict[str, List[Tuple[cst.Call, Path]]] = {}
        self.self_calls: Dict[str, List[Tuple[cst.Call, Path]]] = {}
        # (id(class), attr) -> values assigned to self.attr (None: not a plain assignment)
        self.self_assigns: Dict[Tuple[int, str], List[Tuple[Optional[cst.BaseExpression], Path]]] = {}
        self.value_paths: Dict[int, Path] = {}
        self.returns: Dict[int, List[Tuple[Optional[cst.BaseExpression], Path]]] = {}
        # (id(scope node), name) -> the call a tuple assignment unpacks, the name's position
        self.unpacked: Dict[Tuple[int, str], Tuple[cst.Call, int, Path]] = {}

    def walk(self, node: cst.CSTNode) -> None:
        """Depth-first over the nodes that can matter, keeping the ancestor stack; faster
        than ``module.visit`` (which rebuilds every node) by skipping whitespace and commas."""
        self.on_visit(node)
        for child in child_nodes(node):
            self.walk(child)
        self.stack.pop()

    def on_visit(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind in _RECORDED:
            path = tuple(self.stack)
            if kind is cst.Call:
                self._call(node, path)  # type: ignore[arg-type]
            elif kind is cst.For:
                self.fors.append((node, path))  # type: ignore[arg-type]
            elif kind is cst.CompFor:
                self.comp_fors.append((node, path))  # type: ignore[arg-type]
            elif kind is cst.From:
                if path and isinstance(path[-1], cst.Yield):
                    self.yield_froms.append((node, path))  # type: ignore[arg-type]
            elif kind is cst.FunctionDef:
                self.functions.setdefault(node.name.value, []).append((node, path))  # type: ignore[attr-defined]
            elif kind is cst.Return:
                function = _enclosing_function(path)
                if function is not None:
                    value = node.value  # type: ignore[attr-defined]
                    self.returns.setdefault(id(function), []).append((value, path + (node,)))
            else:
                self._assign(node, path)
        self.stack.append(node)

    def _call(self, node: cst.Call, path: Path) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            self.name_calls.setdefault(func.value, []).append((node, path))
            if func.value == "iter" and node.args:
                self.iter_calls.append((node, path))
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.self_calls.setdefault(func.attr.value, []).append((node, path))
        if isinstance(func, (cst.Name, cst.Attribute)) and _may_name_dataloader(func):
            scope = self.context.scope_for(node, path)
            if self.context.qualname(func, scope) == DATALOADER:
                args = loader_args(node, scope.lookup_value, self.context.source)
                self.sites[id(node)] = LoaderSite(node, path, args)

    def _assign(self, node: cst.CSTNode, path: Path) -> None:
        value = getattr(node, "value", None)
        own = path + (node,)
        if value is not None:
            self.value_paths[id(value)] = own
        targets: List[cst.BaseExpression]
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
            if len(node.targets) == 1 and isinstance(value, cst.Call) and _is_next_call(value):
                self.next_assigns.append((node, path))
            if len(targets) == 1 and isinstance(targets[0], (cst.Tuple, cst.List)) and isinstance(value, cst.Call):
                self._unpacking(targets[0], value, path)
        else:
            targets = [node.target]  # type: ignore[attr-defined]
        plain = isinstance(node, (cst.Assign, cst.AnnAssign)) and len(targets) == 1
        cls = _method_class(path)
        if cls is None:
            return
        for target in targets:
            for attr, direct in _self_attrs(target):
                entry = value if plain and direct else None
                self.self_assigns.setdefault((id(cls), attr), []).append((entry, own))

    def _unpacking(self, target: cst.BaseExpression, value: cst.Call, path: Path) -> None:
        elements = target.elements  # type: ignore[attr-defined]
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return
        scope_node = next((n for n in reversed(path) if isinstance(n, _SCOPES)), path[0])
        for index, element in enumerate(elements):
            if isinstance(element.value, cst.Name):
                self.unpacked[(id(scope_node), element.value.value)] = (value, index, path)


def _may_name_dataloader(func: cst.BaseExpression) -> bool:
    """Cheap pre-check before the qualified-name lookup: aliases keep the module path."""
    name = func.value if isinstance(func, cst.Name) else func.attr.value  # type: ignore[attr-defined]
    return isinstance(func, cst.Name) or name == "DataLoader"


def _is_next_call(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "next" and bool(call.args)


def _self_attrs(target: cst.BaseExpression) -> Iterator[Tuple[str, bool]]:
    """``self.x`` attributes a target binds, and whether directly (not by unpacking)."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        yield target.attr.value, True
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            for attr, _ in _self_attrs(element.value):
                yield attr, False
    elif isinstance(target, cst.StarredElement):
        for attr, _ in _self_attrs(target.value):
            yield attr, False


def _enclosing_function(path: Path) -> Optional[cst.FunctionDef]:
    for node in reversed(path):
        if isinstance(node, cst.FunctionDef):
            return node
        if isinstance(node, (cst.Lambda, cst.ClassDef)):
            return None
    return None


def _method_class(path: Path) -> Optional[cst.ClassDef]:
    """The class whose method ``path`` lies in (directly, not in a nested function)."""
    for index in range(len(path) - 1, -1, -1):
        node = path[index]
        if isinstance(node, cst.FunctionDef):
            return _class_of_def(path[:index])
        if isinstance(node, (cst.Lambda, cst.ClassDef)):
            return None
    return None


def _class_of_def(def_path: Path) -> Optional[cst.ClassDef]:
    """The class a def at ``def_path`` is a method of."""
    if len(def_path) >= 2 and isinstance(def_path[-2], cst.ClassDef):
        return def_path[-2]  # type: ignore[return-value]
    return None


def _contains(path: Path, node: cst.CSTNode) -> bool:
    return any(a is node for a in path)


def enclosing_loops(path: Path) -> Tuple[cst.CSTNode, ...]:
    """Loops whose body holds the last node of ``path``, up to the enclosing function."""
    loops: List[cst.CSTNode] = []
    for index in range(len(path) - 2, -1, -1):
        node = path[index]
        if isinstance(node, _SCOPES):
            break
        if isinstance(node, _LOOPS) and path[index + 1] is node.body:
            loops.append(node)
    return tuple(loops)


class _Resolver:
    """Follows an expression back to the DataLoader calls it may hold."""

    MAX_DEPTH = 4

    def __init__(self, context: FileContext, collector: _Collector) -> None:
        self.context = context
        self.c = collector

    def resolve(self, expr: cst.BaseExpression, path: Path, depth: int = 0) -> Resolution:
        if depth > self.MAX_DEPTH:
            return _NOTHING
        loops = enclosing_loops(path + (expr,))
        if isinstance(expr, cst.Call):
            site = self.c.sites.get(id(expr))
            if site is not None:
                return Resolution((Source(site, loops, (site.ancestors,)),), True)
            inner = self.pass_through(expr, path)
            if inner is not None:
                arg, _ = inner
                return self.resolve(arg.value, path + (expr, arg), depth)
            return self.returned(expr, path, loops, depth)
        if isinstance(expr, cst.Name):
            return self.name(expr, path, loops, depth)
        if isinstance(expr, cst.Attribute):
            return self.self_attribute(expr, path, loops, depth)
        if isinstance(expr, cst.Subscript):
            return self.subscript(expr, path, loops, depth)
        if isinstance(expr, cst.IfExp):  # `tqdm(loader) if verbose else loader`
            return self.union([(expr.body, path + (expr,)), (expr.orelse, path + (expr,))], depth)
        return _NOTHING

    def union(self, parts: Sequence[Tuple[cst.BaseExpression, Path]], depth: int) -> Resolution:
        """The loaders any of ``parts`` may hold; complete when every part is."""
        sources: List[Source] = []
        complete = bool(parts)
        for part, part_path in parts:
            inner = self.resolve(part, part_path, depth + 1)
            complete = complete and inner.complete
            sources.extend(inner.sources)
        return Resolution(tuple(sources), complete)

    def branch_values(self, name: str, scope: Scope) -> Optional[List[Tuple[cst.BaseExpression, Path]]]:
        """``if c: loader = A(...) else: loader = B(...)``: the values of a name that its scope
        binds only in plain assignments on mutually exclusive branches of one ``if``; or
        only to ``iter(...)`` calls, wherever (an iterator re-created when it runs out:
        whichever binding is live, it walks one of those loaders)."""
        while scope.is_class and scope.parent is not None:
            scope = scope.parent
        values = scope.bindings.get(name)
        if not values or len(values) < 2 or any(v is None for v in values):
            return None
        if name in scope.imports or name in scope.declared_outer or name in scope.mutated:
            return None
        found: List[Tuple[cst.BaseExpression, Path]] = []
        for value in values:
            value_path = self.c.value_paths.get(id(value))  # type: ignore[arg-type]
            if value_path is None:
                return None
            found.append((value, value_path))  # type: ignore[arg-type]
        if all(self._is_iter_call(value, path) for value, path in found):
            return found
        for index, (_, first) in enumerate(found):
            if not all(_exclusive(first, other) for _, other in found[index + 1:]):
                return None
        return found

    def subscript(self, expr: cst.Subscript, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        """``loaders[phase]`` where ``loaders`` holds loaders (a dict, a dict comprehension,
        a list). A loop over the keys (``for phase in ...``) is not an epoch loop."""
        keys = {n.value for element in expr.slice for n in _names_in(element)}
        epochs = tuple(
            loop for loop in loops if not (isinstance(loop, cst.For) and keys & set(_bound_names(loop.target)))
        )
        inner = self.elements(expr.value, path + (expr,), depth + 1)
        return self._with_caller_loops(inner, path, epochs)

    def elements(self, expr: cst.BaseExpression, path: Path, depth: int) -> Resolution:
        """The loaders a container expression holds."""
        if depth > self.MAX_DEPTH:
            return _NOTHING
        if isinstance(expr, (cst.Name, cst.Attribute)):
            if isinstance(expr, cst.Attribute):
                assigned = self._self_assignment(expr, path)
                if assigned is None:
                    return _NOTHING
                value, value_path = assigned
            else:
                value = self.context.scope_for(expr, path).lookup_value(expr.value)
                value_path = self.c.value_paths.get(id(value)) if value is not None else None
                if value is None or value_path is None:
                    return _NOTHING
            return self.elements(value, value_path, depth + 1)
        parts: List[Tuple[cst.BaseExpression, Path]] = []
        if isinstance(expr, cst.DictComp):
            parts.append((expr.value, path + (expr,)))
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if not isinstance(element, cst.DictElement):
                    return _NOTHING
                parts.append((element.value, path + (expr, element)))
        elif isinstance(expr, (cst.List, cst.Tuple)):
            for item in expr.elements:
                if isinstance(item, cst.StarredElement):
                    return _NOTHING
                parts.append((item.value, path + (expr, item)))
        else:
            return _NOTHING
        return self.union(parts, depth)

    def _self_assignment(self, expr: cst.Attribute, path: Path) -> Optional[Tuple[cst.BaseExpression, Path]]:
        """The one value ``self.attr`` is assigned in its class, if it is assigned once."""
        if not (isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return None
        cls = _method_class(path)
        if cls is None:
            return None
        assigned = self.c.self_assigns.get((id(cls), expr.attr.value), [])
        if len(assigned) != 1 or assigned[0][0] is None:
            return None
        return assigned[0]  # type: ignore[return-value]

    def pass_through(self, call: cst.Call, path: Path) -> Optional[Tuple[cst.Arg, bool]]:
        """The iterable that ``enumerate(x)``, ``tqdm(x)`` or ``iter(x)`` walks, and whether
        the wrapper numbers the items."""
        if not call.args or call.args[0].star or call.args[0].keyword is not None:
            return None
        func = call.func
        if isinstance(func, cst.Name) and func.value in ("enumerate", "iter"):
            if self._bound(func.value, call, path):
                return None  # a local or imported `enumerate` is not the builtin
            return call.args[0], func.value == "enumerate"
        if self.context.qualname(func, self.context.scope_for(call, path)) in _TQDM:
            return call.args[0], False
        return None

    def _is_iter_call(self, value: cst.BaseExpression, path: Path) -> bool:
        """A call of the builtin ``iter`` on one argument (``pass_through`` checks the rest)."""
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "iter"
            and self.pass_through(value, path) is not None
        )

    def _bound(self, name: str, node: cst.CSTNode, path: Path) -> bool:
        scope = self.context.scope_for(node, path)
        while scope is not None:
            if name in scope.bindings or name in scope.imports:
                return True
            scope = scope.parent
        return False

    def name(self, expr: cst.Name, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        scope = self.context.scope_for(expr, path)
        value = scope.lookup_value(expr.value)
        if value is not None:
            value_path = self.c.value_paths.get(id(value))
            if value_path is None:
                return _NOTHING
            inner = self.resolve(value, value_path, depth + 1)
            return self._with_caller_loops(inner, path, loops)
        branches = self.branch_values(expr.value, scope)
        if branches is not None:
            return self._with_caller_loops(self.union(branches, depth), path, loops)
        unpacked = self.unpacked(expr.value, scope)
        if unpacked is not None:
            call, index, call_path = unpacked
            inner = self.returned(call, call_path, (), depth + 1, index)
            return self._with_caller_loops(inner, path, loops)
        function = _enclosing_function(path)
        if function is None or scope.node is not function:
            return _NOTHING
        if scope.bindings.get(expr.value) != [None]:
            return _NOTHING  # rebound somewhere in the function, or not a parameter
        return self.parameter(function, expr.value, loops, depth)

    def unpacked(self, name: str, scope: Scope) -> Optional[Tuple[cst.Call, int, Path]]:
        """``train_loader, val_loader = make_loaders()``: the call and the position, when
        that statement is the name's only binding in the scope that binds it."""
        current: Optional[Scope] = scope
        first = True
        while current is not None:
            if current.is_class and not first:
                current = current.parent
                continue
            first = False
            if name in current.bindings or name in current.imports or name in current.declared_outer:
                if current.bindings.get(name) != [None] or name in current.imports:
                    return None
                return self.c.unpacked.get((id(current.node), name))
            current = current.parent
        return None

    def _function_path(self, function: cst.FunctionDef) -> Optional[Path]:
        for node, path in self.c.functions.get(function.name.value, []):
            if node is function:
                return path
        return None

    def parameter(self, function: cst.FunctionDef, name: str, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        """A parameter holds the loaders that every call of the function in this module passes."""
        sites = self.call_sites(function)
        if sites is None:
            return _NOTHING
        calls, positional = sites
        keyword_only = {p.name.value for p in function.params.kwonly_params}
        if name not in positional and name not in keyword_only:
            return _NOTHING
        index = positional.index(name) if name in positional else None
        sources: List[Source] = []
        complete = True
        for call, call_path in calls:
            arg = argument_for(call, name, index)
            if arg is None:
                complete = False
                continue
            inner = self.resolve(arg.value, call_path + (call, arg), depth + 1)
            complete = complete and inner.complete
            sources.extend(s.through(loops) for s in inner.sources)
        return Resolution(tuple(sources), complete)

    def call_sites(self, function: cst.FunctionDef) -> Optional[Tuple[List[Tuple[cst.Call, Path]], List[str]]]:
        """Every call of a module-level function (``f(...)``) or a method (``self.f(...)``)
        in this module, and the names of the parameters that calls fill by position."""
        def_path = self._function_path(function)
        if def_path is None:
            return None
        cls = _class_of_def(def_path)
        positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        if cls is not None:
            if any(_decorator_name(d) in ("staticmethod", "classmethod") for d in function.decorators):
                return None
            positional = positional[1:]
            calls = [(c, p) for c, p in self.c.self_calls.get(function.name.value, []) if _method_class(p) is cls]
        elif len(def_path) == 1 and self._unique_module_def(function.name.value):
            calls = [(c, p) for c, p in self.c.name_calls.get(function.name.value, []) if self._calls_module_def(c, p)]
        else:
            return None
        return (calls, positional) if calls else None

    def _calls_module_def(self, call: cst.Call, path: Path) -> bool:
        """``f(...)`` names the module-level def ``f`` (no local shadows it)."""
        name = call.func.value  # type: ignore[attr-defined]
        scope = self.context.scope_for(call, path)
        while scope.parent is not None:
            if not scope.is_class and (name in scope.bindings or name in scope.imports):
                return False
            scope = scope.parent
        return scope.bindings.get(name) == [None] and name not in scope.imports

    def returned(
        self, call: cst.Call, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int, index: Optional[int] = None
    ) -> Resolution:
        """``make_loader(...)``: the loaders a same-module helper returns (element ``index``
        of the tuple it returns, when the caller unpacks it)."""
        func = call.func
        if not isinstance(func, cst.Name) or not self._calls_module_def(call, path):
            return _NOTHING
        defs = [d for d, p in self.c.functions.get(func.value, []) if len(p) == 1]
        if len(defs) != 1:
            return _NOTHING
        returns = self.c.returns.get(id(defs[0]), [])
        if not returns:
            return _NOTHING
        sources: List[Source] = []
        complete = True
        for value, value_path in returns:
            if value is not None and index is not None:
                value, value_path = _element(value, index, value_path)
            if value is None:
                complete = False
                continue
            inner = self.resolve(value, value_path, depth + 1)
            complete = complete and inner.complete
            sources.extend(s.through(loops, creator=path) for s in inner.sources)
        return Resolution(tuple(sources), complete)

    def self_attribute(self, expr: cst.Attribute, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        """``self.loader`` assigned exactly once in the class, to a loader."""
        assigned = self._self_assignment(expr, path)
        if assigned is None:
            return _NOTHING
        value, value_path = assigned
        inner = self.resolve(value, value_path, depth + 1)
        return self._with_caller_loops(inner, path, loops)

    def _with_caller_loops(self, inner: Resolution, path: Path, loops: Tuple[cst.CSTNode, ...]) -> Resolution:
        """Add the loops around the reference, and around the calls of its function when the
        loader was built outside that function (else each call builds a new one)."""
        function = _enclosing_function(path)
        callers: Optional[Tuple[cst.CSTNode, ...]] = None
        sources = []
        for source in inner.sources:
            if function is not None and all(not _contains(c, function) for c in source.creators):
                if callers is None:
                    callers = self.caller_loops(path)
                sources.append(source.through(loops + callers))
            else:
                sources.append(source.through(loops))
        return Resolution(tuple(sources), inner.complete)

    def caller_loops(self, path: Path, depth: int = 0) -> Tuple[cst.CSTNode, ...]:
        """Loops around the calls of the function that ``path`` lies in (two levels up):
        a ``train()`` that reads a loader bound outside it runs once per epoch when its
        caller calls it in a loop."""
        function = _enclosing_function(path)
        if function is None or depth > 1:
            return ()
        def_path = self._function_path(function)
        if def_path is None:
            return ()
        cls = _class_of_def(def_path)
        if cls is not None:
            calls = [(c, p) for c, p in self.c.self_calls.get(function.name.value, []) if _method_class(p) is cls]
        elif len(def_path) == 1 and self._unique_module_def(function.name.value):
            calls = [(c, p) for c, p in self.c.name_calls.get(function.name.value, []) if self._calls_module_def(c, p)]
        else:
            return ()
        loops: List[cst.CSTNode] = []
        for call, call_path in calls:
            loops.extend(enclosing_loops(call_path + (call,)))
            loops.extend(self.caller_loops(call_path, depth + 1))
        return tuple(loops)

    def _unique_module_def(self, name: str) -> bool:
        return sum(1 for _, path in self.c.functions.get(name, []) if len(path) == 1) == 1


def _exclusive(first: Path, second: Path) -> bool:
    """Whether two nodes (given by their ancestors) stand in different branches of one
    ``if``/``elif``/``else``, so that at most one of them runs."""
    for index, (a, b) in enumerate(zip(first, second)):
        if a is b:
            continue
        parent = first[index - 1] if index else None
        if not isinstance(parent, cst.If) or parent.orelse is None:
            return False
        branches = (parent.body, parent.orelse)
        return any(a is x for x in branches) and any(b is x for x in branches)
    return False


def _element(value: cst.BaseExpression, index: int, path: Path) -> Tuple[Optional[cst.BaseExpression], Path]:
    """Element ``index`` of a returned tuple display (``return train, val``)."""
    if not isinstance(value, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None, path
    if index >= len(value.elements):
        return None, path
    element = value.elements[index]
    return element.value, path + (value, element)


def _names_in(node: cst.CSTNode) -> Iterator[cst.Name]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            yield current
        stack.extend(child_nodes(current))


def _bound_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value)


def _decorator_name(decorator: cst.Decorator) -> Optional[str]:
    return dotted_name(decorator.decorator) if isinstance(decorator.decorator, (cst.Name, cst.Attribute)) else None


def argument_for(call: cst.Call, name: str, index: Optional[int]) -> Optional[cst.Arg]:
    if any(arg.star for arg in call.args):
        return None
    position = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg
            continue
        if index is not None and position == index:
            return arg
        position += 1
    return None


def loader_facts(context: FileContext) -> LoaderFacts:
    """Walk the module once and derive the TPF103/TPF104 facts."""
    if "DataLoader" not in context.source:
        return LoaderFacts()
    collector = _Collector(context)
    collector.walk(context.module)
    facts = LoaderFacts(sites=collector.sites)
    if not collector.sites:
        return facts
    resolver = _Resolver(context, collector)
    _find_reiterated(resolver, facts)
    if any(site.args.pinned for site in collector.sites.values()):
        from .pinned_batches import find_blocking_copies

        find_blocking_copies(context, resolver, collector, facts)
    return facts


def _iteration_sites(collector: _Collector) -> Iterable[Tuple[cst.BaseExpression, Path]]:
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


def _find_reiterated(resolver: _Resolver, facts: LoaderFacts) -> None:
    for expr, path in _iteration_sites(resolver.c):
        for source in resolver.resolve(expr, path).sources:
            if source.reiterated:
                facts.reiterated.add(id(source.site.call))
