"""The names one scope binds, where, and to what form: what the value engine reads a local
name through (``values``).

Built from a function's (or a module's) ``ast`` statements with ``statements``' walk and
``forms``' builder, for the linted file and for any project module alike. A name read at a
line holds the value of its latest binding before that line in a block around the read
(``x = np.array(x)`` after ``x = zip(*batch)``), unless another binding of it lies between
them, or in a loop around the read that the binding is not in; a name bound once holds
that value everywhere. Anything else is not known.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..analysis.ast_index import ast_children
from .forms import BinOp, Call, Form, FormBuilder, Item, Lit, Ref, Seq
from .forms import Dict as DictForm
from .appended_lists import Appended, Collected, appended  # ``Appended`` re-exported
from .loop_flow import other_arm, overwritten, reaching_back
from .records import written
from .statements import alias_target, global_statements, import_records, scope_statements, target_names

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Entry forms of names bound by a ``def``/``class`` and by an import: at module level the
# index resolves them; in a function they are not values the engine follows.
DEFINED = "<defined>"
IMPORTED = "<imported>"
PASSED = "<passed>"  # in ``Branches``: a parameter's value as its callers pass it
ANY_ATTRIBUTE = "*"  # an own attribute set by a name not written out (``setattr(self, k, v)``)
DEEP = 12  # how deep the engine's own forms go (summaries keep theirs shallower)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Compound statements and their bodies (as ``statements._BODIES``, plus handlers).
_FIELDS = ("body", "orelse", "finalbody")
_COMPREHENSIONS = {ast.ListComp: "list", ast.SetComp: "set", ast.DictComp: "dict", ast.GeneratorExp: "generator"}


@dataclass(frozen=True)
class Each:
    """An element of ``iterable`` (``for x in loader``: ``x``); dispatched to ``__iter__``."""

    iterable: Form


@dataclass(frozen=True)
class Comprehension:
    """A comprehension bound to a name (``loaders = {k: DataLoader(...) for k in keys}``):
    ``element`` read in ``scope`` (its targets: elements of what it walks); ``kind``:
    ``dict``, ``list``, ``set`` or ``generator``."""

    scope: "Scope"
    element: Form
    kind: str


@dataclass(frozen=True)
class Branches:
    """One of several bindings reaches a read (``if``/``else`` arms): their forms and lines.
    ``carried``: some come from a later pass of a loop around the read (the engine cuts a
    binding that reads itself)."""

    forms: Tuple[Tuple[object, int], ...]
    carried: bool = False


@dataclass(frozen=True)
class Known:
    """A value the engine already knows (a nested function's parameter, bound to what one
    call passes: ``ValueEngine._call_local``)."""

    kind: object


@dataclass(frozen=True)
class Test:
    """An ``if`` test the engine can decide: ``value == text`` (``equal``) or ``!=``."""

    value: Form
    text: str
    equal: bool


@dataclass(frozen=True)
class Entry:
    """One binding of a name: its line, the blocks around it (outermost first, as
    ``(id(statement), field)``; loops are marked), and its form (None: not known)."""

    line: int
    blocks: Tuple[Tuple[int, str], ...]
    form: Optional[object]


@dataclass
class Scope:
    """A function's or module's bindings. ``params``: parameter names in order (a method's
    first is its instance); ``owner``: ``(path, qualified name)`` of the project function
    or method this is, for its callers; ``aliases``: imports visible here."""

    path: Optional[str]
    owner: Optional[str]
    params: Tuple[str, ...]
    aliases: Mapping[str, str]
    entries: Dict[str, List[Entry]] = field(default_factory=dict)
    returns: List[Tuple[int, Tuple[Tuple[int, str], ...], Form]] = field(default_factory=list)
    generator: bool = False
    yields: List[Tuple[int, Tuple[Tuple[int, str], ...], object]] = field(default_factory=list)  # `yield x`, `yield from xs` (Each)
    # (line, attribute, form or None) of ``self.attr = value`` (first parameter ``self``)
    own_attrs: List[Tuple[int, Tuple[Tuple[int, str], ...], str, Optional[Form]]] = field(default_factory=list)
    loops: Dict[int, Tuple[int, int]] = field(default_factory=dict)  # id -> line span
    loop_nodes: Dict[int, ast.stmt] = field(default_factory=dict)  # id -> the loop (``loop_flow``)
    straight: Dict[object, bool] = field(default_factory=dict)  # ``loop_flow``'s memo
    # id of an if/else or try/except -> its blocks: binding in each of them binds on every path
    alternatives: Dict[int, Tuple[Tuple[int, str], ...]] = field(default_factory=dict)
    statements: List[Tuple[int, int, Tuple[Tuple[int, str], ...]]] = field(default_factory=list)
    module: bool = False
    mutated: set = field(default_factory=set)  # names a statement changes in place
    inline: bool = False  # a comprehension: the scope around it is read at the same line
    node: Optional[ast.AST] = None  # the ``ast`` it was built from (in-place writes are read there)
    appends: Dict[str, List[Tuple[int, Tuple[Tuple[int, str], ...], Form]]] = field(default_factory=dict)  # `xs.append(a)`
    tests: Dict[int, Tuple[int, ast.expr]] = field(default_factory=dict)  # id of an `if` -> (line, its test), read on demand
    uses: Optional[Dict[str, List[Tuple[int, bool]]]] = None  # ``list_uses``, read on demand
    item_writes: Dict[str, List[Tuple[int, Optional[ast.expr], Optional[ast.expr]]]] = field(default_factory=dict)  # `d[k] = v` (None: changed otherwise)
    filled: Dict[Tuple[str, int], object] = field(default_factory=dict)  # ``_filled``'s memo

    def binds(self, name: str) -> bool:
        return name in self.entries or name in self.params

    def blocks_at(self, line: int) -> Tuple[Tuple[int, str], ...]:
        """The blocks around the innermost statement that holds ``line``."""
        best: Tuple[Tuple[int, str], ...] = ()
        best_span = None
        for start, end, blocks in self.statements:
            if start <= line <= end and (best_span is None or end - start <= best_span):
                best, best_span = blocks, end - start
        return best

    def value_at(self, name: str, line: int) -> Tuple[str, Optional[object], int]:
        """``("value", form, line bound)`` when the name's value at ``line`` is one known
        binding; ``("param", None, 0)`` for a parameter not rebound; ``("free", None, 0)``
        when this scope does not bind it; else ``("unknown", None, 0)``."""
        entries = self.entries.get(name)
        if not entries:
            return ("param", None, 0) if name in self.params else ("free", None, 0)
        if all(e.form is IMPORTED for e in entries) or (len(entries) == 1 and entries[0].form is DEFINED):
            return ("defined", None, 0) if self.module else ("unknown", None, 0)
        built = appended(self, name, entries, line)
        if built is not None:
            return ("value", built, line) if type(built) in (Appended, Collected) else ("unknown", None, 0)
        changed = name in self.mutated  # a list or dict display changed in place since: not known
        if len(entries) == 1 and name not in self.params:
            entry = entries[0]
            if changed and (filled := self._filled(name, entry)) is not None:
                return ("value", filled, entry.line)  # a dict filled by item writes (``records``)
            usable = entry.form is not None and entry.form is not DEFINED and not (changed and mutable_display(entry.form))
            return ("value", entry.form, entry.line) if usable else ("unknown", None, 0)
        here = self.blocks_at(line)
        before = [e for e in entries if e.line < line]
        enclosing = [e for e in before if e.blocks == here[: len(e.blocks)]]
        passed = not enclosing and name in self.params  # the parameter's own value may reach the read
        if passed and line <= 0:
            return ("unknown", None, 0)  # a closure reads the parameter's last value
        start = before.index(enclosing[-1]) if enclosing else 0
        reaching = before[start:]  # the latest binding around the read, and those in branches after it
        if len(reaching) > 1:  # not from the other arm of an `if` around the read
            first = reaching[:1] if enclosing else []  # (round a loop it is ``carried``)
            reaching = [*first, *(e for e in reaching[len(first):] if not other_arm(e.blocks, here, self.tests))]
        if enclosing and len(reaching) > 1 and overwritten(self, reaching[0], line, name):
            reaching = reaching[1:]  # an `if`/`else` after it rebinds it (or raises) on every path
        if passed:
            reaching = [Entry(0, (), PASSED), *reaching]  # `if c: x = f(x)`: either reaches
        if not reaching or any(e.form is None or e.form is DEFINED or e.form is IMPORTED for e in reaching):
            return ("unknown", None, 0)
        outer = len(enclosing[-1].blocks) if enclosing else 0
        carried: List[Entry] = []
        for block, _ in here[outer:]:  # loops around the read that the binding is not in
            span = self.loops.get(block)
            if span is not None:
                found = [e for e in entries if span[0] <= e.line <= span[1] and e not in reaching and e not in carried]
                carried += reaching_back(self, block, found, entries)  # not those a later line overwrites
        if any(e.form is None or e.form is DEFINED or e.form is IMPORTED for e in carried):
            return ("unknown", None, 0)  # rebound later in a loop around the read, unknowably
        if changed and any(mutable_display(e.form) for e in (*reaching, *carried)):  # only a display that may reach the read
            filled = self._filled(name, reaching[0]) if len(reaching) == 1 and not carried else None
            return ("value", filled, reaching[0].line) if filled is not None else ("unknown", None, 0)
        if carried and not passed and self._covers(reaching, here):
            carried = []  # every path to the read rebinds it first (`try: x = next(it) except ...: x = ...`)
        if carried:  # rebound later in a loop around the read: any of them may reach it
            return ("value", Branches(tuple((e.form, e.line) for e in (*reaching, *carried)), carried=True), line)
        if len(reaching) > 1:
            return ("value", Branches(tuple((e.form, e.line) for e in reaching)), line)
        latest = reaching[0]
        if latest.form is PASSED:
            return ("param", None, 0)
        return ("value", latest.form, latest.line)


    def _filled(self, name: str, entry: Entry) -> object:
        """The ``records.Written`` form of a dict display filled by item writes (None: not one)."""
        key = (name, entry.line)
        if key not in self.filled:
            self.filled[key] = written(entry.form, self.item_writes.get(name), self.aliases)
        return self.filled[key]

    def imported_at(self, name: str, line: int) -> bool:
        """Whether the name's only binding before ``line`` is an import around the read,
        and no other binding of it stands in a loop around the read (``from torch.utils
        import data`` read before a later ``for data in loader:`` rebinds it)."""
        entries = self.entries.get(name, ())
        before = [e for e in entries if e.line < line]
        if len(before) != 1 or before[0].form is not IMPORTED:
            return False
        here = self.blocks_at(line)
        if before[0].blocks != here[: len(before[0].blocks)]:
            return False
        spans = [self.loops[block] for block, _ in here if block in self.loops]
        return not any(start <= e.line <= end for start, end in spans for e in entries if e is not before[0])

    def arms(self, line: int, name: str) -> List[Tuple[int, Test, bool]]:
        """The decidable ``if`` tests the binding of ``name`` at ``line`` lies under, each
        with the outcome that leads to it (``body``: true, ``orelse``: false)."""
        entry = next((e for e in self.entries.get(name, ()) if e.line == line), None)
        out = []
        for statement, part in entry.blocks if entry is not None else ():
            found = self.tests.get(statement)
            test = _test(found[1], FormBuilder(self.aliases, DEEP)) if found is not None and part in ("body", "orelse") else None
            if test is not None:
                out.append((found[0], test, part == "body"))  # type: ignore[index]
        return out

    def _covers(self, reaching: List[Entry], here: Tuple[Tuple[int, str], ...]) -> bool:
        """Whether the bindings bind on every path through one if/else or try/except that
        stands in a block around the read (each of its blocks holds one of them, or an
        if/else in it that does: an `elif` without `else` does not)."""
        return any(self._covered(statement, here, reaching) for statement in _statements_in(here, reaching))

    def _covered(self, statement: int, around: Tuple[Tuple[int, str], ...], reaching: List[Entry]) -> bool:
        arms = self.alternatives.get(statement)
        for arm in arms or ():
            inside = (*around, arm)
            if not any(e.blocks == inside for e in reaching) and not any(self._covered(s, inside, reaching) for s in _statements_in(inside, reaching)):
                return False
        return bool(arms)


def free(where, name: str) -> bool:
    """Whether no scope around ``where`` (the engine's ``Where``: a scope and the ``Where``
    around it) binds ``name``: a builtin, then."""
    current = where
    while current is not None:
        if current.scope is not None and current.scope.binds(name):
            return False
        current = current.parent
    return True


def mutable_display(form: object) -> bool:
    """A list, set or dict display: code may change it in place after binding it."""
    return type(form) is DictForm or (type(form) is Seq and form.kind != "tuple")  # type: ignore[union-attr]


def build_scope(node: ast.AST, aliases: Mapping[str, str], path: Optional[str], owner: Optional[str]) -> Scope:
    """The scope of a ``def`` node, or of a module (``ast.Module``)."""
    if isinstance(node, (ast.Module, ast.ClassDef)):
        params: Tuple[str, ...] = ()
        body = node.body
    else:
        args = node.args  # type: ignore[attr-defined]
        params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        params += tuple(a.arg for a in (args.vararg, args.kwarg) if a is not None)
        body = node.body  # type: ignore[attr-defined]
    local: Dict[str, str] = {}
    scope = Scope(path, owner, params, local, module=isinstance(node, ast.Module), node=node)
    own = None if isinstance(node, (ast.Module, ast.ClassDef)) or not params else params[0]
    statements = scope_statements(body)
    targets: Dict[str, set] = {}
    other: set = set(params)
    for stmt in statements:
        kind = type(stmt)
        if kind is ast.Import or kind is ast.ImportFrom:
            for record in import_records(stmt, scope.module):
                if not record.star:
                    targets.setdefault(record.bound, set()).add(alias_target(record))
        elif kind in _DEFS or kind is ast.ClassDef:
            other.add(stmt.name)  # type: ignore[attr-defined]
        else:
            for target in (*getattr(stmt, "targets", ()), getattr(stmt, "target", None)):
                if target is not None:
                    other.update(target_names(target))
            for item in getattr(stmt, "items", ()):
                if item.optional_vars is not None:
                    other.update(target_names(item.optional_vars))
    # The outer imports, unless bound here; this scope's own, where every binding of the
    # name is the same import (a ``try``/``except`` fallback to another module is not).
    local.update((name, target) for name, target in aliases.items() if name not in other and name not in targets)
    for name, found in targets.items():
        if len(found) == 1 and None not in found and name not in other:
            local[name] = next(iter(found))  # type: ignore[assignment]
    _walk(body, (), scope, own, [])
    if scope.module:  # a function's `global NAME` may rebind it at any time
        for sub in global_statements(body):
            for name in sub.names:
                scope.entries[name] = [Entry(e.line, e.blocks, None) for e in scope.entries.get(name, [])]
    return scope



def _walk(body: Sequence[ast.stmt], blocks: Tuple[Tuple[int, str], ...], scope: Scope, own: Optional[str], imports: List[ast.stmt]) -> None:
    builder = FormBuilder(scope.aliases, DEEP)
    for stmt in body:
        line = stmt.lineno
        scope.statements.append((line, getattr(stmt, "end_lineno", None) or line, blocks))
        kind = type(stmt)
        if kind is ast.Assign:
            for target in stmt.targets:  # type: ignore[attr-defined]
                _bind(target, stmt.value, line, blocks, scope, own, builder)  # type: ignore[attr-defined]
        elif kind is ast.AnnAssign and stmt.value is not None:  # type: ignore[attr-defined]
            _bind(stmt.target, stmt.value, line, blocks, scope, own, builder)  # type: ignore[attr-defined]
        elif kind is ast.AugAssign:
            target = stmt.target  # type: ignore[attr-defined]
            if type(target) is ast.Name:
                form = BinOp(type(stmt.op).__name__ + "=", Ref(target.id), builder.form(stmt.value))  # type: ignore[attr-defined]  # "Mult=": in place
                _add(scope, target.id, Entry(line, blocks, form))
            elif type(target) is ast.Subscript and type(target.value) is ast.Name:  # `d[k] += v`
                scope.item_writes.setdefault(target.value.id, []).append((line, None, None))  # type: ignore[attr-defined]
        elif kind is ast.Return:
            scope.returns.append((line, blocks, builder.form(stmt.value)))  # type: ignore[attr-defined]
        elif kind is ast.Expr and type(stmt.value) in (ast.Yield, ast.YieldFrom):  # type: ignore[attr-defined]
            scope.generator = True
            value = builder.form(stmt.value.value)  # type: ignore[attr-defined]
            scope.yields.append((line, blocks, value if type(stmt.value) is ast.Yield else Each(value)))  # type: ignore[attr-defined]
        elif kind is ast.Expr and own is not None and _sets_any(stmt.value, own):  # type: ignore[attr-defined]
            scope.own_attrs.append((line, blocks, ANY_ATTRIBUTE, None))  # `setattr(self, name, v)`: any attribute
        elif kind is ast.Expr and type(stmt.value) is ast.Call and type(stmt.value.func) is ast.Attribute:  # type: ignore[attr-defined]
            receiver = stmt.value.func.value  # type: ignore[attr-defined]
            if type(receiver) is ast.Name:
                scope.mutated.add(receiver.id)  # `xs.append(...)`
                scope.item_writes.setdefault(receiver.id, []).append((line, None, None))
                call = stmt.value  # type: ignore[attr-defined]
                if call.func.attr == "append" and len(call.args) == 1 and not call.keywords and type(call.args[0]) is not ast.Starred:
                    scope.appends.setdefault(receiver.id, []).append((line, blocks, builder.form(call.args[0])))
        elif kind in _DEFS or kind is ast.ClassDef:
            _add(scope, stmt.name, Entry(line, blocks, DEFINED))  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            for record in import_records(stmt, scope.module):
                if not record.star:  # in a function: the record, resolved where it is read
                    _add(scope, record.bound, Entry(line, blocks, IMPORTED if scope.module else record))
        elif kind is ast.Global or kind is ast.Nonlocal or kind is ast.Delete:
            names = stmt.names if kind is not ast.Delete else [n for t in stmt.targets for n in target_names(t)]  # type: ignore[attr-defined]
            for name in names:
                _add(scope, name, Entry(line, blocks, None))
        if kind in _LOOPS:
            scope.loops[id(stmt)] = (line, getattr(stmt, "end_lineno", None) or line)
            scope.loop_nodes[id(stmt)] = stmt
        elif kind is ast.If and stmt.orelse:  # type: ignore[attr-defined]
            scope.alternatives[id(stmt)] = ((id(stmt), "body"), (id(stmt), "orelse"))
        if kind is ast.If:
            scope.tests[id(stmt)] = (line, stmt.test)  # type: ignore[attr-defined]
        elif kind is ast.Try and stmt.handlers and not stmt.orelse and not stmt.finalbody:  # type: ignore[attr-defined]
            scope.alternatives[id(stmt)] = ((id(stmt), "body"), *((id(h), "body") for h in stmt.handlers))  # type: ignore[attr-defined]
        if kind in (ast.For, ast.AsyncFor):
            iterable = builder.form(stmt.iter)  # type: ignore[attr-defined]
            target = stmt.target  # type: ignore[attr-defined]
            form = Each(iterable)
            inner = blocks + ((id(stmt), "body"),)
            unpack_target(target, form, line, inner, scope)
        elif kind in (ast.With, ast.AsyncWith):
            for item in stmt.items:  # type: ignore[attr-defined]
                target = item.optional_vars
                if type(target) is ast.Name:
                    entered = builder.form(item.context_expr)
                    _add(scope, target.id, Entry(line, blocks, Call(Ref("<enter>"), (entered,))))
                elif target is not None:
                    for name in target_names(target):
                        _add(scope, name, Entry(line, blocks, None))
        for name in _FIELDS:
            inner_body = getattr(stmt, name, None)
            if isinstance(inner_body, list) and inner_body and isinstance(inner_body[0], ast.stmt) and kind not in _DEFS and kind is not ast.ClassDef:
                _walk(inner_body, blocks + ((id(stmt), name),), scope, own, imports)
        for handler in getattr(stmt, "handlers", ()):
            if handler.name:
                _add(scope, handler.name, Entry(handler.lineno, blocks, None))
            _walk(handler.body, blocks + ((id(handler), "body"),), scope, own, imports)
        for case in getattr(stmt, "cases", ()) if kind.__name__ == "Match" else ():
            _walk(case.body, blocks + ((id(case), "body"),), scope, own, imports)
        for header in _headers(stmt, kind):
            for sub in _named_exprs(header):
                if type(sub.target) is ast.Name:
                    _add(scope, sub.target.id, Entry(line, blocks, None))


def _test(test: ast.AST, builder: FormBuilder) -> Optional[Test]:
    """``x == "name"`` / ``x != "name"`` (either side), else None."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) not in (ast.Eq, ast.NotEq):  # type: ignore[attr-defined]
        return None
    left, right = test.left, test.comparators[0]  # type: ignore[attr-defined]
    if type(left) is ast.Constant and isinstance(left.value, str):
        left, right = right, left
    if type(right) is not ast.Constant or not isinstance(right.value, str):
        return None
    return Test(builder.form(left), right.value, type(test.ops[0]) is ast.Eq)  # type: ignore[attr-defined]


