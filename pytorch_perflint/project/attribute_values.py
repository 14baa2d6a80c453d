"""Attributes, for the value engine (mixed in as ``AttributeFlow``; split from ``values``):
an instance's ``self.x`` is what every ``self.x = ...`` of its class and its project bases
(and subclasses, when the object may be one of theirs) and a class attribute agree on, a
base's binding read for the object (its ``self`` the instance: ``self._build_model()`` in a
base's ``__init__`` runs the subclass's override); a
class's attribute its class-body binding; a choice's or a module's each candidate's; library
kinds' through ``module_values`` and ``library_values``."""

from __future__ import annotations

from typing import Iterable, Tuple

from . import accelerate_values as accelerate, choices, library_values as library
from .kinds import UNKNOWN, Instance, Kind, OneOf, ProjectCallable, ProjectModules, Unknown, join_all, present
from .resolution import Definition
from .scopes import mutable_display
from .where import Where


class AttributeFlow:
    """``receiver.name`` of a known kind (the engine's ``_attribute``)."""

    def _attribute(self, receiver: Kind, name: str, depth: int) -> Kind:
        receiver = present(receiver)
        if type(receiver) is Instance:
            klass, exact = receiver.klass, receiver.exact
            key = ("attr", klass.path, klass.name, name, exact)
            return self._memoised(key, lambda: self._instance_attribute(klass, name, exact, depth, key))
        if type(receiver) is ProjectCallable and receiver.definition.kind == "class" and self.index is not None:
            definition = receiver.definition
            found = self.index.resolve(definition.path, f"{definition.name}.{name}") if definition.path else None
            return self._definition(found, depth)
        if type(receiver) in (OneOf, ProjectModules):  # each choice's / each module's
            return choices.attribute(self, receiver, name, depth)
        return self.models.attribute(receiver, name) or accelerate.attribute(receiver, name) or library.attribute(receiver, name)

    def _instance_attribute(self, klass: Definition, name: str, exact: bool, depth: int, key: Tuple = ()) -> Kind:
        """Every ``self.name = ...`` in the methods of the class and its project bases (and
        subclasses, when the object may be one of theirs), and a class attribute of that
        name: the kind all of them agree on. A list or dict display is not followed (code
        appends to it)."""
        kinds = []
        getter = False  # a read-only `@property` of that name: its return
        owners = list(self.index.resolution.lineage(klass))  # type: ignore[union-attr]
        bases = len(owners)  # past the class itself, its bases: read for this object (`Where.this`)
        if not exact:
            owners += [sub for sub in self.index.resolution.subclasses(klass) if sub.klass is not None]  # type: ignore[union-attr]
        for position, owner in enumerate(owners):
            assert owner.klass is not None
            # a base's `self.model = self._build_model()` is read for this object: the
            # subclass's override builds it (inherited methods are read so, `_dispatch`)
            this = Instance(klass, exact) if 0 < position < bases and (owner.path, owner.name) != (klass.path, klass.name) else None
            binding = next((b for b in owner.klass.bindings if b.name == name), None)
            if binding is not None:
                kinds.append(self._eval(binding.form, Where(owner.path), depth + 1))
            for method in owner.klass.methods:
                definition = Definition("method", owner.path, f"{owner.name}.{method.name}", function=method, klass=owner.klass)
                if method.name == name:
                    if not _property(method) or getter:
                        return UNKNOWN  # a method (or a property with a setter): not followed here
                    getter = True
                    continue
                scope = None
                for line, _, attr, form in self._own_attrs(definition):
                    if attr != name and attr != "*":  # "*": `setattr(self, k, v)` may set it
                        continue
                    if form is None or mutable_display(form):
                        return UNKNOWN
                    scope = scope or self.scope_of(definition)
                    kinds.append(self._eval(form, Where(owner.path, scope, line, Where(owner.path), this), depth + 1))
        if getter:  # the class's getter (an override in a subclass, when it may be one)
            return UNKNOWN if kinds else self._dispatch(Instance(klass, exact), name, depth)
        known = join_all([kind for kind in kinds if type(kind) is not Unknown])
        if key and type(known) is not Unknown:
            self._guess(key, known)  # `self.x = self.x + dx`: tried if it reads itself
        return join_all(kinds) if kinds else UNKNOWN

    def _own_attrs(self, definition: Definition) -> Iterable:
        scope = self.scope_of(definition)
        return () if scope is None else scope.own_attrs


def _property(method) -> bool:
    """``@property`` alone (a read-only attribute computed by the method)."""
    decorators = method.decorators
    return len(decorators) == 1 and (getattr(decorators[0], "qualname", None) or getattr(decorators[0], "name", None)) in ("property", "builtins.property")
