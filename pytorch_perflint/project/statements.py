"""Statement-level reading of one scope: which names it binds, how often, and to what.

Only statements are walked (about a tenth of a tree's nodes): the bodies of ``if``/``for``/
``while``/``with``/``try``/``match`` belong to the scope they stand in; the bodies of nested
functions and classes do not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from . import forms
from .forms import Form, FormBuilder, Unknown
from .summary import Binding, ImportRecord

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


# Compound statements and the bodies of theirs that belong to the enclosing scope.
_BODIES = {
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "orelse", "finalbody"),
}
if hasattr(ast, "TryStar"):  # Python 3.11+
    _BODIES[ast.TryStar] = ("body", "orelse", "finalbody")  # type: ignore[attr-defined]
_HANDLERS = tuple(k for k in _BODIES if k.__name__.startswith("Try"))
_MATCH = getattr(ast, "Match", None)


def scope_statements(body: Sequence[ast.stmt]) -> List[ast.stmt]:
    """Every statement of a scope, in order, nested defs and classes included as
    statements but not entered."""
    out: List[ast.stmt] = []
    _collect(body, out)
    return out


def _collect(body: Sequence[ast.stmt], out: List[ast.stmt]) -> None:
    for stmt in body:
        out.append(stmt)
        kind = type(stmt)
        fields = _BODIES.get(kind)
        if fields is None:
            if kind is _MATCH:
                for case in stmt.cases:  # type: ignore[attr-defined]
                    _collect(case.body, out)
            continue
        for name in fields:
            _collect(getattr(stmt, name), out)
        if kind in _HANDLERS:
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                _collect(handler.body, out)


def global_statements(body: Sequence[ast.stmt]) -> List[ast.Global]:
    """Every ``global`` statement under ``body``, nested functions and classes entered.
    Only statements are visited (a ``global`` is one): about a tenth of the nodes of
    ``ast.walk``, which cost a module scope 0.1-0.4 s on each large torch module."""
    out: List[ast.Global] = []
    todo = list(body)
    while todo:
        stmt = todo.pop()
        kind = type(stmt)
        if kind is ast.Global:
            out.append(stmt)  # type: ignore[arg-type]
        elif kind in SCOPES:
            todo.extend(stmt.body)  # type: ignore[attr-defined]
        elif kind is _MATCH:
            for case in stmt.cases:  # type: ignore[attr-defined]
                todo.extend(case.body)
        else:
            for name in _BODIES.get(kind, ()):
                todo.extend(getattr(stmt, name))
            if kind in _HANDLERS:
                for handler in stmt.handlers:  # type: ignore[attr-defined]
                    todo.extend(handler.body)
    return out


def target_names(target: ast.AST) -> List[str]:
    """Names an assignment target binds (``a, (b, *c)`` -> a, b, c)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for elt in target.elts for name in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def import_records(stmt: ast.stmt, module_scope: bool) -> List[ImportRecord]:
    if isinstance(stmt, ast.Import):
        return [ImportRecord(a.name, 0, None, a.asname, stmt.lineno, module_scope) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        module = stmt.module or ""
        return [ImportRecord(module, stmt.level or 0, a.name, a.asname, stmt.lineno, module_scope) for a in stmt.names]
    return []


def alias_target(record: ImportRecord) -> Optional[str]:
    """The dotted name an import binds its local name to (relative ones keep their dots)."""
    if record.star:
        return None
    prefix = "." * record.level
    if record.name is None:
        return record.module if record.asname else record.module.split(".")[0]
    base = f"{prefix}{record.module}"
    if not record.module:
        return f"{prefix}{record.name}"
    return f"{base}.{record.name}"


@dataclass
class ScopeNames:
    """What one scope binds: per name, every (kind, line, value node) binding it."""

    bound: Dict[str, List[Tuple[str, int, Optional[ast.AST]]]] = field(default_factory=dict)
    imports: List[ImportRecord] = field(default_factory=list)
    returns: List[ast.Return] = field(default_factory=list)
    mutated: Set[str] = field(default_factory=set)  # changed in place by a statement
    declared_global: Set[str] = field(default_factory=set)
    generator: bool = False
    # (line, attribute, value node or None when not known) of ``own.attr = ...``
    own_attrs: List[Tuple[int, str, Optional[ast.AST]]] = field(default_factory=list)
    scopes: List[ast.stmt] = field(default_factory=list)  # nested defs and classes, in order

    def add(self, name: str, kind: str, line: int, value: Optional[ast.AST] = None) -> None:
        self.bound.setdefault(name, []).append((kind, line, value))

    def once(self, name: str) -> Optional[Tuple[str, int, Optional[ast.AST]]]:
        entries = self.bound.get(name)
        return entries[0] if entries is not None and len(entries) == 1 else None

    def rebound(self) -> Tuple[str, ...]:
        return tuple(sorted(name for name, entries in self.bound.items() if len(entries) > 1))

    def aliases(self, outer: Mapping[str, str] = {}) -> Mapping[str, str]:
        """Import aliases visible in this scope: the outer ones, shadowed by any non-import
        binding here, then this scope's imports where every binding of the name is an import
        of the same target (a ``try``/``except`` fallback to another module is unknown)."""
        if not self.imports and outer.keys().isdisjoint(self.bound):
            return outer  # nothing here changes them (the common case: no copy)
        aliases = {name: target for name, target in outer.items() if name not in self.bound}
        by_name: Dict[str, Set[Optional[str]]] = {}
        for record in self.imports:
            if not record.star:
                by_name.setdefault(record.bound, set()).add(alias_target(record))
        for name, targets in by_name.items():
            entries = self.bound.get(name, [])
            if len(targets) == 1 and all(kind == "import" for kind, _, _ in entries):
                target = next(iter(targets))
                if target is not None:
                    aliases[name] = target
        return aliases

    def bindings(self, builder: FormBuilder, names: Optional[Set[str]] = None) -> Tuple[Binding, ...]:
        """The names bound once by an assignment, ``for`` or ``with`` (all, or ``names``)."""
        out = []
        for name, entries in self.bound.items():
            if len(entries) != 1 or (names is not None and name not in names):
                continue
            kind, line, value = entries[0]
            if kind == "assign" or (kind == "unpack" and value is not None):  # `a, b = f()`: `f()[0]`, `f()[1]`
                form: Form = builder.form(value)
            elif kind == "with" and isinstance(value, ast.Call):
                entered = builder.form(value)  # the value bound is the manager's __enter__()
                form = forms.Call(forms.Attr(entered, "__enter__")) if type(entered) is forms.Call else Unknown(kind)
            elif kind in ("for", "with", "except", "unpack", "walrus"):
                form = Unknown(kind)
            else:
                continue  # defs, classes and imports are described elsewhere
            out.append(Binding(name, form, line, name in self.mutated))
        return tuple(sorted(out, key=lambda b: b.line))


_STORE_TARGETS = (ast.Subscript, ast.Attribute)


def _changed_in_place(target: ast.AST) -> Optional[str]:
    """``x`` for ``x[k] = ...`` / ``x.a = ...`` (the object ``x`` changes in place)."""
    while isinstance(target, _STORE_TARGETS):
        target = target.value
        if type(target) is ast.Name:
            return target.id  # type: ignore[attr-defined]
    return None


def _own_attr(target: ast.AST, own: Optional[str]) -> Optional[str]:
    """``attr`` for ``own.attr`` (``self.conv`` in a method whose first parameter is ``self``)."""
    if own is not None and type(target) is ast.Attribute:
        value = target.value  # type: ignore[attr-defined]
        if type(value) is ast.Name and value.id == own:  # type: ignore[attr-defined]
            return target.attr  # type: ignore[attr-defined]
    return None


def read_scope(body: Sequence[ast.stmt], module_scope: bool, own: Optional[str] = None) -> ScopeNames:
    """The names one scope binds, its imports, returns, nested defs and in-place changes;
    with ``own`` (a method's first parameter), also its ``own.attr = ...`` assignments.

    One pass over the scope's statements (this is the index's hottest loop: plain type
    checks, most frequent statement kinds first)."""
    names = ScopeNames()
    add = names.add
    mutated = names.mutated

    def visit(statements: Sequence[ast.stmt]) -> None:
        for stmt in statements:
            kind = type(stmt)
            if kind is Expr:
                value = stmt.value  # type: ignore[attr-defined]
                value_kind = type(value)
                if value_kind is Call:
                    func = value.func
                    if type(func) is Attribute:
                        receiver = func.value
                        while type(receiver) in _STORE_TARGETS:
                            receiver = receiver.value
                        if type(receiver) is Name:
                            mutated.add(receiver.id)
                elif value_kind is ast.Yield or value_kind is ast.YieldFrom:
                    names.generator = True
            elif kind is Assign:
                _assign(stmt, names, own)  # type: ignore[arg-type]
            elif kind is Return:
                names.returns.append(stmt)  # type: ignore[arg-type]
            elif kind in _BODIES:
                _compound(stmt, kind, names, own)
                for part in _BODIES[kind]:
                    visit(getattr(stmt, part))  # noqa: F821 (``visit`` is deleted after use)
                if kind in _HANDLERS:
                    for handler in stmt.handlers:  # type: ignore[attr-defined]
                        visit(handler.body)  # noqa: F821
            elif kind is FunctionDef or kind is AsyncFunctionDef or kind is ClassDef:
                add(stmt.name, "class" if kind is ClassDef else "def", stmt.lineno)  # type: ignore[attr-defined]
                names.scopes.append(stmt)
            elif kind is ast.Import or kind is ast.ImportFrom:
                for record in import_records(stmt, module_scope):
                    names.imports.append(record)
                    if not record.star:
                        add(record.bound, "import", stmt.lineno)
            elif kind is ast.AnnAssign or kind is ast.AugAssign:
                _assign_other(stmt, kind, names, own)
            elif kind is ast.Global or kind is ast.Nonlocal:
                names.declared_global.update(stmt.names)  # type: ignore[attr-defined]
            elif kind is ast.Delete:
                for target in stmt.targets:  # type: ignore[attr-defined]
                    for name in target_names(target):
                        add(name, "del", stmt.lineno)
            elif kind is _MATCH:
                for case in stmt.cases:  # type: ignore[attr-defined]
                    visit(case.body)  # noqa: F821

    visit(body)
    # ``visit`` refers to itself through its closure: a cycle that would keep ``names``, and
    # the syntax trees it holds, alive until the cyclic collector runs (which then walks
    # every node of them). Ended here, they go when the last reference does.
    del visit
    return names


Expr, Assign, Return, Call, Attribute, Name = ast.Expr, ast.Assign, ast.Return, ast.Call, ast.Attribute, ast.Name
FunctionDef, AsyncFunctionDef, ClassDef = ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef


def _stored(target: ast.AST, value: Optional[ast.AST], line: int, names: ScopeNames, own: Optional[str]) -> None:
    """An assignment to ``x.attr`` or ``x[key]``: ``own.attr = value`` for a method, and
    ``x`` changed in place."""
    attr = _own_attr(target, own)
    if attr is not None:
        names.own_attrs.append((line, attr, value))
    changed = _changed_in_place(target)
    if changed is not None:
        names.mutated.add(changed)


def _assign(stmt: ast.Assign, names: ScopeNames, own: Optional[str]) -> None:
    value = stmt.value
    for target in stmt.targets:
        target_kind = type(target)
        if target_kind is Name:
            names.add(target.id, "assign", stmt.lineno, value)  # type: ignore[attr-defined]
        elif target_kind is Attribute or target_kind is ast.Subscript:
            _stored(target, value, stmt.lineno, names, own)
        else:
            for name, item in _unpacked(target, value):
                names.add(name, "unpack", stmt.lineno, item)
            for elt in getattr(target, "elts", ()):
                _stored(elt, None, stmt.lineno, names, own)
    if type(value) is ast.Yield or type(value) is ast.YieldFrom:
        names.generator = True


def _unpacked(target: ast.AST, value: ast.AST) -> List[Tuple[str, Optional[ast.AST]]]:
    """The names a tuple target binds, each with ``value[i]...`` (an ``ast.Subscript`` made
    here: ``feats, names = load()`` binds ``feats`` to ``load()[0]``), None under a starred
    target or another kind of target."""
    if type(target) is Name:
        return [(target.id, value)]  # type: ignore[attr-defined]
    elts = getattr(target, "elts", None)
    if type(target) not in (ast.Tuple, ast.List) or any(type(e) is ast.Starred for e in elts):  # type: ignore[union-attr]
        return [(name, None) for name in target_names(target)]
    out: List[Tuple[str, Optional[ast.AST]]] = []
    for position, elt in enumerate(elts):  # type: ignore[arg-type]
        item = ast.Subscript(value, ast.Constant(position), ast.Load(), lineno=value.lineno, col_offset=value.col_offset)
        out += _unpacked(elt, item)
    return out


def _assign_other(stmt: ast.stmt, kind: type, names: ScopeNames, own: Optional[str]) -> None:
    """``x: T = v`` binds like ``x = v``; ``x += v`` rebinds ``x`` to a value not known."""
    target = stmt.target  # type: ignore[attr-defined]
    if kind is ast.AnnAssign and stmt.value is None:  # type: ignore[attr-defined]
        return
    value = stmt.value if kind is ast.AnnAssign else None  # type: ignore[attr-defined]
    if type(target) is Name:
        names.add(target.id, "assign" if kind is ast.AnnAssign else "augassign", stmt.lineno, value)
        if kind is ast.AugAssign:
            names.mutated.add(target.id)
        return
    _stored(target, value, stmt.lineno, names, own)


def _compound(stmt: ast.stmt, kind: type, names: ScopeNames, own: Optional[str]) -> None:
    """What the header of a compound statement binds (``for x in``, ``with ... as f``,
    ``except E as e``)."""
    if kind is ast.For or kind is ast.AsyncFor:
        targets = [stmt.target]  # type: ignore[attr-defined]
        binding = "for"
    elif kind is ast.With or kind is ast.AsyncWith:
        for item in stmt.items:  # type: ignore[attr-defined]
            if isinstance(item.optional_vars, ast.Name):  # `with h5py.File(p) as f`: f is its __enter__()
                names.add(item.optional_vars.id, "with", stmt.lineno, item.context_expr)
        targets = [
            i.optional_vars
            for i in stmt.items  # type: ignore[attr-defined]
            if i.optional_vars is not None and not isinstance(i.optional_vars, ast.Name)
        ]
        binding = "with"
    else:
        for handler in getattr(stmt, "handlers", ()):
            if handler.name:
                names.add(handler.name, "except", handler.lineno)
        return
    for target in targets:
        for name in target_names(target):
            names.add(name, binding, stmt.lineno)
        if own is not None:
            for elt in (target, *getattr(target, "elts", ())):
                attr = _own_attr(elt, own)
                if attr is not None:
                    names.own_attrs.append((stmt.lineno, attr, None))
