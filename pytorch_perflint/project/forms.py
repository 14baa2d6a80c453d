"""Compact forms of expressions, so that facts about other modules can be read without them.

A form keeps what rule families ask about a value that is defined in another file, and
nothing else: a literal, a reference (``np.pi``, ``self.mean``, ``loader``) with its
qualified name when its head is imported, a call with its callee and arguments, a
subscript (``f["x"][:]``), a list/tuple/set or dict display, one of two values
(``"cuda" if ok else "cpu"``). Anything else, and anything nested deeper than
``MAX_DEPTH``, is ``Unknown``: rules stay silent on it.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import FrozenSet, Mapping, Optional, Sequence, Tuple, Union

from ..analysis.names import canonical
from .codec import serialisable

MAX_DEPTH = 4
MAX_ITEMS = 16  # longer displays keep their first items and are marked truncated
MAX_STRING = 200

Scalar = Union[str, int, float, bool, None]


@serialisable
@dataclass(frozen=True)
class Lit:
    """A literal scalar: ``True``, ``4``, ``"cuda"``, ``None``."""

    value: Scalar


@serialisable
@dataclass(frozen=True)
class Ref:
    """A name or attribute chain as written (``self.mean``); ``qualname`` when its head is
    an import (``np.float32`` -> ``numpy.float32``)."""

    name: str
    qualname: Optional[str] = None


@serialisable
@dataclass(frozen=True)
class Attr:
    """An attribute of something that is not a plain reference: ``np.load(p).T``."""

    value: "Form"
    attr: str


@serialisable
@dataclass(frozen=True)
class Item:
    """A subscript: ``models.__dict__[arch]``, ``f["images"][:]`` (a slice is ``Unknown``)."""

    value: "Form"
    index: "Form"


@serialisable
@dataclass(frozen=True)
class Call:
    """A call: its callee's form, positional and keyword arguments.

    ``star`` is true when a ``*args`` is passed (positions after it are not known);
    ``dstar`` holds the forms of ``**kwargs`` arguments.
    """

    func: "Form"
    args: Tuple["Form", ...] = ()
    kwargs: Tuple[Tuple[str, "Form"], ...] = ()
    star: bool = False
    dstar: Tuple["Form", ...] = ()
    starred: Optional["Form"] = None  # the first ``*xs`` when it follows the positions (``nn.Sequential(*layers)``)

    @property
    def callee(self) -> Optional[str]:
        """The callee's qualified name, else its dotted name as written, else None."""
        if isinstance(self.func, Ref):
            return self.func.qualname or self.func.name
        return None

    def keyword(self, name: str) -> Optional["Form"]:
        for key, value in self.kwargs:
            if key == name:
                return value
        return None


@serialisable
@dataclass(frozen=True)
class Seq:
    """A list, tuple or set display."""

    kind: str  # "list" | "tuple" | "set"
    items: Tuple["Form", ...]
    truncated: bool = False


@serialisable
@dataclass(frozen=True)
class Dict:
    """A dict display; a ``**other`` entry has ``None`` as its key."""

    items: Tuple[Tuple[Optional["Form"], "Form"], ...]
    truncated: bool = False


@serialisable
@dataclass(frozen=True)
class Either:
    """``body if test else orelse``: the value is one of the two."""

    body: "Form"
    orelse: "Form"


@serialisable
@dataclass(frozen=True)
class BinOp:
    """Arithmetic: ``arr / 255.0``; ``op`` is the ``ast`` operator's name (``Div``)."""

    op: str
    left: "Form"
    right: "Form"


@serialisable
@dataclass(frozen=True)
class Joined:
    """An f-string; ``tail`` is its last literal part (``f"{root}/x.npy"`` -> ``/x.npy``)."""

    tail: str


@serialisable
@dataclass(frozen=True)
class Unknown:
    """A value this layer does not describe; ``kind`` says what it was (``"binop"``)."""

    kind: str = ""


Form = Union[Lit, Ref, Attr, Item, Call, Seq, Dict, Either, BinOp, Joined, Unknown]


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def qualify(name: str, aliases: Mapping[str, str]) -> Optional[str]:
    """The qualified name of dotted ``name`` through the import ``aliases`` (local -> dotted
    target), or None when its head is not an import."""
    head, dot, rest = name.partition(".")
    target = aliases.get(head)
    if target is None:
        return None
    return _canonical(f"{target}.{rest}" if dot else target)


@functools.lru_cache(maxsize=4096)
def _canonical(name: str) -> Optional[str]:
    return canonical(name)


