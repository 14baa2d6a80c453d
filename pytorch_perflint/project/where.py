"""Where the value engine reads a form, and what it answers (split from ``values``, which
re-exports both): a scope and a line inside the scopes around it (and, in a method read for
an object of a subclass, that object); a kind and the modules reading it took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional

from .kinds import Kind
from .scopes import Scope


@dataclass(frozen=True)
class Where:
    """Where a form is read: ``scope`` at ``line`` inside ``parent`` (the enclosing scope);
    a ``scope`` of None is the module level of ``path`` read through the index."""

    path: Optional[str]
    scope: Optional[Scope] = None
    line: int = 0
    parent: Optional["Where"] = None
    # the object a method inherited from a base is read for (its ``self``: the instance of
    # the subclass it was called on, so ``self.step_wait()`` in the base is the subclass's)
    this: Optional[Kind] = None

    def at(self, line: int) -> "Where":
        return Where(self.path, self.scope, line, self.parent, self.this)


@dataclass(frozen=True)
class Answer:
    """A kind, and the project modules reading it took (what a finding depends on)."""

    kind: Kind
    reads: FrozenSet[str] = frozenset()
