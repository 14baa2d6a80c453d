"""Following an iterated expression back to the DataLoader it comes from: names, self attributes, parameters, helpers, containers."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import Scope, declared_global, dotted_name, target_names
from ...analysis.walk import child_nodes, exclusive_branches
from ...context import FileContext
from ..dead_arms import unreached_by
from .reaching_loaders import entered_around, rebound_values
from .iterable_wrappers import walked_argument
from .prepared_loaders import prepared_binding, prepared_parameter
from .loader_args import _TQDM, Path
from .loader_sites import (
    _NOTHING,
    LoaderSiteRecorder,
    Resolution,
    Source,
    _class_of_def,
    _contains,
    _enclosing_function,
    _method_class,
    enclosing_loops,
)


class LoaderSourceResolver:
    """Follows an expression back to the DataLoader calls it may hold."""

    MAX_DEPTH = 8  # a name, its `tqdm(x) if ... else x`, a helper or method that returns it, its own name: each a step

    def __init__(self, context: FileContext, collector: LoaderSiteRecorder) -> None:
        self.context = context
        self.recorded = collector

    def resolve(self, expr: cst.BaseExpression, path: Path, depth: int = 0) -> Resolution:
        if depth > self.MAX_DEPTH:
            return _NOTHING
        loops = enclosing_loops(path + (expr,))
        if isinstance(expr, cst.Call):
            site = self.recorded.sites.get(id(expr))
            if site is not None:
                return Resolution((Source(site, loops, (site.ancestors,)),), True)
            inner = self.pass_through(expr, path)
            if inner is not None:
                arg, _ = inner
                return self.resolve(arg.value, path + (expr, arg), depth)
            zipped = self.zipped(expr, path)
            if zipped is not None:  # `zip(train_in, train_out)` walks each of them
                return self.union([(arg.value, path + (expr, arg)) for arg in zipped], depth)
            wrapped = walked_argument(self.context, expr) if self.context.project is not None else None
            if wrapped is not None:  # `Staging(loader, device)`: a project iterable that walks it on each pass
                inner = self.resolve(wrapped.arg.value, path + (expr, wrapped.arg), depth + 1)
                walker = _walking_loop(path, expr) if wrapped.endless else None
                if walker is None:
                    return inner
                # `for b in Forever(loader)`: each round of the wrapper's endless loop is an epoch of this loop
                return Resolution(tuple(s.through((walker,)) for s in inner.sources), inner.complete)
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
        whichever binding is live, it walks one of those loaders). A function reading the
        name free (``def train(): for b in loader``) reads the bindings of the scope around
        it that binds it, unless some function rebinds it ``global``."""
        while scope.is_class and scope.parent is not None:
            scope = scope.parent
        binder = scope.binder(name)
        if binder is None or (binder[0] is not scope and binder[0].parent is None and declared_global(binder[0], name)):
            return None
        scope, values = binder
        if not values or len(values) < 2 or any(v is None for v in values):
            return None
        if name in scope.imports or name in scope.declared_outer or name in scope.mutated:
            return None
        found: List[Tuple[cst.BaseExpression, Path]] = []
        for value in values:
            value_path = self.recorded.value_paths.get(id(value))  # type: ignore[arg-type]
            if value_path is None:
                return None
            found.append((value, value_path))  # type: ignore[arg-type]
        if all(self._is_iter_call(value, path) for value, path in found):
            return found
        for index, (_, first) in enumerate(found):
            if not all(exclusive_branches(first, other) for _, other in found[index + 1:]):
                return None
        return found

    def subscript(self, expr: cst.Subscript, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        """``loaders[phase]`` where ``loaders`` holds loaders (a dict, a dict comprehension,
        a list). A loop over the keys (``for phase in ...``) is not an epoch loop."""
        keys = {n.value for element in expr.slice for n in _names_in(element)}
        epochs = tuple(
            loop for loop in loops if not (isinstance(loop, cst.For) and keys & set(target_names(loop.target)))
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
                value_path = self.recorded.value_paths.get(id(value)) if value is not None else None
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
        assigned = self.recorded.self_assigns.get((id(cls), expr.attr.value), [])
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

    def zipped(self, call: cst.Call, path: Path) -> Optional[List[cst.Arg]]:
        """The iterables the builtin ``zip`` walks together (each pass over the zip is a
        pass over every one of them); None for ``zip(*loaders)`` or another ``zip``."""
        func = call.func
        if not (isinstance(func, cst.Name) and func.value == "zip") or self._bound("zip", call, path):
            return None
        if any(arg.star for arg in call.args):
            return None
        args = [arg for arg in call.args if arg.keyword is None]
        return args or None

    def _is_iter_call(self, value: cst.BaseExpression, path: Path) -> bool:
        """A call of the builtin ``iter`` on one argument (``pass_through`` checks the rest)."""
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == "iter"
            and self.pass_through(value, path) is not None
        )

    def _bound(self, name: str, node: cst.CSTNode, path: Path) -> bool:
        return self.context.scope_for(node, path).binds_in_chain(name)

    def name(self, expr: cst.Name, path: Path, loops: Tuple[cst.CSTNode, ...], depth: int) -> Resolution:
        scope = self.context.scope_for(expr, path)
        value = scope.lookup_value(expr.value, same_object=True)  # which loader, not what it holds
        if value is None:
            value = self.progress_bar(expr.value, scope, path)
        if value is not None:
            value_path = self.recorded.value_paths.get(id(value))
            if value_path is None:
                return _NOTHING
            inner = self.resolve(value, value_path, depth + 1)
            return self._with_caller_loops(inner, path, loops)
        rewrapped = prepared_binding(self.context, self.recorded, expr.value, scope)
        if rewrapped is not None:  # `model, loader = accelerator.prepare(model, loader)`: the same loader
            inner = self.resolve(rewrapped[0], rewrapped[1], depth + 1)
            inner = Resolution(tuple(replace(s, prepared=True) for s in inner.sources), inner.complete)
            return self._with_caller_loops(inner, path, loops)
        rebound = rebound_values(self.recorded, expr, scope, path)
        if rebound is not None:  # `loader = Staged(loader)` after `loader = make_loader()`; an arm's rebinding
            return self._with_caller_loops(self.union(rebound, depth), path, loops)
        branches = self.branch_values(expr.value, scope)
        if branches is not None:
            return self._with_caller_loops(self.union(branches, depth), path, loops)
        unpacked = self.unpacked(expr.value, scope)
        if unpacked is not None:
            parts = [self.returned(call, call_path, (), depth + 1, index) for call, index, call_path in unpacked]
            inner = Resolution(tuple(s for part in parts for s in part.sources), all(part.complete for part in parts))
            return self._with_caller_loops(inner, path, loops)
        function = _enclosing_function(path)
        if function is None or scope.node is not function:
            return _NOTHING
        values = scope.bindings.get(expr.value)
        if prepared_parameter(self.context, self.recorded, expr.value, scope, function):  # `loader = accelerator.prepare(loader)`
            inner = self.parameter(function, expr.value, loops, depth)
            return Resolution(tuple(replace(s, prepared=True) for s in inner.sources), inner.complete)
        if values != [None] and not _reads_before_rebinding(values, path, loops):
            return _NOTHING  # rebound somewhere in the function, or not a parameter
        return self.parameter(function, expr.value, loops, depth)

    def progress_bar(self, name: str, scope: Scope, path: Path) -> Optional[cst.Call]:
        """``bar = tqdm(loader)`` (or ``with tqdm(loader) as bar``) bound once in its scope, whose ``bar.update()`` /
        ``bar.set_postfix(...)`` calls read as changes of the name: a bar's counter moves,
        the loader it walks stays the same."""
        found = scope.binder(name)
        if found is None:
            return None
        current, values = found
        value = values[0] if len(values) == 1 else None
        entered = self.recorded.entered.get((id(current.node), name), [])
        if values == [None] and len(entered) == 1:  # `with tqdm(loader) as bar`: the bar itself
            value = entered[0]
        around = entered_around(path, name) if current.node is scope.node and not declared_global(current, name) else None
        if around is not None:  # inside its `with` (one of several that bind the name)
            return around if isinstance(around, cst.Call) and self.context.qualname(around.func, current) in _TQDM else None
        if not isinstance(value, cst.Call) or self.context.qualname(value.func, current) not in _TQDM:
            return None
        return value if current.parent is not None else None

    def unpacked(self, name: str, scope: Scope) -> Optional[List[Tuple[cst.Call, int, Path]]]:
        """``train_loader, val_loader = make_loaders()``: the call and the position, when
        such statements are the name's only bindings in the scope that binds it, and when
        there are several, each stands on its own branch of one ``if``/``elif`` (``if
        cifar: a, b = cifar_loaders() elif stl: a, b = stl_loaders()``)."""
        for current in scope.visible():
            if name in current.bindings or name in current.imports or name in current.declared_outer:
                values = current.bindings.get(name)
                if not values or any(v is not None for v in values) or name in current.imports:
                    return None
                if name in current.declared_outer or name in current.mutated:
                    return None
                found = self.recorded.unpacked.get((id(current.node), name), [])
                if len(found) != len(values):
                    return None  # bound some other way too (a loop target, a with)
                for index, (_, _, first_path) in enumerate(found):
                    if not all(exclusive_branches(first_path, other) for _, _, other in found[index + 1:]):
                        return None
                return found
        return None

    def _function_path(self, function: cst.FunctionDef) -> Optional[Path]:
        for node, path in self.recorded.functions.get(function.name.value, []):
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
            calls = [(c, p) for c, p in self.recorded.self_calls.get(function.name.value, []) if _method_class(p) is cls]
        elif len(def_path) == 1 and self._unique_module_def(function.name.value):
            calls = [(c, p) for c, p in self.recorded.name_calls.get(function.name.value, []) if self._calls_module_def(c, p)]
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
        of the tuple it returns, when the caller unpacks it); ``self.make_loader(...)``: those
        the method of the caller's class returns. A helper of another module
        builds no site of this one: TPF103/TPF105 report only this module's calls."""
        func = call.func
        if _on_self(func):  # `self.make_loader(...)`: the method of the caller's own class
            cls = _method_class(path)
            defs = [d for d, p in self.recorded.functions.get(func.attr.value, []) if cls is not None and _class_of_def(p) is cls]  # type: ignore[attr-defined]
        elif not isinstance(func, cst.Name) or not self._calls_module_def(call, path):
            return _NOTHING  # another module's helper: its loaders are no sites of this module
        else:
            defs = [d for d, p in self.recorded.functions.get(func.value, []) if len(p) == 1]
        if len(defs) != 1:
            return _NOTHING
        returns = self.recorded.returns.get(id(defs[0]), [])
        if not returns:
            return _NOTHING
        sources: List[Source] = []
        complete = True
        for value, value_path in returns:
            if value is not None and index is not None:
                value, value_path = _element(value, index, value_path)
            if value is None or unreached_by(self.context, defs[0], call, (*value_path, value)):  # or in an arm this call never takes
                complete = complete and value is not None
                continue
            inner = self.resolve(value, value_path, depth + 1)
            complete = complete and inner.complete
            mine = [s for s in inner.sources if not unreached_by(self.context, defs[0], call, (*s.site.ancestors, s.site.call))]
            sources.extend(s.through(loops, creator=path + (call,)) for s in mine)
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
            calls = [(c, p) for c, p in self.recorded.self_calls.get(function.name.value, []) if _method_class(p) is cls]
        elif len(def_path) == 1 and self._unique_module_def(function.name.value):
            calls = [(c, p) for c, p in self.recorded.name_calls.get(function.name.value, []) if self._calls_module_def(c, p)]
        else:
            return ()
        loops: List[cst.CSTNode] = []
        for call, call_path in calls:
            loops.extend(enclosing_loops(call_path + (call,)))
            loops.extend(self.caller_loops(call_path, depth + 1))
        return tuple(loops)

    def _unique_module_def(self, name: str) -> bool:
        return sum(1 for _, path in self.recorded.functions.get(name, []) if len(path) == 1) == 1


def _on_self(func: cst.BaseExpression) -> bool:
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"


def _reads_before_rebinding(values: Optional[List[Optional[cst.BaseExpression]]], path: Path, loops: Tuple[cst.CSTNode, ...]) -> bool:
    """``loader = sample_data(loader)``: the parameter read on the right of the one
    statement that rebinds it, outside any loop (where a later pass would read the new
    value): there it still holds what the caller passed."""
    if values is None or len(values) != 2 or sum(v is None for v in values) != 1 or loops:
        return False
    value = next(v for v in values if v is not None)
    return any(node is value for node in path)


def _walking_loop(path: Path, expr: cst.BaseExpression) -> Optional[cst.CSTNode]:
    """The ``for`` whose header walks ``expr`` (directly or through ``enumerate``/``tqdm``
    calls on the way), None when something else walks it."""
    child: cst.CSTNode = expr
    for node in reversed(path):
        if isinstance(node, (cst.For, cst.CompFor)):
            return node if node.iter is child else None
        if not isinstance(node, (cst.Call, cst.Arg)):
            return None
        child = node
    return None


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

