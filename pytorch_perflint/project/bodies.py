"""What a function returns and what a class's ``__init__`` assigns: read on demand.

These facts take a walk over every statement of every function body, which is most of
what a summary would cost, and a rule asks for them only about the few definitions it
meets. So the summary keeps each definition's lines, and this module reads one definition
when asked: it parses just those lines (a method's, wrapped in ``if 1:`` to allow the
indentation) and falls back to the whole module when that does not give the definition.
"""

from __future__ import annotations

import ast
import copy
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar

from ..analysis.ast_index import per_tree
from .codec import serialisable
from .forms import Attr, BinOp, Call, Either, Form, FormBuilder, Item, Ref, Seq, Unknown
from .forms import Dict as DictForm
from .statements import read_scope
from .summarizer import parse_tree
from .summary import Attribute, Binding, ModuleSummary

if TYPE_CHECKING:
    from .resolution import Definition
    from .values import ValueEngine

R = TypeVar("R")

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@serialisable
@dataclass(frozen=True)
class FunctionBody:
    """``returns``: the form of each ``return`` (a bare one is ``Lit(None)``); ``bindings``:
    the local names bound once that those forms read, transitively (``loader =
    DataLoader(...); return loader``); ``is_generator``: its returns are not its value."""

    returns: Tuple[Form, ...] = ()
    bindings: Tuple[Binding, ...] = ()
    is_generator: bool = False

    def binding(self, name: str) -> Optional[Binding]:
        return next((b for b in self.bindings if b.name == name), None)


@serialisable
@dataclass(frozen=True)
class ClassBody:
    """``self.name = form`` in ``__init__``; ``rebound`` when assigned again there or in
    another method (then its value at a use is not known from ``form`` alone)."""

    attributes: Tuple[Attribute, ...] = ()

    def attribute(self, name: str) -> Optional[Attribute]:
        return next((a for a in self.attributes if a.name == name), None)


def _read_names(forms: Sequence[Form]) -> Set[str]:
    """Heads of the plain names the forms read (to keep the local bindings they need)."""
    out: Set[str] = set()
    stack: List[Any] = list(forms)
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is Ref:
            out.add(item.name.partition(".")[0])
        elif kind is Call:
            stack.append(item.func)
            stack.extend(item.args)
            stack.extend(value for _, value in item.kwargs)
            stack.extend(item.dstar)
        elif kind is Seq:
            stack.extend(item.items)
        elif kind is DictForm:
            stack.extend(value for pair in item.items for value in pair if value is not None)
        elif kind is Either:
            stack.extend((item.body, item.orelse))
        elif kind is Attr or kind is Item:
            stack.append(item.value)
        elif kind is BinOp:
            stack.extend((item.left, item.right))
    return out


