"""Lists built by ``append`` (split from ``scopes``): ``xs = []`` then ``xs.append(a)``
statements before a read give the list's items in order, each read where it is added."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Tuple

from .forms import Call, Ref, Seq
from .list_uses import ANY_TIME, list_uses

if TYPE_CHECKING:
    from .scopes import Entry, Scope


@dataclass(frozen=True)
class Appended:
    """A list built by ``append``: its items' forms, each read at the line that adds it."""

    items: Tuple[Tuple[object, int], ...]


@dataclass(frozen=True)
class Collected:
    """A list built by appends some of which stand in a loop or a branch of their own (``for
    ...: xs.append(a)``): how many items and in which order is not known, but each is one
    of these forms, read at the line that adds it."""

    items: Tuple[Tuple[object, int], ...]


_LISTS = frozenset(("torch.nn.ModuleList", "list"))
CHANGED = "<changed>"  # a list changed or handed on before a read: its items are not known


def _list_items(form: object) -> Optional[Tuple[object, ...]]:
    """The items of a list display, ``list()`` or ``nn.ModuleList([...])`` (None: not one)."""
    if type(form) is Seq and form.kind == "list" and not form.truncated:  # type: ignore[union-attr]
        return tuple(form.items)  # type: ignore[union-attr]
    if type(form) is not Call or form.kwargs or form.star or form.dstar or len(form.args) > 1:  # type: ignore[union-attr]
        return None
    func = form.func  # type: ignore[union-attr]
    if type(func) is not Ref or (func.qualname or func.name) not in _LISTS:
        return None
    return _list_items(form.args[0]) if form.args else ()  # type: ignore[union-attr]


def appended(scope: "Scope", name: str, entries: List["Entry"], line: int) -> Optional[object]:
    """``xs = []`` (or ``nn.ModuleList([...])``), then ``xs.append(a)`` statements in the
    same block, all before the read: the list's items in order (``Appended``); with some
    append in a loop or a branch of its own, or a read after the block of the list's only
    binding (``if c: xs = []`` ... ``if c: use(xs)``), what each item may be (``Collected``).
    ``CHANGED`` when the list may be changed otherwise before the read, or in a loop
    around it (``list_uses``); None when the read is not of such a list."""
    before = [e for e in entries if 0 < e.line < line]
    if not before or scope.node is None:
        return None
    base = before[-1]
    items = _list_items(base.form)
    if items is None or (type(base.form) is not Seq and name not in scope.appends):
        return None
    here = scope.blocks_at(line)
    outside = base.blocks != here[: len(base.blocks)]
    if outside and (len(entries) != 1 or name not in scope.appends):
        return CHANGED if name in scope.appends else None
    shared = 0  # the blocks around both the binding and the read
    while shared < min(len(base.blocks), len(here)) and base.blocks[shared] == here[shared]:
        shared += 1
    end = line
    for block, _ in here[shared:]:  # a loop around the read: its later lines run before it too
        end = max(end, scope.loops.get(block, (0, 0))[1] + 1)
    if any(line <= e.line < end for e in entries):
        return None  # rebound later in a loop around the read
    appends = scope.appends.get(name, ())
    # an append in a branch or a loop of its own, or after the read in a loop around it
    loose = any(base.line < at < end and (blocks != base.blocks or at >= line) for at, blocks, _ in appends)
    if scope.uses is None:
        scope.uses = list_uses(scope.node)
    if any(not safe and (at == ANY_TIME or base.line < at < end) for at, safe in scope.uses.get(name, ())):
        return CHANGED
    if loose or outside:  # read after the block that binds it (its one binding): any of them
        return Collected(tuple((item, base.line) for item in items) + tuple((a, at) for at, _, a in appends if base.line < at < end))
    added = [(a, at) for at, _, a in appends if base.line < at < line]
    return Appended(tuple((item, base.line) for item in items) + tuple(added))
