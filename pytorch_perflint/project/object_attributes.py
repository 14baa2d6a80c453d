"""Attributes of a project object filled by attribute writes at module level (split from
``values``): ``__C = edict()``, ``cfg = __C``, ``__C.GLOBAL = edict()``,
``__C.GLOBAL.DEVICE = torch.device("cuda" ...)`` in a config module, read elsewhere as
``cfg.GLOBAL.DEVICE`` after ``from config import cfg``. The value is the join of every
module-level write of that attribute path in the object's module.

The object must be built at module level by a call of an attribute bag (``EasyDict``,
``SimpleNamespace``, ``argparse.Namespace``) or of a project class with no public methods
(a dict subclass with ``__getattr__``/``__setattr__``), and changed only by those writes:
it is not known when

* its module writes the path (or a prefix of it) in any other way (an item write, an
  augmented assignment, a write inside a function), or hands the object or a prefix of the
  path to a call (``merge(yaml_cfg, __C)``), or calls a method on one (``__C.update(...)``);
* another project module writes an attribute of the path's last name (``x.DEVICE = ...``)
  or calls ``setattr`` with it, or calls a method on, or hands a call, a prefix of the path
  under one of the object's names (``cfg.merge_from_file(...)``, ``merge(cfg)``).

Other modules are read only when they spell the words asked (``ProjectIndex.text_naming``),
and only in projects small enough to scan (the engine's ``_scannable``).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Set, Tuple

from .forms import Call, FormBuilder, Ref
from .kinds import UNKNOWN, Kind, join_all
from .where import Where

if TYPE_CHECKING:
    from .values import ValueEngine

# Attribute bags of libraries: an object of one holds what is written into it.
BAGS = frozenset({"easydict.EasyDict", "types.SimpleNamespace", "argparse.Namespace", "addict.Dict"})
# Methods of a project bag class that do not change what it holds.
_PLAIN_METHODS = frozenset({"__init__", "__getattr__", "__setattr__", "__getitem__", "__setitem__", "__repr__", "__str__", "__getstate__", "__setstate__"})
MAX_WRITES = 8
_IMPORTS = re.compile(r"^[ \t]*(?:from|import)\b[^\n(]*(?:\([^)]*\))?[^\n]*", re.M)
Chain = Tuple[str, ...]


class Writes:
    """What one module does to an object: the module-level writes of each attribute path
    (line, value node; None: written another way) and the paths it may change otherwise."""

    def __init__(self) -> None:
        self.writes: Dict[Chain, List[Tuple[int, Optional[ast.expr]]]] = {}
        self.touched: Set[Chain] = set()  # handed to a call, a method called on it, item-written, written in a function


def written_attribute(engine: "ValueEngine", path: str, dotted: str) -> Optional[Kind]:
    """The kind of ``dotted`` (``cfg.GLOBAL.DEVICE``) read at module level of ``path`` when
    its head is a project object filled by attribute writes (None: not one)."""
    index = engine.index
    head, _, rest = dotted.partition(".")
    if index is None or not rest or not engine._scannable():
        return None
    definition = index.resolve(path, head)
    names = []
    for _ in range(4):  # `cfg = __C`: the name the object is built under
        if definition is None or definition.kind != "binding" or definition.binding is None or definition.path is None:
            return None
        names.append(definition.name)
        form = definition.binding.form
        if type(form) is Ref and form.qualname is None and "." not in form.name:
            definition = index.resolve(definition.path, form.name)
            continue
        break
    if type(form) is not Call or not _bag(engine, definition.path, form):  # type: ignore[union-attr]
        return None
    module = definition.path  # type: ignore[union-attr]
    chain = tuple(rest.split("."))
    found = _writes(engine, module, _names(index.summary(module), definition.name))  # type: ignore[union-attr]
    if found is None or chain not in found.writes:
        return None  # not written at module level: the object's own attributes answer
    key = ("object-attribute", module, definition.name, chain)  # type: ignore[union-attr]
    return engine._memoised(key, lambda: _read(engine, module, definition.name, chain))  # type: ignore[union-attr]


def _bag(engine: "ValueEngine", module: str, form: Call) -> bool:
    """A call that builds an empty attribute bag: a library one, or a project class whose
    only methods are its attribute and item plumbing."""
    func = form.func
    if type(func) is not Ref or form.args or form.star or form.dstar:
        return False
    if func.qualname in BAGS:
        return True
    klass = engine.index.resolve(module, func.name)  # type: ignore[union-attr]
    return klass is not None and klass.kind == "class" and klass.klass is not None and all(m.name in _PLAIN_METHODS for m in klass.klass.methods)


def _read(engine: "ValueEngine", module: str, root: str, chain: Chain) -> Kind:
    index = engine.index
    assert index is not None
    names = _names(index.summary(module), root)
    found = _writes(engine, module, names)
    if found is None:
        return UNKNOWN
    prefixes = {chain[:n] for n in range(len(chain) + 1)}
    if found.touched & prefixes or any(len(found.writes.get(p, ())) > 1 for p in prefixes - {(), chain}):
        return UNKNOWN
    writes = found.writes.get(chain, [])
    if not writes or len(writes) > MAX_WRITES or any(value is None for _, value in writes):
        return UNKNOWN
    if _changed_elsewhere(index, module, names, chain):
        return UNKNOWN
    builder = FormBuilder(dict(index.summary(module).aliases))
    return join_all([engine._eval(builder.form(value), Where(module), 1) for _, value in writes])


def _names(summary, root: str) -> FrozenSet[str]:
    """The module-level names of the object: its own, and those bound to it (``cfg = __C``)."""
    names = {root}
    for _ in range(4):
        more = {b.name for b in summary.bindings if type(b.form) is Ref and b.form.qualname is None and b.form.name in names}
        if more <= names:
            break
        names |= more
    return frozenset(names)


def _writes(engine: "ValueEngine", module: str, names: FrozenSet[str]) -> Optional[Writes]:
    """The object's writes in its module (memoised per index generation)."""
    key = ("object-writes", module, names)
    if key not in engine._scopes:
        text = engine.index.text(module)  # type: ignore[union-attr]
        try:
            tree = ast.parse(text) if text is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        engine._scopes[key] = None if tree is None else _walk(tree, names)
    else:
        engine.index.note_text(module)  # type: ignore[union-attr]  # what reading it noted
    return engine._scopes[key]  # type: ignore[return-value]