def _named_exprs(root: ast.AST) -> List[ast.NamedExpr]:
    """Every ``:=`` in an expression (``ast.walk``'s nodes, walked without its generators:
    every statement of every scope the engine builds is searched)."""
    found: List[ast.NamedExpr] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if type(node) is ast.NamedExpr:
            found.append(node)  # type: ignore[arg-type]
        stack.extend(ast_children(node))
    return found


def _sets_any(value: ast.AST, own: str) -> bool:
    """``setattr(self, name, v)`` with a name not written out, or ``self.__dict__.update(...)``."""
    if type(value) is not ast.Call:
        return False
    func, args = value.func, value.args  # type: ignore[attr-defined]
    if type(func) is ast.Name and func.id == "setattr" and args and type(args[0]) is ast.Name and args[0].id == own:
        return not (len(args) > 1 and type(args[1]) is ast.Constant)
    return type(func) is ast.Attribute and func.attr == "update" and ast.unparse(func.value) == f"{own}.__dict__"


def _headers(stmt: ast.stmt, kind: type) -> List[ast.AST]:
    """The expressions a statement runs itself (not its nested blocks' statements)."""
    if kind in _DEFS or kind is ast.ClassDef:
        return []
    if hasattr(stmt, "body"):
        return [n for n in (getattr(stmt, "test", None), getattr(stmt, "iter", None)) if n is not None]
    return [stmt]


