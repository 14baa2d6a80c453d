"""Folders a script puts on ``sys.path`` before it imports project code, read statically.

A script run as ``python tools/train.py`` often does ``sys.path.insert(0, osp.join(
osp.dirname(__file__), '..', 'lib'))`` (or imports a helper module such as ``_init_paths``
that does it) and then imports ``from model.net import Net``: a module under ``lib/``, a
folder that is not a package root. The summary records each such folder, relative to the
module's own folder, with the line that adds it; the index tries these folders for an
absolute import that nothing else resolves (``added_roots``).

Only what is known from the text counts: a string literal (a relative path is read from the
script's folder, where such scripts are run), ``__file__`` through ``os.path.dirname`` /
``join`` / ``abspath`` / ``realpath`` / ``normpath``, ``pathlib.Path(__file__).parent`` /
``.parents[n]`` / ``/ 'lib'``, module-level names bound to such values, and a module-level
helper whose body inserts its first parameter (``add_path(lib_path)``). A path from the
environment, the command line or anything else is unknown and adds nothing; a folder
outside the project adds nothing either.
"""

from __future__ import annotations

import ast
import os
import posixpath
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, Union

from .root import EXTERNAL_PACKAGES, STDLIB_MODULES, Target
from .summary import ImportRecord, ModuleSummary

if TYPE_CHECKING:
    from .index import ProjectIndex

Added = Tuple[Tuple[int, str], ...]  # (line, folder relative to the module's own folder)

_FILE = object()  # the value of ``__file__``
Value = Union[str, object, None]  # a relative folder, ``_FILE``, or None (unknown)
_OS_PATH = {"os.path." + n for n in ("join", "dirname", "abspath", "realpath", "normpath")}
_PATH = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_SYS = ("sys", "sys.path")  # what an import binds for ``_Reader.is_sys_path``


def added_paths(tree: ast.Module, source: str) -> Added:
    """The folders the module's top-level code adds to ``sys.path``, by line."""
    if "sys" not in source or "path" not in source or not _may_add(tree.body):
        return ()
    reader = _Reader(tree)
    reader.statements(tree.body)
    return tuple(reader.out)


def _may_add(body: List[ast.stmt]) -> bool:
    """Over the statements ``_Reader.statements`` reads: some import binds ``sys`` or
    ``sys.path`` (``import sys as s``, ``from sys import path``), and some call statement
    is a ``.insert``/``.append`` or calls a function defined there (a helper). Without
    both no call puts anything on ``sys.path``, and the reader's walks of every loop,
    class and function are skipped: most modules that spell ``sys`` and ``path`` have
    neither at module level (on the torch package 0.9 of 1.3 CPU-s of the summaries'
    ``added_paths`` went to such modules' walks)."""
    seen = _Seen()
    seen.read(body)
    return seen.sys and (seen.inserts or bool(seen.called & seen.defined))


class _Seen:
    """What ``_may_add`` looks for, collected in one pass."""

    def __init__(self) -> None:
        self.sys = self.inserts = False
        self.called: Set[str] = set()
        self.defined: Set[str] = set()

    def read(self, body: List[ast.stmt]) -> None:
        for stmt in body:
            kind = type(stmt)
            if kind is ast.Import:
                self.sys = self.sys or any((a.name if a.asname else a.name.split(".")[0]) in _SYS for a in stmt.names)  # type: ignore[attr-defined]
            elif kind is ast.ImportFrom:
                self.sys = self.sys or (not stmt.level and stmt.module == "sys" and any(a.name == "path" for a in stmt.names))  # type: ignore[attr-defined]
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                self.defined.add(stmt.name)  # type: ignore[attr-defined]
            elif kind is ast.Expr and type(stmt.value) is ast.Call:  # type: ignore[attr-defined]
                func = stmt.value.func  # type: ignore[attr-defined]
                if type(func) is ast.Attribute:
                    self.inserts = self.inserts or func.attr in ("insert", "append")
                elif type(func) is ast.Name:
                    self.called.add(func.id)
            elif kind in (ast.If, ast.Try):
                self.read(stmt.body)  # type: ignore[attr-defined]
                self.read(stmt.orelse)  # type: ignore[attr-defined]
                if kind is ast.Try:
                    self.read(stmt.finalbody)  # type: ignore[attr-defined]
            elif kind is ast.With:
                self.read(stmt.body)  # type: ignore[attr-defined]


