"""What a name means across the project's modules, and who calls a definition.

``resolve`` follows ``from x import y`` chains, ``import a.b as c``, re-exports in
``__init__.py``, star imports of project modules and module-level aliases (``Model =
ResNet``), with a depth limit and protection against import cycles. A name bound more
than once at module level (``try: import a / except: a = None``) is unknown.

``callers`` lists the project's calls of a function or class, or says they cannot all be
known: the definition escapes as a value, a module star-imports it, it is a public method
(``obj.fit(...)`` calls are not traced to a class), or it lives in a module named like the
standard library (an ``import`` of that name may be the library).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..analysis.names import canonical
from .definition import Definition  # noqa: F401 - imported from here across the project
from .forms import Ref
from .reads import ALL_FILES
from .registry_callers import registry_calls
from .returned_classes import returned_class_calls
from .root import STDLIB_MODULES, Target
from .summary import ImportRecord, ModuleSummary
from .caller_arguments import CallerArguments, Site

_BUILDS_ITSELF = re.compile(r"\bcls\s*\(|__class__\s*\(|\btype\(\s*self\s*\)\s*\(")


if TYPE_CHECKING:
    from .index import ProjectIndex

MAX_DEPTH = 24


def _bound_module(record: ImportRecord) -> Tuple[str, int, Optional[str]]:
    """What an import binds its name to: ``import a.b`` binds the package ``a``."""
    if record.name is None and not record.asname:
        return (record.module.split(".")[0], record.level, None)
    return (record.module, record.level, record.name)


def _module_definition(target: Target, dotted: str) -> Definition:
    if target.path is not None:
        return Definition("module", target.path, dotted)
    if target.namespace is not None:
        return Definition("module", None, dotted, namespace=target.namespace)
    return Definition("external", qualname=target.external or dotted)


class Resolution(CallerArguments):
    """Name resolution and call sites for one ``ProjectIndex`` (memoised until it changes)."""

    def __init__(self, index: "ProjectIndex") -> None:
        self.index = index
        self._uses: Dict[str, Tuple[List[Site], FrozenSet[str]]] = {}  # name -> (uses, what was read)
        self._stars: Optional[Tuple[FrozenSet[str], FrozenSet[str]]] = None  # (modules, what was read)
        # (path, name) -> the answer and the modules it read (replayed to recorders on a hit)
        self._resolved: Dict[Tuple[str, str], Tuple[Optional[Definition], FrozenSet[str]]] = {}
        self._star_modules: Dict[str, bool] = {}  # path -> whether it has a module-level star import
        self._subs: Dict[Tuple, Tuple[Tuple[Definition, ...], FrozenSet[str]]] = {}  # class key -> (subclasses, what was read)

    def forget(self) -> None:
        """Drop what was worked out: a summary changed."""
        self._uses = {}
        self._stars = None
        self._resolved = {}
        self._star_modules = {}
        self._subs = {}

    # -- resolve --------------------------------------------------------------------------
    def resolve(self, path: str, name: str) -> Optional[Definition]:
        key = (path, name)
        kept = self._resolved.get(key)
        if kept is None:
            with self.index.recording() as used:
                found = self._resolve(path, name, 0, frozenset())
            kept = self._resolved[key] = (found, frozenset(used))
        for read in kept[1]:
            self.index.note_read(read)
        return kept[0]

    def star_qualname(self, path: Optional[str], name: str) -> Optional[str]:
        """The library name a dotted module-level ``name`` means when its head is bound only
        by a star import of a project module (``from utils import *``, ``utils.py`` doing
        ``import torch``: ``torch.utils.data.DataLoader``), as ``FileContext.qualname`` reads
        it; None in a module without a star import, or for anything else."""
        if path is None:
            return None
        if path not in self._star_modules:
            self._star_modules[path] = any(r.star and r.module_scope for r in self.index.summary(path).imports)
        if not self._star_modules[path]:
            return None
        head, _, rest = name.partition(".")
        found = self.resolve(path, head)
        if found is None or found.kind != "external" or not found.qualname:
            return None
        return canonical(f"{found.qualname}.{rest}" if rest else found.qualname)

    def imported(self, path: str, record: ImportRecord, parts: Sequence[str] = ()) -> Optional[Definition]:
        """What a function's own import binds (``import models.wideresnet as models``), and
        its members ``parts`` (``models.build_wideresnet``)."""
        found = self._imported(path, record, 0, frozenset())
        for part in parts:
            found = None if found is None else self._member(found, part, 1, frozenset())
        return found

    def _resolve(self, path: str, name: str, depth: int, seen: FrozenSet) -> Optional[Definition]:
        head, *rest = name.split(".")
        found = self._name(path, head, depth, seen)
        for part in rest:
            if found is None:
                return None
            found = self._member(found, part, depth + 1, seen)
        return found

    def _name(self, path: str, name: str, depth: int, seen: FrozenSet) -> Optional[Definition]:
        key = (path, name)
        if depth > MAX_DEPTH or key in seen:
            return None
        seen = seen | {key}
        summary = self.index.summary(path)
        if not summary.ok:
            return None
        records = [r for r in summary.imports if r.module_scope and not r.star and r.bound == name]
        if name in summary.rebound and not self._same_imports(records):
            return None
        function = summary.function(name)
        if function is not None:
            return Definition("function", path, name, function=function)
        klass = summary.klass(name)
        if klass is not None:
            return Definition("class", path, name, klass=klass)
        binding = summary.binding(name)
        if binding is not None:
            if isinstance(binding.form, Ref) and not binding.mutated:
                return self._resolve(path, binding.form.name, depth + 1, seen)  # an alias
            return Definition("binding", path, name, binding=binding)
        if records:
            return self._imported(path, records[0], depth + 1, seen)
        return self._from_star(path, summary, name, depth + 1, seen)

    def _same_imports(self, records: List[ImportRecord]) -> bool:
        """``import torch`` twice, or beside ``import torch.nn.init`` (which binds the package
        ``torch`` too), is one binding; anything else bound twice is not known."""
        return len(records) > 1 and len({_bound_module(r) for r in records}) == 1

    def _from_star(self, path: str, summary: ModuleSummary, name: str, depth: int, seen: FrozenSet) -> Optional[Definition]:
        for record in summary.imports:
            if not (record.star and record.module_scope):
                continue
            target = self.index.import_target(path, record)
            if target is None or target.path is None:
                return None  # an external star import may define any name
            exported = self.index.summary(target.path).exports
            if (name in exported) if exported is not None else not name.startswith("_"):
                found = self._name(target.path, name, depth, seen)
                if found is not None:
                    return found
        return None

    def _imported(self, path: str, record: ImportRecord, depth: int, seen: FrozenSet) -> Optional[Definition]:
        modules = self.index.modules
        if record.name is None:
            if record.asname:  # import a.b as c: c is a.b
                target = self.index.import_target(path, record)
                return None if target is None else _module_definition(target, record.module)
            top = record.module.split(".")[0]  # import a.b: binds a
            target = self.index.import_target(path, dataclasses.replace(record, module=top)) or modules.resolve_absolute(top, path)
            return _module_definition(target, top)
        target = self.index.import_target(path, record)
        if target is None:
            return None
        if target.external is not None:
            return Definition("external", qualname=canonical(f"{record.module}.{record.name}"))
        return self._member(_module_definition(target, record.module), record.name, depth, seen)

    def _member(self, owner: Definition, part: str, depth: int, seen: FrozenSet) -> Optional[Definition]:
        if owner.kind == "external":
            return Definition("external", qualname=canonical(f"{owner.qualname}.{part}"))
        if owner.kind == "module":
            if owner.path is not None:
                found = self._name(owner.path, part, depth, seen)
                if found is not None:
                    return found
            target = Target(path=owner.path, namespace=owner.namespace)
            sub = self.index.modules.submodule(target, part)
            return None if sub is None else _module_definition(sub, f"{owner.name}.{part}")
        if owner.kind == "class" and owner.klass is not None:
            method = owner.klass.method(part)
            if method is not None:
                return Definition("method", owner.path, f"{owner.name}.{part}", function=method, klass=owner.klass)
            binding = next((b for b in owner.klass.bindings if b.name == part), None)
            if binding is not None:
                return Definition("binding", owner.path, f"{owner.name}.{part}", binding=binding, klass=owner.klass)
        return None

    # -- classes ----------------------------------------------------------------------------
    def project_bases(self, definition: Definition) -> List[Definition]:
        """The project classes a class names as its bases, in order."""
        out = []
        if definition.klass is None or definition.path is None:
            return out
        for base in definition.klass.bases:
            if isinstance(base, Ref):
                found = self.resolve(definition.path, base.name)
                if found is not None and found.kind == "class":
                    out.append(found)
        return out

    def lineage(self, klass: Definition) -> Tuple[Definition, ...]:
        """The class and its project bases, nearest first (a base outside the project is not
        read; at most 8)."""
        out = [klass]
        stack = [klass]
        while stack and len(out) < 8:
            for base in self.project_bases(stack.pop()):
                if base.klass is not None and all(base.key != seen.key for seen in out):
                    out.append(base)
                    stack.append(base)
        return tuple(out)

    def external_bases(self, definition: Definition) -> FrozenSet[str]:
        out: Set[str] = set()
        stack, seen = [definition], set()
        while stack:
            current = stack.pop()
            if current.key in seen or current.klass is None or current.path is None:
                continue
            seen.add(current.key)
            for base in current.klass.bases:
                if not isinstance(base, Ref):
                    continue
                found = self.resolve(current.path, base.name)
                if found is None:
                    continue
                if found.kind == "external" and found.qualname:
                    out.add(found.qualname)
                elif found.kind == "class":
                    stack.append(found)
        return frozenset(out)

    # -- callers ----------------------------------------------------------------------------
    def _uses_of(self, name: str) -> List[Site]:
        """Every use, in the project, of a chain that spells ``name`` (only the modules whose
        text holds the word are read)."""
        kept = self._uses.get(name)
        if kept is not None:  # what it read, told again to the recordings
            for read in kept[1]:
                self.index.note_read(read)
            return kept[0]
        found: List[Site] = []
        with self.index.recording() as used:
            for path in self.index.spelling(name, self.index.import_graph()):
                if self.index.text_naming(path, name) is None:
                    continue
                for site in self.index.uses(path):
                    if name in site.callee.split("."):
                        found.append((path, site))
        self._uses[name] = (found, frozenset(used))
        return found

    def _star_imported(self) -> FrozenSet[str]:
        """Project modules some module star-imports (their names may be used unseen)."""
        if self._stars is None:
            stars = set()
            with self.index.recording() as used:
                for path in self.index.import_graph():
                    for record in self.index.summary(path).imports:
                        if record.star:
                            target = self.index.import_target(path, record)
                            if target is not None and target.path is not None:
                                stars.add(target.path)
            self._stars = (frozenset(stars), frozenset(used))
        else:  # what it read, told again to the recordings
            for read in self._stars[1]:
                self.index.note_read(read)
        return self._stars[0]

    def callers(self, definition: Definition, public: bool = False) -> Optional[Tuple[Site, ...]]:
        """The project's calls of a function, method or class (a class's calls are its
        ``__init__``'s), or None when they cannot all be known. ``public``: a public method's
        too, when every use of its name is ``self.m(...)`` (the value engine's parameters)."""
        if definition.path is None or definition.kind not in ("function", "class", "method"):
            return None
        self.index.note_read(ALL_FILES)  # the project's layout; the texts read note their words
        stem = os.path.splitext(os.path.basename(definition.path))[0]
        top = (self.index.module_name(definition.path) or stem).split(".")[0]
        starred = definition.path in self._star_imported()
        if stem in STDLIB_MODULES or top in STDLIB_MODULES or starred and definition.kind != "function":
            return None
        if definition.kind == "method":
            return self._method_callers(definition, public)
        if definition.kind == "class":
            return self._class_callers(definition, set())
        return self._direct(definition, strict=starred)

    def _direct(self, definition: Definition, strict: bool = False) -> Optional[Tuple[Site, ...]]:
        """Calls that name the definition (``conv_bn(...)``, ``layers.conv_bn(...)``).
        ``strict`` (a module some module star-imports, ``from test import *``): a use of the
        name that does not resolve may be it, so the callers are not known."""
        out = []
        parts = definition.name.split(".")
        # ``Base.__init__(self, ...)`` spells the class: only modules that name it are read.
        name = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
        for path, site in [*self._uses_of(name), *(self.index.star_uses(name, definition.path) if strict else ())]:
            head = site.callee.split(".")[0]
            if head in ("self", "cls", "super()"):
                continue
            found = self.resolve(path, site.callee)
            if found is None and strict:
                return None
            if found is None or found.key != definition.key:
                continue
            if not site.called:  # it escapes as a value, unless into a registry of classes
                more = (registry_calls(self, path, site) or returned_class_calls(self, path, site)) if definition.kind == "class" else None
                if more is None:
                    return None
                out.extend(m for m in more if m not in out)  # two returns of the class: the same calls
                continue
            out.append((path, site))
        return tuple(out)

    def _method_callers(self, definition: Definition, public: bool = False) -> Optional[Tuple[Site, ...]]:
        method = definition.name.split(".")[-1]
        if method == "__init__" and definition.klass is not None:
            owner = Definition("class", definition.path, definition.name.split(".")[0], klass=definition.klass)
            return self.callers(owner)
        if method.startswith("__") or not (public or method.startswith("_")):
            return None  # called by Python itself, or public (called on objects of any class)
        out = []
        for path, site in self._uses_of(method):
            head, _, rest = site.callee.partition(".")
            if head in ("self", "cls", "super()") and rest == method:
                if not site.called:
                    return None
                out.append((path, site))
            elif not method.startswith("_"):
                return None  # a public method used on another object: its callers are any class's
        if not method.startswith("_") and not self._only_on_self(method):
            return None
        direct = self._direct(definition)  # ``Net._build(self)``
        return None if direct is None else (*out, *direct)

    def _only_on_self(self, method: str) -> bool:
        """Every ``.method`` written in the project's text is ``self.method`` / ``cls.`` /
        ``super().`` (the recorded uses hold only chains a project name may start)."""
        attribute = re.compile(rf"\.\s*{re.escape(method)}\b")
        on_self = re.compile(r"(?:^|[^\w.])(?:self|cls|super\(\))\s*$")
        for path in self.index.spelling(method, self.index.import_graph()):
            text = self.index.text_naming(path, method)
            if text is None:
                continue
            for found in attribute.finditer(text):
                if not on_self.search(text[max(0, found.start() - 40): found.start()]):
                    return False
        return True

    def _class_callers(self, definition: Definition, seen: Set[Tuple]) -> Optional[Tuple[Site, ...]]:
        if definition.key in seen:
            return ()
        seen.add(definition.key)
        direct = self._direct(definition)
        init = Definition("method", definition.path, f"{definition.name}.__init__")
        explicit = self._direct(init)  # ``Base.__init__(self, ...)``
        if direct is None or explicit is None or self._builds_itself(definition):
            return None
        out: List[Site] = [*direct, *explicit]
        for sub in self._subclasses(definition):
            assert sub.klass is not None
            if self._builds_itself(sub):
                return None
            if sub.klass.method("__init__") is None:
                more = self._class_callers(sub, seen)  # Sub(...) runs this __init__
                if more is None:
                    return None
                out.extend(more)
            else:
                out.extend(
                    (sub.path, site)
                    for site in self.index.uses(sub.path)  # type: ignore[arg-type]
                    if site.callee == "super().__init__" and site.caller == f"{sub.name}.__init__"
                )
        return tuple(out)

    def _builds_itself(self, definition: Definition) -> bool:
        """The class's body makes objects of its own class under another name (``cls(...)``
        in a class method, ``type(self)(...)``, ``self.__class__(...)``): calls no use
        records, so its constructor's callers are not all known."""
        text = self.index.text(definition.path) if definition.klass is not None and definition.path else None
        if text is None:
            return True
        body = "\n".join(text.splitlines()[definition.klass.line - 1 : definition.klass.end_line])  # type: ignore[union-attr]
        return _BUILDS_ITSELF.search(body) is not None

    def subclasses(self, definition: Definition) -> List[Definition]:
        """The project classes derived from a project class, at any depth."""
        out: List[Definition] = []
        stack = [definition]
        while stack and len(out) < 32:
            for sub in self._subclasses(stack.pop()):
                if all(sub.key != seen.key for seen in out):
                    out.append(sub)
                    stack.append(sub)
        return out

    def _subclasses(self, definition: Definition) -> List[Definition]:
        """Project classes that name ``definition`` among their bases (their modules spell
        its name), memoised as ``_uses_of`` is."""
        kept = self._subs.get(definition.key)
        if kept is not None:  # what it read, told again to the recordings
            for read in kept[1]:
                self.index.note_read(read)
            return list(kept[0])
        out = []
        with self.index.recording() as used:
            for path in self.index.spelling(definition.name, self.index.import_graph()):
                if self.index.text_naming(path, definition.name) is None:
                    continue
                for klass in self.index.summary(path).classes:
                    candidate = Definition("class", path, klass.name, klass=klass)
                    if any(base.key == definition.key for base in self.project_bases(candidate)):
                        out.append(candidate)
        self._subs[definition.key] = (tuple(out), frozenset(used))
        return out