def _bind(target: ast.AST, value: ast.AST, line: int, blocks, scope: Scope, own: Optional[str], builder: FormBuilder) -> None:
    kind = type(target)
    if kind is ast.Name:
        _add(scope, target.id, Entry(line, blocks, _value_form(value, scope, builder)))  # type: ignore[attr-defined]
    elif kind is ast.Subscript and type(target.value) is ast.Name:  # type: ignore[attr-defined]
        scope.mutated.add(target.value.id)  # type: ignore[attr-defined]
        scope.item_writes.setdefault(target.value.id, []).append((line, target.slice, value))  # type: ignore[attr-defined]  # forms built when read
    elif kind is ast.Attribute:
        if own is not None and type(target.value) is ast.Name and target.value.id == own:  # type: ignore[attr-defined]
            scope.own_attrs.append((line, blocks, target.attr, builder.form(value)))  # type: ignore[attr-defined]
    elif kind in (ast.Tuple, ast.List):
        elts = target.elts  # type: ignore[attr-defined]
        starred = any(type(e) is ast.Starred for e in elts)
        source = builder.form(value)
        for position, elt in enumerate(elts):
            if starred or type(elt) is not ast.Name:
                for name in target_names(elt):
                    _add(scope, name, Entry(line, blocks, None))
                if not starred and type(elt) in (ast.Attribute, ast.Tuple, ast.List):
                    _bind(elt, ast.Subscript(value=value, slice=ast.Constant(position)), line, blocks, scope, own, builder)
                continue
            _add(scope, elt.id, Entry(line, blocks, Item(source, Lit(position))))