def _walk(tree: ast.Module, names: FrozenSet[str]) -> Writes:
    found = Writes()

    def visit(statements, top: bool) -> None:
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for node in ast.walk(stmt):
                    _uses(node, names, found, written_in_function=True)
                continue
            if top and isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    chain = _chain(target, names)
                    if chain is not None and isinstance(target, ast.Attribute):
                        found.writes.setdefault(chain, []).append((stmt.lineno, stmt.value))
                for node in ast.walk(stmt.value):
                    _uses(node, names, found)
                for target in stmt.targets:
                    if not isinstance(target, ast.Attribute):
                        for node in ast.walk(target):
                            _uses(node, names, found)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, top)
            for handler in getattr(stmt, "handlers", ()):
                visit(handler.body, top)
            for case in getattr(stmt, "cases", ()):
                visit(case.body, top)
            for child in ast.iter_child_nodes(stmt):
                if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    for node in ast.walk(child):
                        _uses(node, names, found)
            if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.Delete)):
                for target in getattr(stmt, "targets", None) or [stmt.target]:  # type: ignore[attr-defined]
                    chain = _chain(target, names)
                    if chain is not None:
                        found.touched.add(chain)

    visit(tree.body, True)
    return found


def _uses(node: ast.AST, names: FrozenSet[str], found: Writes, written_in_function: bool = False) -> None:
    """A use of the object that may change it: handed to a call, a method called on it, a
    store into it other than a module-level attribute write."""
    if isinstance(node, ast.Call):
        for arg in (*node.args, *(k.value for k in node.keywords)):
            arg = arg.value if isinstance(arg, ast.Starred) else arg
            chain = _chain(arg, names)
            if chain is not None:
                found.touched.add(chain)
        if isinstance(node.func, ast.Attribute):
            chain = _chain(node.func.value, names)
            if chain is not None:
                found.touched.add(chain)
    elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
        chain = _chain(node.value, names)
        if chain is not None:
            found.touched.add(chain)
            if written_in_function and isinstance(node, ast.Attribute):
                found.touched.add((*chain, node.attr))


def _chain(node: ast.AST, names: FrozenSet[str]) -> Optional[Chain]:
    """``cfg.A.B`` rooted at one of ``names``: ``("A", "B")``; the name alone: ``()``."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in names:
        return tuple(reversed(parts))
    return None


def _changed_elsewhere(index, module: str, names: FrozenSet[str], chain: Chain) -> bool:
    """Another module writes the path's last attribute, or changes a prefix of the path
    under one of the object's names (see the module's docstring)."""
    last = chain[-1]
    write = re.compile(rf"\.\s*{re.escape(last)}\s*(?:=(?!=)|\+=|:\s*\w[^\n]*=)|setattr\([^\n]*['\"]{re.escape(last)}['\"]")
    for path in sorted(index.module_paths()):
        if path != module and (text := index.text_naming(path, last)) is not None and write.search(text):
            return True
    prefixes = {".".join(chain[:n]) for n in range(len(chain))}
    for name in sorted(names):
        use = re.compile(rf"(?<![\w.]){re.escape(name)}((?:\s*\.\s*\w+)*)\s*(?:\.\s*\w+\s*\(|\[[^\]\n]*\]\s*=(?!=))|[(,]\s*{re.escape(name)}((?:\s*\.\s*\w+)*)\s*[,)]")
        for path in sorted(index.module_paths()):
            if path == module or (text := index.text_naming(path, name)) is None:
                continue
            for match in use.finditer(_IMPORTS.sub("", text)):  # `from config import cfg, opts` hands nothing
                held = re.sub(r"\s+", "", match.group(1) if match.group(1) is not None else (match.group(2) or "")).lstrip(".")
                if held in prefixes:
                    return True
    return False
