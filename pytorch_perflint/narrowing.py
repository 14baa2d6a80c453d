"""Parse only the part of a large file that its rules can read.

The LibCST parse is most of what linting costs, and it grows with the file, not with what
the rules look at. Some rules decide a finding from the statement that holds it and from
what the names it reads are bound to (TPF401 and TPF402 do: an argument is an array or a
device because of how its name was assigned); their ``ast`` screens can say which nodes
they could fire at. For such rules a large file is parsed as a copy in which every other
top-level statement is blanked out, keeping:

* the top-level statements that hold a candidate node;
* every top-level statement that binds a module-level name a kept statement reads, or
  changes such a name in place anywhere (the scope analysis gives up on a name that any
  statement of the file mutates), and so on until nothing more is needed;
* every top-level statement that binds ``torch`` or imports it under another name (fixes
  spell it).

Blanked statements become empty lines, so each kept line stays on its row and column and
the positions of findings need no mapping. Bindings are over-approximated (``global``
anywhere, comprehension variables at module level), so that narrowing can only keep more
than needed, never drop a binding the analysis would have seen.

A file whose rules need all of it may still hold tables of data (torch's
``sparse/_triton_ops_meta.py``: a 7,000-line dict of numbers, 6 s of LibCST for one rule
that reads none of it). ``without_data`` gives LibCST such a file with the value of each
large top-level literal assignment written ``...``: a literal holds no call, name or
attribute for a rule's visitor, and the value engine reads the whole file's ``ast`` tree,
in which the statement keeps its value (every statement stays, on its rows).
"""

from __future__ import annotations

import ast
import io
from dataclasses import dataclass
from typing import Any, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from .analysis.scope import MUTATORS

# Below this many lines the whole file is parsed: the saving would not pay for the walk.
MIN_LINES = 1000
# Narrow only when it leaves out at least this share of the lines.
MIN_SHARE_LEFT_OUT = 0.5
# A top-level literal assignment over this many lines is data (``without_data``).
MIN_DATA_LINES = 100

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Where a node is, for what a store there binds.
_MODULE, _COMPREHENSION, _FUNCTION = range(3)


@dataclass(frozen=True)
class _Block:
    """Top-level statements that share lines (``a = 1; b = 2``): kept or blanked together."""

    first: int  # 1-based first line (decorators included)
    last: int  # 1-based last line
    binds: FrozenSet[str]  # module-level names bound, and names changed in place anywhere
    reads: FrozenSet[str]
    imports_torch: bool


def narrowed_for(source: str, tree: ast.Module, rules: Sequence[Any]) -> Optional[str]:
    """The part of a large file LibCST must parse when every rule left says where it could
    fire (``Rule.candidates_tree``); None: parse it all."""
    if source.count("\n") < MIN_LINES:
        return None
    candidates: List[ast.AST] = []
    for rule in rules:
        found = rule.candidates_tree(tree)
        if found is None:
            return None
        candidates.extend(found)
    return narrowed_source(source, tree, candidates)


def narrowed_source(source: str, tree: ast.Module, candidates: Iterable[ast.AST]) -> Optional[str]:
    """``source`` with the top-level statements the rules cannot need blanked out; None when
    the file is small or too little would be left out to be worth it."""
    lines = io.StringIO(source, newline="").readlines()  # breaks at \n, \r\n, \r, as ast does
    if len(lines) < MIN_LINES:
        return None
    wanted = {node.lineno for node in candidates if hasattr(node, "lineno")}
    if not wanted:
        return None
    blocks = _blocks(tree)
    keep = [b.imports_torch or any(b.first <= line <= b.last for line in wanted) for b in blocks]
    needed: Set[str] = {"torch"}
    for index, block in enumerate(blocks):
        if keep[index]:
            needed |= block.reads
    changed = True
    while changed:  # a kept statement's names pull in what binds them, and what that reads
        changed = False
        for index, block in enumerate(blocks):
            if not keep[index] and not block.binds.isdisjoint(needed):
                keep[index] = changed = True
                needed |= block.reads
    blanked = [b for b, kept in zip(blocks, keep) if not kept]
    if sum(b.last - b.first + 1 for b in blanked) < MIN_SHARE_LEFT_OUT * len(lines):
        return None
    for block in blanked:
        for row in range(block.first - 1, min(block.last, len(lines))):
            line = lines[row]
            lines[row] = line[len(line.rstrip("\r\n")) :]  # keep only the line break
    return "".join(lines)


def without_data(source: str, tree: ast.Module) -> Optional[str]:
    """``source`` with the value of every top-level ``name = <literal>`` (or annotated)
    that spans ``MIN_DATA_LINES`` lines or more written ``...`` on its first line, its
    other lines blank (line breaks kept: every other statement stays on its rows and
    columns); None when there is none. A literal is made of constants, dicts, lists,
    tuples and sets, and attributes of imported modules (``torch.float16``); the statement
    has its lines to itself (no ``;``, no parentheses around the value)."""
    if source.count("\n") < MIN_DATA_LINES:
        return None
    lines: Optional[List[str]] = None
    previous_end = 0
    imported: Optional[Set[str]] = None
    for position, statement in enumerate(tree.body):
        value = getattr(statement, "value", None)
        first, last = statement.lineno, statement.end_lineno or statement.lineno
        following = tree.body[position + 1].lineno if position + 1 < len(tree.body) else None
        shares = first == previous_end or following == last
        previous_end = last
        if shares or type(statement) not in (ast.Assign, ast.AnnAssign) or value is None or last - first + 1 < MIN_DATA_LINES:
            continue
        if value.lineno != first or (value.end_lineno, value.end_col_offset) != (last, statement.end_col_offset):
            continue
        if imported is None:
            imported = _imported(tree)
        if not _literal(value, imported):
            continue
        if lines is None:
            lines = io.StringIO(source, newline="").readlines()
        head = lines[first - 1]
        column = len(head.encode("utf-8")[: value.col_offset].decode("utf-8", "ignore"))
        lines[first - 1] = head[:column] + "..." + head[len(head.rstrip("\r\n")) :]
        for row in range(first, min(last, len(lines))):
            line = lines[row]
            lines[row] = line[len(line.rstrip("\r\n")) :]  # keep only the line break
    return "".join(lines) if lines is not None else None