def _param_names(args: ast.arguments) -> List[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def function_body(node: ast.AST, aliases: Mapping[str, str]) -> FunctionBody:
    """The body facts of a ``def`` node; ``aliases`` are the module's imports."""
    facts = read_scope(node.body, module_scope=False)  # type: ignore[attr-defined]
    for name in _param_names(node.args):  # type: ignore[attr-defined]
        facts.add(name, "param", node.lineno)  # type: ignore[attr-defined]
    builder = FormBuilder(facts.aliases(aliases))
    returns = tuple(builder.form(r.value) for r in facts.returns)
    kept: Dict[str, Binding] = {}
    pending = _read_names(returns) & facts.bound.keys()
    while pending:  # the bindings the returned forms read, transitively
        found = facts.bindings(builder, pending)
        kept.update((b.name, b) for b in found)
        pending = (_read_names([b.form for b in found]) & facts.bound.keys()) - kept.keys()
    bindings = tuple(sorted(kept.values(), key=lambda b: b.line))
    return FunctionBody(returns, bindings, facts.generator)


def class_body(node: ast.ClassDef, aliases: Mapping[str, str]) -> ClassBody:
    """The ``__init__`` attributes of a class node."""
    body = read_scope(node.body, module_scope=False)
    init_attrs: Dict[str, List[Tuple[int, Optional[ast.AST]]]] = {}
    elsewhere: Set[str] = set()
    for stmt in body.scopes:
        if type(stmt) not in _DEFS:
            continue
        positional = [*stmt.args.posonlyargs, *stmt.args.args]  # type: ignore[attr-defined]
        if not positional:
            continue
        facts = read_scope(stmt.body, module_scope=False, own=positional[0].arg)  # type: ignore[attr-defined]
        for line, attr, value in facts.own_attrs:
            if stmt.name == "__init__":  # type: ignore[attr-defined]
                init_attrs.setdefault(attr, []).append((line, value))
            else:
                elsewhere.add(attr)
    builder = FormBuilder(body.aliases(aliases))
    attributes = []
    for attr, entries in init_attrs.items():
        line, value = entries[0]
        form = builder.form(value) if value is not None else Unknown("unpack")
        attributes.append(Attribute(attr, form, line, len(entries) > 1 or attr in elsewhere))
    return ClassBody(tuple(sorted(attributes, key=lambda a: a.line)))


def locate(text: str, line: int, end_line: int, name: str, want_class: bool) -> Optional[ast.AST]:
    """The ``def``/``class`` named ``name`` whose header is on ``line`` of ``text``, with
    its real line numbers; parsed from its own lines when they parse alone. The same
    node is given to every caller that asks again (the value engine's scope of a
    function, its body's facts, what it returns): callers only read it."""
    return _located(text, line, end_line, name, want_class)


# The text being linted and its ``ast`` tree (``offer_tree``): a function of that very text
# is taken from the tree, not parsed again from its lines.
_OFFERED: List[Optional[Tuple[str, ast.Module]]] = [None]


def offer_tree(text: Optional[str], tree: Optional[ast.Module]) -> None:
    """``tree`` is ``ast.parse(text)`` (None, None: forget it). The engine asks for the
    functions and classes of the file it lints, whose tree the screens already parsed:
    about half of the definitions it located on the torch package, each parsed again
    from its lines. Only a text equal to ``text`` is answered from ``tree``."""
    _OFFERED[0] = None if text is None or tree is None else (text, tree)


def offered_tree(text: str) -> Optional[ast.Module]:
    """The offered tree when ``text`` is its text (a module's whole text read again for its
    call sites, ``Details``), else None. Callers only read it."""
    offered = _OFFERED[0]
    return offered[1] if offered is not None and offered[0] == text else None


def _from_offered(text: str, line: int, name: str, want_class: bool) -> Optional[ast.AST]:
    """The definition from the offered tree, as parsing its own lines gives it: the same
    node less its decorators (they stand above ``line``); None when ``text`` is another."""
    offered = _OFFERED[0]
    if offered is None or offered[0] != text:
        return None
    node = _definitions(offered[1]).get((line, name, want_class))
    if node is None or not node.decorator_list:  # type: ignore[attr-defined]
        return node
    bare = copy.copy(node)  # shallow: the body is the tree's, read only
    bare.decorator_list = []  # type: ignore[attr-defined]
    return bare


@per_tree
def _definitions(tree: ast.Module) -> Dict[Tuple[int, str, bool], ast.AST]:
    """Every ``def``/``class`` of the tree by its header line, name and kind. Definitions
    are statements: the walk goes through statement blocks only, not expressions."""
    out: Dict[Tuple[int, str, bool], ast.AST] = {}
    todo: List[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is ast.ClassDef or kind in _DEFS:
            out.setdefault((node.lineno, node.name, kind is ast.ClassDef), node)  # type: ignore[attr-defined]
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if type(block) is list:
                todo.extend(block)
    return out


# The fields that hold statements (``match`` cases and ``except`` handlers hold blocks).
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


@functools.lru_cache(maxsize=64)
def _located(text: str, line: int, end_line: int, name: str, want_class: bool) -> Optional[ast.AST]:
    offered = _from_offered(text, line, name, want_class)
    if offered is not None:
        return offered
    kinds = (ast.ClassDef,) if want_class else _DEFS
    lines = _lines(text)[line - 1 : end_line]
    if lines:
        indented = lines[0][:1] in (" ", "\t")
        # Blank lines first, so that the parser numbers the lines as the file does (cheaper
        # than renumbering every node of a long function afterwards).
        padding = "\n" * max(0, line - 1 - indented)
        segment = padding + ("if 1:\n" if indented else "") + "".join(lines)
        tree = parse_tree(segment)
        if tree is not None and tree.body:
            node = tree.body[0].body[0] if indented and isinstance(tree.body[0], ast.If) else tree.body[0]
            if isinstance(node, kinds) and node.name == name:  # type: ignore[attr-defined]
                if node.lineno != line:
                    ast.increment_lineno(node, line - node.lineno)
                return node
    tree = parse_tree(text)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, kinds) and node.lineno == line and node.name == name:  # type: ignore[attr-defined]
            return node
    return None


@functools.lru_cache(maxsize=4)
def _lines(text: str) -> Tuple[str, ...]:
    """A module's lines, split once for all the definitions located in it (the engine
    locates many functions of one large module in a row; splitting it each time cost
    more than parsing the function)."""
    return tuple(text.splitlines(keepends=True))


def memoised_body(engine: "ValueEngine", definition: "Definition", tag: str, read: Callable[[ast.AST, ModuleSummary], R]) -> Optional[R]:
    """What ``read`` makes of a project function's body (located in its module's text), once
    per ``tag`` and summary in the engine's memo; None when the body cannot be read. A new
    summary object comes whenever the module is read again (an equal summary leaves the
    engine's generation as it was, but the body's text may have changed); the memo holds the
    summary, so its ``id`` is not reused meanwhile."""
    index, function = engine.index, definition.function
    if index is None or function is None or definition.path is None:
        return None
    summary = index.summary(definition.path)
    key = (tag, definition.path, definition.name, function.line, id(summary))

    def compute() -> Tuple[object, Optional[R]]:
        text = index.text(definition.path)  # type: ignore[arg-type]
        node = None if text is None else locate(text, function.line, function.end_line, function.name, False)
        return summary, None if node is None else read(node, summary)

    found = engine._memoised(key, compute)  # type: ignore[arg-type]
    return found[1] if type(found) is tuple else None  # type: ignore[return-value]

