"""Which names a scope binds, and to what: imports, literal constants, everything else.

This is a deliberately small replacement for LibCST's ScopeProvider and
QualifiedNameProvider, which cost more than the parse on large trees. It scans statements
only (not every expression), once per scope, and only when a rule asks.

A name bound by an import maps to the imported qualified name. A name bound any other way
(a parameter, an assignment, a loop target, a def) is a local that shadows an import of the
same name, so it resolves to nothing: rules then stay silent, which is the precise choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from .walk import child_nodes

ScopeNode = Union[cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef]


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: List[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _import_from_module(node: cst.ImportFrom) -> Optional[str]:
    if node.relative:  # relative imports name the user's own package, never torch
        return None
    if node.module is None:
        return None
    return dotted_name(node.module)


@dataclass
class Scope:
    """The bindings of one scope."""

    node: ScopeNode
    parent: Optional["Scope"]
    # name -> qualified name, for names bound (only) by imports.
    imports: Dict[str, str] = field(default_factory=dict)
    # name -> the values it is assigned; None stands for a binding that is not `name = expr`.
    bindings: Dict[str, List[Optional[cst.BaseExpression]]] = field(default_factory=dict)
    # names declared `global`/`nonlocal` here: they are not local to this scope.
    declared_outer: Set[str] = field(default_factory=set)
    # names whose value is changed in place here (`kw["k"] = v`, `kw.update(...)`): a
    # literal they were bound to no longer tells their value.
    mutated: Set[str] = field(default_factory=set)
    # those of them whose own attribute or item is written or whose own method changes
    # them (`x.a = v`, `x[k] = v`, `x.update()`), not only an object they hold (`x.a.b = v`)
    changed_itself: Set[str] = field(default_factory=set)
    is_class: bool = False

    def bind(self, name: str, value: Optional[cst.BaseExpression] = None) -> None:
        self.bindings.setdefault(name, []).append(value)

    def binds_in_chain(self, name: str) -> bool:
        """Whether this scope or any around it (class bodies included) binds or imports
        ``name``: when none does, a bare ``name`` is the builtin."""
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.bindings or name in scope.imports:
                return True
            scope = scope.parent
        return False

    def lookup_import(self, name: str) -> Optional[str]:
        """The qualified name ``name`` refers to from this scope, if it is an import."""
        scope: Optional[Scope] = self
        first = True
        while scope is not None:
            # Class bodies do not enclose the functions defined in them.
            if scope.is_class and not first:
                scope = scope.parent
                continue
            first = False
            # `global x` at module level changes nothing (the module scope is the global
            # one): only a function's or class's declaration sends the lookup there.
            if name in scope.declared_outer and scope.parent is not None:
                scope = _module_scope(scope)
                first = True
                continue
            if name in scope.bindings and not (
                name in scope.imports and _only_none(scope.bindings[name])
            ):
                return None  # a local that shadows any import
            if name in scope.imports:
                return scope.imports[name]
            scope = scope.parent
        return None

    def visible(self) -> Iterator["Scope"]:
        """This scope and the ones around it whose names it sees, innermost first: a class
        body does not enclose the functions defined in it."""
        scope: Optional[Scope] = self
        while scope is not None:
            if scope is self or not scope.is_class:
                yield scope
            scope = scope.parent

    def binder(self, name: str) -> Optional[Tuple["Scope", List[Optional[cst.BaseExpression]]]]:
        """The innermost visible scope that binds ``name``, with its bindings (None where the
        binding is not a plain value); None when an import or a ``global``/``nonlocal``
        declaration reaches the name first, or nothing binds it."""
        for scope in self.visible():
            if name in scope.imports or name in scope.declared_outer:
                return None
            values = scope.bindings.get(name)
            if values is not None:
                return scope, values
        return None

    def lookup_value(self, name: str, same_object: bool = False) -> Optional[cst.BaseExpression]:
        """The expression ``name`` is bound to, if it is bound exactly once to one.
        ``same_object``: the object it names is asked about (which loader it is), so a
        change inside an object it holds (`loader.dataset.offset = n`) does not matter."""
        for scope in self.visible():
            if name in scope.declared_outer:
                return None
            if name in scope.imports:
                return None
            values = scope.bindings.get(name)
            if values is not None:
                if _is_mutated(scope, name, same_object):
                    return None
                if len(values) == 1 and values[0] is not None:
                    if scope.parent is None and name in _globals_rebound(scope):
                        return None
                    return values[0]
                return None
        return None


def binds_below_module(scope: Scope, name: str) -> bool:
    """A function or class scope from ``scope`` up (class bodies only as the innermost
    scope, as Python looks names up) binds ``name``: it is not the module-level name, the
    one the project index resolves."""
    for current in scope.visible():
        if current.parent is None:
            return False
        if name in current.bindings or name in current.imports or name in current.declared_outer:
            return True
    return False


def _is_mutated(scope: Scope, name: str, itself: bool = False) -> bool:
    """Whether any statement in the file changes ``name`` in place (by name: conservative);
    ``itself``: its own attributes or items, not an object it holds."""
    if name in (scope.changed_itself if itself else scope.mutated):
        return True
    module = _module_scope(scope)
    everywhere = getattr(module, "_mutated_anywhere", None)
    if everywhere is None:
        collector = Scope(node=module.node, parent=None)
        for stmt in _small_statements(module.node):
            if isinstance(stmt, (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
                _scan_small(collector, stmt)
        everywhere = (collector.mutated, collector.changed_itself)
        setattr(module, "_mutated_anywhere", everywhere)
    return name in everywhere[1 if itself else 0]


_STATEMENT_CONTAINERS = (
    cst.Module, cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.Finally, cst.ExceptHandler,
)


def _small_statements(root: cst.CSTNode):
    """Every small statement in the tree, nested functions and classes included."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            yield from node.body
        elif isinstance(node, cst.SimpleStatementSuite):
            yield from node.body
        elif isinstance(node, _STATEMENT_CONTAINERS) or type(node).__name__ in ("MatchCase", "ExceptStarHandler"):
            stack.extend(child for child in child_nodes(node) if isinstance(child, (cst.BaseStatement, cst.BaseSuite, cst.Else, cst.Finally, cst.ExceptHandler)) or type(child).__name__ in ("MatchCase", "ExceptStarHandler", "If"))