class FormBuilder:
    """Builds forms in one scope: ``aliases`` are the imports visible there."""

    def __init__(self, aliases: Mapping[str, str], max_depth: int = MAX_DEPTH) -> None:
        self.aliases = aliases
        self.max_depth = max_depth  # summaries keep forms shallow; the value engine reads deeper

    def ref(self, name: str) -> Ref:
        return Ref(name, qualify(name, self.aliases))

    def form(self, node: Optional[ast.AST], depth: int = 0) -> Form:
        if node is None:
            return Lit(None)
        if depth > self.max_depth:
            return Unknown("deep")
        kind = type(node)
        if kind is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            if isinstance(value, str) and len(value) > MAX_STRING:
                return Unknown("long string")
            if value is None or isinstance(value, (str, bool, int, float)):
                return Lit(value)
            return Unknown(type(value).__name__)
        if kind is ast.Name:
            return self.ref(node.id)  # type: ignore[attr-defined]
        if kind is ast.Attribute:
            name = dotted(node)
            if name is not None:
                return self.ref(name)
            return Attr(self.form(node.value, depth + 1), node.attr)  # type: ignore[attr-defined]
        if kind is ast.Call:
            return self._call(node, depth)  # type: ignore[arg-type]
        if kind is ast.Subscript:
            index = node.slice  # type: ignore[attr-defined]
            return Item(self.form(node.value, depth + 1), self.form(index, depth + 1))  # type: ignore[attr-defined]
        if kind in (ast.List, ast.Tuple, ast.Set):
            elts = node.elts  # type: ignore[attr-defined]
            items = tuple(self.form(e, depth + 1) if type(e) is not ast.Starred else Unknown("starred") for e in elts[:MAX_ITEMS])
            return Seq(kind.__name__.lower(), items, len(elts) > MAX_ITEMS)
        if kind is ast.Dict:
            pairs = list(zip(node.keys, node.values))  # type: ignore[attr-defined]
            items = tuple(
                (None if k is None else self.form(k, depth + 1), self.form(v, depth + 1)) for k, v in pairs[:MAX_ITEMS]
            )
            return Dict(items, len(pairs) > MAX_ITEMS)
        if kind is ast.IfExp:
            return Either(self.form(node.body, depth + 1), self.form(node.orelse, depth + 1))  # type: ignore[attr-defined]
        if kind is ast.UnaryOp and type(node.op) is ast.USub and type(node.operand) is ast.Constant:  # type: ignore[attr-defined]
            value = node.operand.value  # type: ignore[attr-defined]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return Lit(-value)
        if kind is ast.Slice:
            return Unknown("slice")
        if kind is ast.BinOp:
            return BinOp(type(node.op).__name__, self.form(node.left, depth + 1), self.form(node.right, depth + 1))  # type: ignore[attr-defined]
        if kind is ast.JoinedStr:
            last = node.values[-1] if node.values else None  # type: ignore[attr-defined]
            tail = last.value if type(last) is ast.Constant and isinstance(last.value, str) else ""
            return Joined(tail[-MAX_STRING:])
        return Unknown(kind.__name__.lower())

    def _call(self, node: ast.Call, depth: int) -> Call:
        args = []
        spread = spread_comprehension(node.args)
        given = node.args[:-1] if spread is not None else node.args
        star = len(node.args) > MAX_ITEMS  # later positions are not known
        starred = None
        for arg in given[:MAX_ITEMS]:
            if type(arg) is ast.Starred:
                star = True
                starred = self.form(arg.value, depth + 1) if type(arg.value) is ast.Name else None
                break  # later positions are not known
            args.append(self.form(arg, depth + 1))
        if spread is not None and not star:  # `f(*[np.array(v) for v in (a, b)])`: each position the element
            element, count, targets = spread
            star = len(args) + count > MAX_ITEMS
            args.extend([] if star else [_Masked(self.aliases, targets, self.max_depth).form(element, depth + 1)] * count)
        kwargs = []
        dstar = []
        for keyword in node.keywords[:MAX_ITEMS]:
            if keyword.arg is None:
                dstar.append(self.form(keyword.value, depth + 1))
            else:
                kwargs.append((keyword.arg, self.form(keyword.value, depth + 1)))
        if len(node.keywords) > MAX_ITEMS:
            dstar.append(Unknown("more keywords"))  # so no keyword reads as absent
        return Call(self.form(node.func, depth + 1), tuple(args), tuple(kwargs), star, tuple(dstar), starred)


def spread_comprehension(args: Sequence[ast.expr]) -> Optional[Tuple[ast.expr, int, FrozenSet[str]]]:
    """``f(a, *[np.array(v) for v in [x, y, z]])``: the last positional argument, the only
    ``*`` one, unpacks a comprehension (one ``for``, no ``if``) over a list or tuple display:
    it passes as many positions as the display has items, each the comprehension's element
    (its element, count, and the names its ``for`` binds, which the element reads unknown)."""
    if not args or type(args[-1]) is not ast.Starred or any(type(a) is ast.Starred for a in args[:-1]):
        return None
    value = args[-1].value  # type: ignore[attr-defined]
    if type(value) not in (ast.ListComp, ast.GeneratorExp) or len(value.generators) != 1:
        return None
    loop = value.generators[0]
    if loop.ifs or loop.is_async or type(loop.iter) not in (ast.List, ast.Tuple) or any(type(e) is ast.Starred for e in loop.iter.elts):  # type: ignore[attr-defined]
        return None
    return value.elt, len(loop.iter.elts), frozenset(n.id for n in ast.walk(loop.target) if type(n) is ast.Name)  # type: ignore[attr-defined]


class _Masked(FormBuilder):
    """Forms of a comprehension's element: the names its ``for`` binds are unknown (what they
    hold differs item by item), so only what does not depend on them is known
    (``np.array(v)`` is an array whatever ``v`` is)."""

    def __init__(self, aliases: Mapping[str, str], masked: FrozenSet[str], max_depth: int) -> None:
        super().__init__(aliases, max_depth)
        self.masked = masked

    def ref(self, name: str) -> Ref:
        if name.partition(".")[0] in self.masked:
            return Unknown("comprehension target")  # type: ignore[return-value]
        return super().ref(name)
