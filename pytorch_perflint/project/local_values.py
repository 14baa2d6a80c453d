"""What a function's own names hold when the engine follows them through the function's
own statements (mixed into ``values.ValueEngine`` as ``LocalFlow``):

* an import inside a function (``import models.wideresnet as models`` in one arm of an
  ``if``, another module in the next) binds its record; read at a line, the record that
  reaches it is resolved as a module-level import of that module would be;
* a call of a function defined inside the caller's function (``def create_model(args):``
  in ``main``) is read at that call: its parameters hold what the call passes (``Known``;
  defaults read where the ``def`` stands, ``*args`` / ``**kwargs`` unknown), its returns
  are read in its own scope inside the caller's (a closure sees the names bound once);
* an arm of an ``if``/``elif`` whose test the engine decides (``args.arch == 'resnext'``
  with ``args.arch`` the command-line default ``'wideresnet'``) is not taken: its bindings
  do not reach a read after the chain (``open_arms``). A test it cannot decide keeps both.
"""

from __future__ import annotations

import ast
from typing import Any, List, Optional, Set, Tuple

from .generators import generated
from .forms import Call, FormBuilder
from .kinds import UNKNOWN, Kind, Text
from .scopes import DEEP, DEFINED, Entry, Known, Scope, build_scope
from .summary import ImportRecord

_MAX_INLINE = 4  # nested calls read inside one another, at most


class LocalFlow:
    """Local imports, nested functions and decided ``if`` tests, for the engine."""

    def _container(self, form: Any, where: Any, depth: int) -> Kind:
        """The forms this module adds (``Known``, a function's ``ImportRecord``), else the
        loaders' (dict displays, comprehensions)."""
        if type(form) is Known:
            return form.kind  # type: ignore[return-value]
        if type(form) is ImportRecord:
            return self._local_import(form, where.path, form.bound, depth)
        return super()._container(form, where, depth)  # type: ignore[misc]

    def _local_import(self, record: ImportRecord, path: Optional[str], dotted: str, depth: int) -> Kind:
        """The value a function's import ``record`` gives to ``dotted`` (its name and members)."""
        index = self.index  # type: ignore[attr-defined]
        if index is None or path is None:
            return UNKNOWN
        head, *parts = dotted.split(".")
        found = index.resolution.imported(path, record)
        kind = self._definition(found, depth) if found is not None and found.kind != "module" else UNKNOWN  # type: ignore[attr-defined]
        for number, part in enumerate(parts):
            if found is not None and (found.kind == "module" or kind is UNKNOWN):
                found = index.resolution.imported(path, record, parts[: number + 1])
                kind = self._definition(found, depth) if found is not None and found.kind != "module" else UNKNOWN  # type: ignore[attr-defined]
            else:
                found = None
                kind = self._attribute(kind, part, depth)  # type: ignore[attr-defined]
        return kind

    def _local_def(self, name: str, where: Any) -> Optional[Tuple[ast.FunctionDef, Any]]:
        """The plain ``def name`` of a function around ``where`` (bound once there), and the
        ``Where`` of that function."""
        current = where
        while current is not None and current.scope is not None and not current.scope.module:
            scope = current.scope
            if scope.binds(name):
                entries = scope.entries.get(name, ())
                if len(entries) != 1 or entries[0].form is not DEFINED or name in scope.params or scope.node is None:
                    return None
                node = _def_at(scope.node, name, entries[0].line)
                return (node, current) if node is not None else None
            current = current.parent
        return None

    def _call_local(self, node: ast.FunctionDef, home: Any, form: Call, where: Any, depth: int) -> Kind:
        """One call of a nested function: its returns, with its parameters what ``form`` passes."""
        inlining: Set[int] = self.__dict__.setdefault("_inlining", set())
        if id(node) in inlining or len(inlining) >= _MAX_INLINE:
            return UNKNOWN
        scope = build_scope(node, home.scope.aliases, home.path, None)
        if not scope.generator and not scope.returns:
            return UNKNOWN
        inlining.add(id(node))
        try:
            for name, kind in _passed(node, form, lambda f: self._eval(f, where, depth + 1), home, self, depth):  # type: ignore[attr-defined]
                scope.entries.setdefault(name, []).insert(0, Entry(node.lineno, (), Known(kind)))
            outer = type(home)(home.path, home.scope, 0, home.parent)
            if scope.generator:  # an iterator of what it yields (as ``values.returns`` reads it)
                return generated(scope, lambda f, line: self._eval(f, type(home)(home.path, scope, line, outer), depth + 1)) if self._scannable() else UNKNOWN  # type: ignore[attr-defined]
            kinds = [self._eval(f, type(home)(home.path, scope, line, outer), depth + 1) for line, _, f in scope.returns]  # type: ignore[attr-defined]
        finally:
            inlining.discard(id(node))
        return self.choose(kinds)  # type: ignore[attr-defined]

    def open_arms(self, scope: Scope, name: str, forms: Tuple, where: Any, depth: int) -> Tuple:
        """The bindings of ``forms`` whose ``if`` arms may be taken (all, when none is left)."""
        if not scope.tests:
            return forms
        decided = {}

        def outcome(line: int, test: Any) -> Optional[bool]:
            key = (line, test)
            if key not in decided:
                value = self._eval(test.value, where.at(line), depth + 1)  # type: ignore[attr-defined]
                known = type(value) is Text and value.value is not None  # type: ignore[union-attr]
                decided[key] = ((value.value == test.text) == test.equal) if known else None  # type: ignore[union-attr]
            return decided[key]

        kept = tuple((f, at) for f, at in forms if all(outcome(line, test) in (None, taken) for line, test, taken in scope.arms(at, name)))
        return kept or forms


def _def_at(root: ast.AST, name: str, line: int) -> Optional[ast.FunctionDef]:
    """The undecorated ``def name`` at ``line`` among ``root``'s own statements."""
    stack: List[ast.AST] = list(getattr(root, "body", ()))
    while stack:
        node = stack.pop()
        if type(node) is ast.FunctionDef and node.lineno == line and node.name == name:  # type: ignore[attr-defined]
            return None if node.decorator_list else node  # type: ignore[return-value,attr-defined]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            stack.extend(getattr(node, field, ()) or ())
    return None


def _passed(node: ast.FunctionDef, form: Call, evaluate, home: Any, engine: Any, depth: int) -> List[Tuple[str, Kind]]:
    """Each parameter a call passes (positionally or by keyword), or its default."""
    args = node.args
    if form.star or form.dstar:
        return []
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    named = set(positional[len(args.posonlyargs):]) | {a.arg for a in args.kwonlyargs}
    out = {positional[i]: evaluate(f) for i, f in enumerate(form.args) if i < len(positional)}
    out.update((k, evaluate(f)) for k, f in form.kwargs if k in named and k not in out)
    builder = FormBuilder(home.scope.aliases, DEEP)
    defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for name, default in defaults:
        if name not in out:
            out[name] = engine._eval(builder.form(default), home.at(node.lineno), depth + 1)
    return list(out.items())