def _only_none(values: List[Optional[cst.BaseExpression]]) -> bool:
    """``torch = None`` beside ``import torch`` (an optional import) does not shadow it."""
    return all(isinstance(v, cst.Name) and v.value == "None" for v in values)


def _module_scope(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def _globals_rebound(module_scope: Scope) -> Set[str]:
    cached = getattr(module_scope, "_globals_cache", None)
    if cached is None:
        cached = set()
        for node in _walk_all(module_scope.node):
            if isinstance(node, cst.Global):
                cached.update(n.name.value for n in node.names)
        setattr(module_scope, "_globals_cache", cached)
    return cached


def declared_global(module_scope: Scope, name: str) -> bool:
    """Some function of the module declares ``name`` ``global`` (and may rebind it)."""
    return name in _globals_rebound(module_scope)


def _walk_all(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))


def _bind_target(scope: Scope, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
    for name, bound in _bound_names(target, value):
        scope.bind(name, bound)


def _bound_names(
    target: cst.BaseExpression, value: Optional[cst.BaseExpression]
) -> Iterator[Tuple[str, Optional[cst.BaseExpression]]]:
    """The names an assignment target binds, each with its value when the target is a plain
    name (``a``, ``(a, *b)``; ``x.a`` and ``x[a]`` bind no name)."""
    if isinstance(target, cst.Name):
        yield target.value, value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound_names(element.value, None)
    elif isinstance(target, cst.StarredElement):
        yield from _bound_names(target.value, None)


# Comprehensions have a scope of their own: their loop variables shadow outer names there.
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def comprehension_binds(path: Sequence[cst.CSTNode], name: str) -> bool:
    """Whether a comprehension on ``path`` (from the module down to a node) binds ``name``
    as a loop variable where the node stands: ``nn`` in ``[nn.DataParallel(m) for nn in
    libs]``. The outermost iterable is evaluated outside and sees the enclosing names."""
    for index, node in enumerate(path):
        if type(node) not in _COMPREHENSIONS:
            continue
        first = node.for_in  # type: ignore[attr-defined]
        below = path[index + 1 : index + 3]
        if len(below) == 2 and below[0] is first and below[1] is first.iter:
            continue
        for_in: Optional[cst.CompFor] = first
        while for_in is not None:
            if any(bound == name for bound, _ in _bound_names(for_in.target, None)):
                return True
            for_in = for_in.inner_for_in
    return False





# Methods that change their object in place: a name they are called on is "mutated".
MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "append", "extend", "insert", "remove", "__setitem__"})


def _base_name(expr: cst.BaseExpression) -> Optional[str]:
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _note_mutation(scope: Scope, target: cst.BaseExpression) -> None:
    if isinstance(target, (cst.Subscript, cst.Attribute)):
        name = _base_name(target)
        if name is not None:
            scope.mutated.add(name)
            owner = target.value
            if isinstance(owner, cst.Attribute) and owner.attr.value == "__dict__":
                owner = owner.value  # `x.__dict__[k] = v`, `x.__dict__.update(...)`: x's own attributes
            if isinstance(owner, cst.Name):
                scope.changed_itself.add(name)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _note_mutation(scope, element.value)