class _Reader:
    def __init__(self, tree: ast.Module) -> None:
        self.aliases: Dict[str, str] = {}
        self.names: Dict[str, Value] = {}
        self.helpers: Dict[str, str] = {}  # module-level function -> the parameter it inserts
        self.out: List[Tuple[int, str]] = []

    def statements(self, body: List[ast.stmt], nested: bool = False) -> None:
        """``nested``: a branch's body (a name bound differently in two branches is unknown)."""
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
                for alias in stmt.names:
                    self.aliases[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
            elif isinstance(stmt, ast.Assign):
                value = self.value(stmt.value)
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        known = target.id in self.names and self.names[target.id] != value
                        self.names[target.id] = None if nested and known else value
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inserted = _inserted_parameter(stmt, self)
                if inserted is not None:
                    self.helpers[stmt.name] = inserted
                else:
                    self.helpers.pop(stmt.name, None)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.call(stmt.value, stmt.lineno)
            elif isinstance(stmt, (ast.If, ast.Try)):
                self.statements(stmt.body, True)
                self.statements(stmt.orelse, True)
                if isinstance(stmt, ast.Try):
                    self.statements(stmt.finalbody, True)
            elif isinstance(stmt, ast.With):
                self.statements(stmt.body, nested)
            else:  # a loop, ``+=``, ``global``...: what it binds is no longer known
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        self.names[node.id] = None

    def dotted(self, node: ast.expr) -> Optional[str]:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            head = self.dotted(node.value)
            return None if head is None else f"{head}.{node.attr}"
        return None

    def is_sys_path(self, node: ast.expr) -> bool:
        return self.dotted(node) == "sys.path"

    def call(self, call: ast.Call, line: int) -> None:
        func = call.func
        argument: Optional[ast.expr] = None
        if isinstance(func, ast.Attribute) and self.is_sys_path(func.value):
            if func.attr == "insert" and len(call.args) == 2:
                argument = call.args[1]
            elif func.attr == "append" and len(call.args) == 1:
                argument = call.args[0]
        elif isinstance(func, ast.Name) and func.id in self.helpers and len(call.args) == 1 and not call.keywords:
            argument = call.args[0]
        if argument is None:
            return
        value = self.value(argument)
        if isinstance(value, str):
            self.out.append((line, value))

    def value(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _literal(node.value)
        if isinstance(node, ast.Name):
            return _FILE if node.id == "__file__" else self.names.get(node.id)
        if isinstance(node, ast.Call) and not node.keywords:
            name = "str" if isinstance(node.func, ast.Name) and node.func.id == "str" else self.dotted(node.func)
            args = [self.value(a) for a in node.args]
            if name in _OS_PATH or name in _PATH or name == "str":
                return _function(name.rsplit(".", 1)[-1], args)  # type: ignore[union-attr]
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not node.args:
                return self.value(node.func.value)  # Path(...).resolve()
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return _function("dirname", [self.value(node.value)])
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            index = node.slice
            if isinstance(index, ast.Constant) and type(index.value) is int and 0 <= index.value < 8:
                value = self.value(node.value.value)
                for _ in range(index.value + 1):
                    value = _function("dirname", [value])
                return value
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return _function("join", [self.value(node.left), self.value(node.right)])
        return None


def _literal(text: str) -> Optional[str]:
    """A relative path written as a string (read from the script's folder); None for an
    absolute, home-relative or templated one."""
    if not text or text.startswith(("/", "~", "\\")) or any(c in text for c in "{}%$:"):
        return None
    return posixpath.normpath(text.replace("\\", "/"))


def _function(name: str, args: List[Value]) -> Value:
    if not args or any(a is None for a in args):
        return None
    if name in ("abspath", "realpath", "normpath", "Path", "PurePath", "PosixPath", "str") and len(args) == 1:
        return args[0]
    if name == "dirname" and len(args) == 1:
        return "." if args[0] is _FILE else posixpath.normpath(posixpath.join(args[0], ".."))  # type: ignore[arg-type]
    if name == "join" and isinstance(args[0], str) and all(isinstance(a, str) for a in args[1:]):
        return posixpath.normpath(posixpath.join(*args))  # type: ignore[arg-type]
    return None


def _inserted_parameter(node: Union[ast.FunctionDef, ast.AsyncFunctionDef], reader: _Reader) -> Optional[str]:
    """The first parameter of a helper whose body puts it on ``sys.path``."""
    params = node.args.posonlyargs + node.args.args
    if not params:
        return None
    first = params[0].arg
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and reader.is_sys_path(inner.func.value):
            args = inner.args
            arg = args[1] if inner.func.attr == "insert" and len(args) == 2 else args[0] if inner.func.attr == "append" and len(args) == 1 else None
            if isinstance(arg, ast.Name) and arg.id == first:
                return first
    return None


def added_roots(index: "ProjectIndex", path: str, record: ImportRecord, summary: Optional[ModuleSummary] = None) -> List[str]:
    """The project folders that ``path``'s code put on ``sys.path`` before ``record`` runs:
    its own additions, and those of a project module it imported bare before (``import
    _init_paths``), absolute. Reads ``path``'s summary and those modules' (the answer
    depends on them)."""
    summary = index.summary(path) if summary is None else summary
    line = record.line if record.module_scope else None
    out = _absolute(index, path, summary.added_paths, line)
    for other in summary.imports:
        if other.name is not None or other.asname or other.level or not other.module_scope or "." in other.module:
            continue
        if line is not None and other.line >= line or other.module in EXTERNAL_PACKAGES or other.module in STDLIB_MODULES:
            continue
        target = index.modules.resolve_absolute(other.module, path)
        if target.path is not None and target.path != path:
            out.extend(_absolute(index, target.path, index.summary(target.path).added_paths, None))
    return list(dict.fromkeys(out))


def _absolute(index: "ProjectIndex", path: str, added: Added, line: Optional[int]) -> List[str]:
    own = os.path.dirname(path)
    root = index.modules.root
    out = []
    for at, folder in added:
        if line is not None and at >= line:
            continue
        full = os.path.normpath(os.path.join(own, folder))
        if full == root or full.startswith(root + os.sep):
            out.append(full)
    return out


def resolve_through_added(index: "ProjectIndex", path: str, record: ImportRecord, summary: Optional[ModuleSummary] = None) -> Optional[Target]:
    """The project module an absolute import names through a folder the script added to
    ``sys.path`` (None: none does)."""
    top = record.module.split(".")[0]
    if top in EXTERNAL_PACKAGES or top in STDLIB_MODULES or not index.modules.names_somewhere(top):
        return None  # (``import yaml`` reads nothing more)
    for base in added_roots(index, path, record, summary):
        found = index.modules.lookup_under(base, record.module)
        if found is not None:
            return found
    return None
