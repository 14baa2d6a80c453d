"""The module walk that records every DataLoader call, the names bound to it and where loaders are iterated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.scope import target_leaves
from ...analysis.walk import child_nodes
from ...context import FileContext
from .loader_args import _LOOPS, _SCOPES, DATALOADER, LoaderArgs, Path, loader_args
from .once_guards import built_once_in

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
    prepared: bool = False  # walked as ``accelerator.prepare``'s loader: Accelerate sets the sampler's epoch

    @property
    def reiterated(self) -> bool:
        """Iterated in a loop that does not also build the loader anew each time round."""
        return bool(self.epoch_loops)

    @property
    def epoch_loops(self) -> Tuple[cst.CSTNode, ...]:
        """The loops around the reference that do not build the loader anew each time round
        (one that builds it once, under a one-shot flag, still walks it every epoch after)."""
        return tuple(loop for loop in self.loops if all(not _contains(path, loop) or built_once_in(path, loop) for path in self.creators))

    def through(self, loops: Sequence[cst.CSTNode], creator: Optional[Path] = None) -> "Source":
        creators = self.creators + ((creator,) if creator is not None else ())
        return Source(self.site, self.loops + tuple(loops), creators, self.prepared)


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
    """What the TPF103/TPF104/TPF105 rules read, keyed by ``id`` of nodes of the parsed module."""

    sites: Dict[int, LoaderSite] = field(default_factory=dict)
    reiterated: Set[int] = field(default_factory=set)
    # id(DataLoader call) -> each pass over it in an epoch loop of this module: the
    # iterating node's ancestors (the node last), the epoch loops around it and the
    # ancestors of the calls that returned it, each ending with the call (TPF105).
    passes: Dict[int, List[Tuple[Path, Tuple[cst.CSTNode, ...], Tuple[Path, ...]]]] = field(default_factory=dict)
    # The resolver the facts were found with (a LoaderSourceResolver), for later questions.
    resolver: Optional[object] = None


_RECORDED = frozenset(
    {cst.Call, cst.For, cst.CompFor, cst.FunctionDef, cst.Return, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.From, cst.WithItem}
)


class LoaderSiteRecorder:
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
        # (id(scope node), name) -> each call a tuple assignment unpacks into the name, the
        # name's position and the assignment's ancestors
        self.unpacked: Dict[Tuple[int, str], List[Tuple[cst.Call, int, Path]]] = {}
        # (id(scope node), name) -> each call a `with CALL as name` enters
        self.entered: Dict[Tuple[int, str], List[cst.Call]] = {}

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
            elif kind is cst.WithItem:
                self._entered(node, path)  # type: ignore[arg-type]
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
            if self.context.qualname(func, scope, (*path, node)) == DATALOADER:
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

    def _entered(self, node: cst.WithItem, path: Path) -> None:
        """``with tqdm(loader) as bar``: the call entered and the name it binds."""
        target = node.asname.name if node.asname is not None else None
        if isinstance(target, cst.Name) and isinstance(node.item, cst.Call):
            self.value_paths[id(node.item)] = path + (node,)
            scope_node = next((n for n in reversed(path) if isinstance(n, _SCOPES)), path[0])
            self.entered.setdefault((id(scope_node), target.value), []).append(node.item)

    def _unpacking(self, target: cst.BaseExpression, value: cst.Call, path: Path) -> None:
        elements = target.elements  # type: ignore[attr-defined]
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return
        scope_node = next((n for n in reversed(path) if isinstance(n, _SCOPES)), path[0])
        for index, element in enumerate(elements):
            if isinstance(element.value, cst.Name):
                self.unpacked.setdefault((id(scope_node), element.value.value), []).append((value, index, path))


def _may_name_dataloader(func: cst.BaseExpression) -> bool:
    """Cheap pre-check before the qualified-name lookup: aliases keep the module path."""
    name = func.value if isinstance(func, cst.Name) else func.attr.value  # type: ignore[attr-defined]
    return isinstance(func, cst.Name) or name == "DataLoader"


def _is_next_call(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "next" and bool(call.args)


def _self_attrs(target: cst.BaseExpression) -> Iterator[Tuple[str, bool]]:
    """``self.x`` attributes a target binds, and whether directly (not by unpacking)."""
    return (
        (leaf.attr.value, direct)
        for leaf, direct in target_leaves(target)
        if isinstance(leaf, cst.Attribute) and isinstance(leaf.value, cst.Name) and leaf.value.value == "self"
    )


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