def _scan_small(scope: Scope, stmt: cst.BaseSmallStatement) -> None:
    if type(stmt) is cst.Expr:
        call = stmt.value
        if (
            type(call) is cst.Call
            and type(call.func) is cst.Attribute
            and call.func.attr.value in MUTATORS
        ):
            _note_mutation(scope, call.func)
        return
    if type(stmt) in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del):
        targets = [t.target for t in stmt.targets] if type(stmt) is cst.Assign else [stmt.target]
        for target in targets:
            _note_mutation(scope, target)
    if type(stmt) is cst.Import:
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                scope.imports[alias.asname.name.value] = full
            else:
                top = full.split(".")[0]
                scope.imports[top] = top
    elif type(stmt) is cst.ImportFrom:
        module = _import_from_module(stmt)
        if type(stmt.names) is cst.ImportStar:
            return
        for alias in stmt.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            if module is None:
                scope.bind(local, None)  # a relative import: the user's own code
            else:
                scope.imports[local] = f"{module}.{name}"
    elif type(stmt) is cst.Assign:
        single = len(stmt.targets) == 1
        for target in stmt.targets:
            _bind_target(scope, target.target, stmt.value if single else None)
    elif type(stmt) is cst.AnnAssign:
        _bind_target(scope, stmt.target, stmt.value)
    elif type(stmt) is cst.AugAssign:
        _bind_target(scope, stmt.target, None)
    elif type(stmt) in (cst.Global, cst.Nonlocal):
        scope.declared_outer.update(n.name.value for n in stmt.names)
    elif type(stmt) is cst.Del:
        _bind_target(scope, stmt.target, None)


def _scan_block(scope: Scope, body: Sequence[cst.CSTNode]) -> None:
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                _scan_small(scope, small)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            scope.bind(stmt.name.value, None)
        elif isinstance(stmt, cst.BaseCompoundStatement):
            if isinstance(stmt, cst.For):
                _bind_target(scope, stmt.target, None)
            elif isinstance(stmt, cst.With):
                for item in stmt.items:
                    if item.asname is not None:
                        _bind_target(scope, item.asname.name, None)
            elif isinstance(stmt, cst.Try) or isinstance(stmt, getattr(cst, "TryStar", cst.Try)):
                for handler in stmt.handlers:
                    if handler.name is not None and isinstance(handler.name.name, cst.Name):
                        scope.bind(handler.name.name.value, None)
            _scan_compound_children(scope, stmt)


def _scan_compound_children(scope: Scope, stmt: cst.BaseCompoundStatement) -> None:
    for child in child_nodes(stmt):
        if isinstance(child, cst.BaseSuite):
            body = child.body
            if isinstance(child, cst.SimpleStatementSuite):
                for small in body:
                    _scan_small(scope, small)
            else:
                _scan_block(scope, body)
        elif isinstance(child, (cst.Else, cst.Finally, cst.ExceptHandler, cst.If)):
            if isinstance(child, cst.ExceptHandler) and child.name is not None:
                if isinstance(child.name.name, cst.Name):
                    scope.bind(child.name.name.value, None)
            if isinstance(child, cst.If):
                _scan_compound_children(scope, child)
            else:
                _scan_compound_children(scope, child)  # type: ignore[arg-type]
        elif getattr(cst, "MatchCase", None) is not None and isinstance(child, cst.MatchCase):
            _scan_compound_children(scope, child)  # type: ignore[arg-type]


def _bind_params(scope: Scope, params: cst.Parameters) -> None:
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        scope.bind(param.name.value, None)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            scope.bind(star.name.value, None)


def build_scope(node: ScopeNode, parent: Optional[Scope]) -> Scope:
    """Scan the statements of one scope (not nested functions or classes)."""
    scope = Scope(node=node, parent=parent, is_class=isinstance(node, cst.ClassDef))
    if isinstance(node, cst.Module):
        _scan_block(scope, node.body)
    elif isinstance(node, cst.Lambda):
        _bind_params(scope, node.params)
    else:
        if isinstance(node, cst.FunctionDef):
            _bind_params(scope, node.params)
        body = node.body
        if isinstance(body, cst.SimpleStatementSuite):
            for small in body.body:
                _scan_small(scope, small)
        else:
            _scan_block(scope, body.body)
    return scope


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """The plain names an assignment or loop target binds (``a``, ``(a, [b, *c])``)."""
    return (leaf.value for leaf, _ in target_leaves(target) if isinstance(leaf, cst.Name))


def target_leaves(target: cst.BaseExpression) -> Iterator[Tuple[cst.BaseExpression, bool]]:
    """The targets an assignment or loop target binds, unpacked (``a``, ``self.x``, ``d[k]``
    in ``(a, [self.x, *d[k]])``), each with whether it is bound directly (not by unpacking)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from ((leaf, False) for leaf, _ in target_leaves(element.value))
    elif isinstance(target, cst.StarredElement):
        yield from ((leaf, False) for leaf, _ in target_leaves(target.value))
    else:
        yield target, True