def _value_form(value: ast.AST, scope: Scope, builder: FormBuilder) -> object:
    """The form of an assigned value; a comprehension's element, read in a scope of its own."""
    kind = _COMPREHENSIONS.get(type(value))
    if kind is None:
        return builder.form(value)
    inner = Scope(scope.path, None, (), scope.aliases, inline=True)
    for generator in value.generators:  # type: ignore[attr-defined]
        unpack_target(generator.target, Each(builder.form(generator.iter)), 0, (), inner)
    element = value.value if kind == "dict" else value.elt  # type: ignore[attr-defined]
    return Comprehension(inner, builder.form(element), kind)


def unpack_target(target: ast.AST, form: object, line: int, blocks, scope: Scope) -> None:
    """Bind a loop target to ``form``: a name to it, a tuple's names to its items
    (``for i, (x, y) in enumerate(loader)``); starred or other targets are not known."""
    if type(target) is ast.Name:
        _add(scope, target.id, Entry(line, blocks, form))  # type: ignore[attr-defined]
    elif type(target) in (ast.Tuple, ast.List) and not any(type(e) is ast.Starred for e in target.elts):  # type: ignore[attr-defined]
        for position, elt in enumerate(target.elts):  # type: ignore[attr-defined]
            unpack_target(elt, Item(form, Lit(position)), line, blocks, scope)  # type: ignore[arg-type]
    else:
        for name in target_names(target):
            _add(scope, name, Entry(line, blocks, None))


def _add(scope: Scope, name: str, entry: Entry) -> None:
    scope.entries.setdefault(name, []).append(entry)


def expression_form(node: ast.AST, scope: Scope) -> Form:
    """The form of an ``ast`` expression read in ``scope`` (its imports qualify names)."""
    return FormBuilder(scope.aliases, DEEP).form(node)


def _statements_in(block: Tuple[Tuple[int, str], ...], reaching: List[Entry]) -> set:
    """The compound statements standing in ``block`` that hold one of the bindings."""
    return {e.blocks[len(block)][0] for e in reaching if len(e.blocks) > len(block) and e.blocks[: len(block)] == block}
