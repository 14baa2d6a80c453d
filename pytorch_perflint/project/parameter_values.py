"""Parameters, for the engine (mixed into ``values.ValueEngine`` as ``ParameterFlow``): a
parameter holds what every project caller passes, read in the caller's scope (all agree, else
unknown), or its default where a caller passes nothing; ``self`` is an object of its class (of
the subclass an inherited method is read for)."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

from .caller_arguments import plain_decorator
from .forms import Form, Lit, Ref
from .kinds import UNKNOWN, Array, Instance, Kind, Options, Unknown, join, join_all, present
from .loader_values import describe
from .resolution import Definition
from .scopes import build_scope
from .summarizer import parse_tree
from .where import Where

if TYPE_CHECKING:
    from .scopes import Scope

MAX_CALLERS = 16  # more callers than this: the parameter is not known
MAX_NAMING_MODULES = 1  # in a large project, a callee whose name another module spells: not read


class ParameterFlow:
    """Parameters from their callers (every project caller's argument, or the default)."""

    def _parameter(self, scope: Scope, name: str, where: Where, depth: int) -> Kind:
        if self.index is None or scope.owner is None or scope.path is None:
            return UNKNOWN
        definition = self.index.resolve(scope.path, scope.owner)
        if definition is None or definition.kind not in ("function", "method") or definition.function is None:
            return UNKNOWN
        decorators = {getattr(d, "qualname", None) or getattr(d, "name", None) for d in definition.function.decorators}
        params = definition.function.params
        if definition.kind == "method" and scope.params and name == scope.params[0]:
            if decorators & {"staticmethod", "classmethod"}:
                return UNKNOWN
            if where.this is not None:  # an inherited method, read for an object of a subclass
                return where.this
            owner = self.index.resolve(scope.path, scope.owner.split(".")[0])
            return Instance(owner, exact=not self._scannable()) if owner is not None and owner.kind == "class" else UNKNOWN
        if not all(plain_decorator(d) for d in definition.function.decorators) or (definition.kind == "method" and "staticmethod" in decorators):
            return UNKNOWN  # a static method's arguments do not line up with its callers'
        method = definition.name.rpartition(".")[2]
        if definition.kind == "method" and method == "__init__":  # its callers are the class's
            definition = self.index.resolve(scope.path, scope.owner.rpartition(".")[0]) or definition
        public = definition.kind == "method" and not (method.startswith("_") and not method.endswith("__"))
        if public and method.startswith("__") and method != "__init__":
            return UNKNOWN  # a method Python calls (a constructor's callers are its class's)
        public = public and method != "__init__"
        if self.optimistic:
            return Array()  # a screen's question: could it be an array?
        if not self._reads_callers(definition, public, name):
            return UNKNOWN
        key = ("param", scope.path, scope.owner, name)
        if any(p.name == name and p.kind == "kwarg" for p in params):  # `**kwargs`: the keywords callers pass
            named = frozenset(p.name for p in params if p.kind not in ("vararg", "kwarg"))
            return self._memoised(key, lambda: self._keywords(definition, named, depth, public))
        return self._memoised(key, lambda: self._arguments(definition, name, depth, public))

    def passed(self, scope: Scope, name: str) -> Optional[Tuple[Tuple[str, int, Form, Kind], ...]]:
        """What each project caller passes for parameter ``name`` of the function ``scope``:
        (calling module, line, argument form, its kind read in the caller), a default as its
        definition's; None when the callers are not all known (as ``_parameter`` reads them)."""
        if self.index is None or scope.owner is None or scope.path is None or self.optimistic:
            return None
        definition = self.index.resolve(scope.path, scope.owner)
        if definition is None or definition.kind not in ("function", "method") or definition.function is None:
            return None
        if definition.function.decorators or (definition.kind == "method" and scope.params and name == scope.params[0]):
            return None
        method = definition.name.rpartition(".")[2]
        if method.startswith("__"):
            return None  # a constructor's or a method Python calls
        if not self._reads_callers(definition, definition.kind == "method" and not method.startswith("_"), name):
            return None
        sites = None
        if definition.kind == "method" and not method.startswith("_"):
            sites = self._public_sites(definition)
            sites = sites and self._on_its_class(definition, sites, 0)  # type: ignore[arg-type]
        found = self.index.resolution.arguments(definition, name, sites)
        if not found or len(found) > MAX_CALLERS:
            return None
        out = []
        for path, site, form in found:
            where = self._site_where(path, site)
            if where is None:
                return None
            out.append((path, site.line if site is not None else definition.function.line, form, self._eval(form, where, 1)))
        return tuple(out)

    def _reads_callers(self, definition: Definition, public: bool, parameter: str) -> bool:
        """Whether ``parameter`` is read from the callers of ``definition``: always in a small
        project; in a large one (``word_index``), a flag (its default a literal ``True``,
        ``False`` or ``None``: what decides an arm, read off literals at the call) of a
        function, a class or a private method whose name no other module spells
        (``MAX_NAMING_MODULES``), so that a question parses no other module, reads literal
        arguments, and a common name (``forward``) costs a look-up. Reading every
        parameter so made the torch package's cold run a fifth slower."""
        if self._scannable():  # type: ignore[attr-defined]
            return True
        function = definition.function if definition.kind != "class" else (definition.klass.method("__init__") if definition.klass else None)
        param = next((p for p in function.params if p.name == parameter), None) if function is not None else None
        flag = param is not None and type(param.default) is Lit and (param.default.value is None or type(param.default.value) is bool)
        name = definition.name.rpartition(".")[2]
        return flag and not public and name.isidentifier() and self.index.few_spell(name, MAX_NAMING_MODULES)  # type: ignore[union-attr]

    def _own_self(self, path: str, site, related: set) -> bool:
        """A ``self.name(...)`` call that may run this class's method: not one made in a
        method of an unrelated project class that no project class derives from together
        with this one (it runs its own class's method)."""
        if "." not in site.caller:
            return True
        caller_class = self.index.resolve(path, site.caller.rpartition(".")[0])  # type: ignore[union-attr]
        if caller_class is None or caller_class.kind != "class" or caller_class.key in related:
            return True
        return any(s.key in related for s in self.index.resolution.subclasses(caller_class))  # type: ignore[union-attr]

    def _keywords(self, definition: Definition, named: FrozenSet[str], depth: int, public: bool) -> Kind:
        """A ``**kwargs`` parameter: the dict of the keywords every caller passes that no
        named parameter takes, literal ones and those of its ``**`` dicts with literal keys
        (``build(ds, **opts)``, ``opts = {"pin_memory": True}``); callers that disagree on a
        key leave its value unknown (``Options`` join), a ``**`` of an unknown dict leaves
        it unknown. A caller passing ``*args`` fills no keyword."""
        sites = None
        if public:  # as ``_arguments`` reads them
            sites = self._public_sites(definition)
            sites = sites and self._on_its_class(definition, sites, depth)
        if sites is None:
            sites = self.index.resolution.callers(definition, public=True)  # type: ignore[union-attr]
        if not sites or len(sites) > MAX_CALLERS:
            return UNKNOWN
        found: List[Options] = []
        for path, site in sites:
            where = self._site_where(path, site)
            if where is None or site.arguments is None:
                return UNKNOWN
            items: Dict[str, str] = {}
            open_ = False
            for key, value in site.arguments.kwargs:
                if key not in named:
                    items[key] = describe(self._eval(value, where, depth + 1))
            for spread in site.arguments.dstar:
                known = self._spread(spread, where, depth)
                if known is None:
                    return UNKNOWN
                items.update((k, v) for k, v in known.items if k not in named)
                open_ = open_ or known.open
            found.append(Options(tuple(items.items()), open_))
        return reduce(join, found)  # a key one caller leaves out is unknown: its default there

    def _arguments(self, definition: Definition, name: str, depth: int, public: bool = False) -> Kind:
        """All callers' arguments, else unknown. A public method's callers: every call of its
        name in the project (``method_callers``), or, when that cannot be known, its calls
        on ``self`` when those are its only uses (``Resolution.callers(public=True)``)."""
        sites = None
        if public:  # the same callers for every parameter: read once (``Memo._public_sites``)
            sites = self._public_sites(definition)
            sites = sites and self._on_its_class(definition, sites, depth)  # type: ignore[arg-type]
        found = self.index.resolution.arguments(definition, name, sites)  # type: ignore[union-attr]
        if not found or len(found) > MAX_CALLERS or (self.index.lone and all(s is None for _, s, _ in found)):
            return UNKNOWN
        kinds = []
        for path, site, form in found:
            where = self._site_where(path, site)
            if where is None:
                return UNKNOWN
            kind = self._eval(form, where, depth + 1)
            if type(kind) is Unknown:
                return kind
            kinds.append(kind)
        return join_all(kinds)

    def _on_its_class(self, definition: Definition, sites: Tuple, depth: int) -> Tuple:
        """The calls of a public method's name left when those on an object known to be of
        an unrelated project class are dropped (``memory.push(...)`` of another script's
        buffer class, ``self.optimize_epoch(...)`` in another class's method): such a call
        runs that class's method, never this one. An object of the class, a subclass or a
        base (which may be one of ours) keeps its call."""
        key = ("receivers", definition.path, definition.name)
        if key not in self._sites:
            self._sites[key] = (sites, frozenset())  # while they are read: every call kept
            related = self._related(definition)
            method = definition.name.rpartition(".")[2]
            kept = []
            with self.index.recording() as used:  # type: ignore[union-attr]
                for path, site in sites:
                    receiver = site.callee[: -len(method) - 1]
                    if receiver == "self" and not self._own_self(path, site, related):
                        continue
                    where = self._site_where(path, site)
                    dotted = receiver != "self" and all(part.isidentifier() for part in receiver.split("."))
                    kind = present(self._eval(Ref(receiver), where, depth + 1)) if where is not None and dotted else UNKNOWN
                    if type(kind) is not Instance or kind.klass.key in related or any(s.key in related for s in self.index.resolution.subclasses(kind.klass)):  # type: ignore[union-attr]
                        kept.append((path, site))
            self._sites[key] = (tuple(kept) if kept else sites, frozenset(used))  # none left: not read as "no caller"
        found, reads = self._sites[key]  # type: ignore[misc]
        for read in reads:  # what reading the receivers read, told again on a hit (``Memo._public_sites``)
            self.index.note_read(read)  # type: ignore[union-attr]
        return found

    def _related(self, definition: Definition) -> set:
        """The keys of a method's class, its bases and its subclasses in the project."""
        owner = definition.name.rpartition(".")[0]
        klass = Definition("class", definition.path, owner, klass=definition.klass)
        return {c.key for c in (*self.index.resolution.lineage(klass), *self.index.resolution.subclasses(klass))}  # type: ignore[union-attr]

    def _site_where(self, path: str, site) -> Optional[Where]:
        """Where a call site's arguments are read: its calling function, or the module's
        scope at the call's line for a module-level call (a name an entry script binds
        twice, ``gen = DataLoader(...)`` before the epoch loop and again inside it, is the
        binding that reaches the call), or the module for a default (no site)."""
        if site is None:
            return Where(path)
        if not site.caller:
            scope = self.module_scope(path)
            return Where(path) if scope is None else Where(path, scope, site.line)
        return self._caller_where(path, site.caller, site.line)

    def module_scope(self, path: str) -> Optional["Scope"]:
        """The scope of a project module's top level (its whole text parsed once, kept as
        ``scope_of`` keeps a function's)."""
        self._fresh()  # type: ignore[attr-defined]
        key = (path, "", 0)
        if key in self._scopes:  # type: ignore[attr-defined]
            self.index.note_read(path)  # type: ignore[union-attr]
        else:
            text = self.index.text(path)  # type: ignore[union-attr]
            tree = None if text is None else parse_tree(text)
            self._scopes[key] = None if tree is None else build_scope(tree, {}, path, None)  # type: ignore[attr-defined]
        return self._scopes[key]  # type: ignore[attr-defined]

    def _caller_where(self, path: str, caller: str, line: int) -> Optional[Where]:
        definition = self.index.resolve(path, caller)  # type: ignore[union-attr]
        if definition is None or definition.kind not in ("function", "method"):
            return None
        return self._where_in(definition, line)