_CONTAINERS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


def _imported(tree: ast.Module) -> Set[str]:
    """The names the module's top-level imports bind."""
    names: Set[str] = set()
    for statement in tree.body:
        if type(statement) is ast.Import or type(statement) is ast.ImportFrom:
            names.update(alias.asname or alias.name.split(".")[0] for alias in statement.names)  # type: ignore[attr-defined]
    return names


def _literal(value: ast.expr, imported: Set[str]) -> bool:
    """A container of constants (``-1`` counts) and attributes of imported modules only,
    however nested."""
    if type(value) not in _CONTAINERS:
        return False
    stack: List[ast.AST] = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Constant:
            continue
        if kind is ast.Dict:
            if any(key is None for key in node.keys):  # type: ignore[attr-defined]
                return False  # ``**other``
            stack.extend(node.keys)  # type: ignore[attr-defined,arg-type]
            stack.extend(node.values)  # type: ignore[attr-defined]
        elif kind in _CONTAINERS:
            stack.extend(node.elts)  # type: ignore[attr-defined]
        elif kind is ast.UnaryOp and type(node.operand) is ast.Constant:  # type: ignore[attr-defined]
            continue
        elif kind is ast.Attribute:
            while type(node) is ast.Attribute:
                node = node.value  # type: ignore[attr-defined]
            if type(node) is not ast.Name or node.id not in imported:  # type: ignore[attr-defined]
                return False
        else:
            return False
    return True


def _blocks(tree: ast.Module) -> List[_Block]:
    blocks: List[_Block] = []
    for statement in tree.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        last = statement.end_lineno or statement.lineno
        binds, reads, imports_torch = _names(statement)
        if blocks and first <= blocks[-1].last:
            previous = blocks.pop()
            first = previous.first
            last = max(last, previous.last)
            binds |= previous.binds
            reads |= previous.reads
            imports_torch = imports_torch or previous.imports_torch
        blocks.append(_Block(first, last, frozenset(binds), frozenset(reads), imports_torch))
    return blocks


def _names(statement: ast.stmt) -> Tuple[Set[str], Set[str], bool]:
    """What a statement could bind at module level or change in place, every name it
    reads, and whether it imports ``torch`` itself at module level.

    Inside a function, lambda or class body a store binds a local name, so only ``global``
    (and ``nonlocal``, to be safe) counts there; decorators, defaults, bases and the names
    of the functions and classes themselves are module-level. A comprehension's variables
    are its own, but ``:=`` in a module-level comprehension binds a module-level name. A
    change in place (``x[i] = v``, ``x.a = v``, ``x.append(v)``) counts wherever it is.
    """
    binds: Set[str] = set()
    reads: Set[str] = set()
    imports_torch = False
    stack: List[Tuple[ast.AST, int]] = [(statement, _MODULE)]
    while stack:
        node, where = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is ast.Load:
                reads.add(node.id)
            elif where == _MODULE:
                binds.add(node.id)
            continue
        if kind is ast.Attribute or kind is ast.Subscript:
            if type(node.ctx) is not ast.Load:
                _add_base(binds, node)
        elif kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute and func.attr in MUTATORS:
                _add_base(binds, func)
        elif kind is ast.Global or kind is ast.Nonlocal:
            binds.update(node.names)
        elif where == _COMPREHENSION and kind is ast.NamedExpr:
            binds.add(node.target.id)
        elif where != _MODULE:
            pass
        elif kind is ast.Import or kind is ast.ImportFrom:
            for alias in node.names:
                binds.add(alias.asname or alias.name.split(".")[0])
                imports_torch = imports_torch or (kind is ast.Import and alias.name == "torch")
        elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name:
                binds.add(node.name)
        elif kind is ast.MatchMapping and node.rest:
            binds.add(node.rest)
        if kind in _SCOPES:
            if where == _MODULE and kind is not ast.Lambda:
                binds.add(node.name)
            body = node.body if isinstance(node.body, list) else [node.body]
            inside = {id(child) for child in body}
            for child in ast.iter_child_nodes(node):
                stack.append((child, _FUNCTION if id(child) in inside else where))
        elif kind in _COMPREHENSIONS:
            inner = _COMPREHENSION if where == _MODULE else where
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        else:
            stack.extend((child, where) for child in ast.iter_child_nodes(node))
    return binds, reads, imports_torch


def _add_base(names: Set[str], node: ast.AST) -> None:
    """The name at the root of ``a.b[c].d``, as the scope analysis's mutation check finds it."""
    while type(node) is ast.Attribute or type(node) is ast.Subscript:
        node = node.value
    if type(node) is ast.Name:
        names.add(node.id)
