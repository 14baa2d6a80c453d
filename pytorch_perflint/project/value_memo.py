"""The value engine's memo (``values.ValueEngine`` inherits it): answers kept while no
summary changes, their reads told again on a hit, recursion cut.

A key met again while it is computed (``self.x = self.x + dx``: the attribute reads itself)
is unknown at first. When the other answers it joins agree on one kind (``guess``: the
attribute's other bindings are all arrays), that kind is tried as a hypothesis: the key is
computed again with the hypothesis standing for the recursive read, and kept only when the
result is the hypothesis itself (every binding keeps the kind, given it on entry: an
inductive invariant). Otherwise the answers computed under it are thrown away.

A local name a loop rebinds from itself (``total = 0``; ``for ...: total += 1``) is proved
the same way within one question (``_loop_carried``): the read that meets itself again
stands for the kind the other bindings agree on, kept when every binding then gives it.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from .kinds import UNKNOWN, Kind, Unknown, join, join_all
from .method_callers import public_method_sites

if TYPE_CHECKING:
    from .index import ProjectIndex

IN_PROGRESS = Unknown("recursion")
# Steps (evaluations) one outermost question may take. Answers are memoised, so a project's
# questions take a few hundred at most; a function whose names are rebound on many ``if``
# arms inside a loop can still make the walk over its bindings exponential: past the budget
# the question's answer is unknown (silent), and nothing it computed after that is kept.
MAX_STEPS = 10_000


_TOKENS = itertools.count()


def _token(scope: Any) -> int:
    """A number that names ``scope`` for as long as the process lives (an ``id`` is reused
    once a scope built for one call is freed)."""
    token = scope.__dict__.get("_memo_token")
    if token is None:
        token = scope.__dict__["_memo_token"] = next(_TOKENS)
    return token


class Memo:
    """Memoised answers of one engine over ``index`` (set by the engine)."""

    index: Optional["ProjectIndex"]

    def _init_memo(self) -> None:
        self._generation = -1
        self._memo: Dict[Tuple, Tuple[Kind, FrozenSet[str]]] = {}
        self._scopes: Dict[Tuple, object] = {}
        self._reentered: Set[Tuple] = set()
        self._guesses: Dict[Tuple, Kind] = {}
        self._sites: Dict[Tuple, object] = {}  # a public method's callers, per definition
        self._carried: Dict[Tuple, Kind] = {}  # loop-carried names being read -> their hypothesis
        self._proving = False
        self._inside = False  # a question is being answered (its steps are counted)
        self._steps = 0
        self.max_steps = MAX_STEPS
        self._exhausted = False
        self._tangled: Set[int] = set()  # scopes where a question ran out of steps

    def _question(self, ask: Callable[[], Kind], scope: Any = None) -> Kind:
        """``ask()`` as one outermost question, with its own budget of ``MAX_STEPS``; a
        question read in a ``scope`` where one ran out is unknown at once (the scope's
        names are too tangled to follow: the next question would run out the same way)."""
        if self._inside:
            return ask()
        self._fresh()
        self._steps, self._exhausted = 0, False
        if scope is not None and _token(scope) in self._tangled:
            return UNKNOWN
        self._inside = True
        try:
            return ask()
        finally:
            self._inside = False
            if self._exhausted and scope is not None:
                self._tangled.add(_token(scope))

    def _fresh(self) -> None:
        generation = getattr(self.index, "generation", 0)
        if generation != self._generation:
            self._memo.clear()
            self._scopes.clear()
            self._sites.clear()
            self._tangled.clear()
            self._generation = generation

    def _public_sites(self, definition) -> object:
        """A public method's callers (``method_callers``), read once per definition while no
        summary changes; what they read is told again to the recordings on a hit."""
        kept = self._sites.get((definition.path, definition.name))
        if kept is None:
            with self.index.recording() as used:  # type: ignore[union-attr]
                found = public_method_sites(self.index, definition)  # type: ignore[arg-type]
            kept = self._sites[(definition.path, definition.name)] = (found, frozenset(used))
        for read in kept[1]:  # type: ignore[index]
            self.index.note_read(read)  # type: ignore[union-attr]
        return kept[0]  # type: ignore[index]

    def _guess(self, key: Tuple, kind: Kind) -> None:
        """What ``key`` would be if its recursive reads were ``kind`` (see the module)."""
        self._guesses[key] = kind

    def _memoised(self, key: Tuple, compute: Callable[[], Kind]) -> Kind:
        """A memoised answer; its reads are told again to the recordings on a hit, and a
        key met again while it is computed (recursion) is unknown, or a proven guess."""
        self._fresh()
        kept = self._memo.get(key)
        if kept is not None:
            if kept[0] is IN_PROGRESS:
                self._reentered.add(key)
            for read in kept[1]:
                self.index.note_read(read)  # type: ignore[union-attr]
            return kept[0]
        self._memo[key] = (IN_PROGRESS, frozenset())
        mark = len(self._memo)  # keys are kept in insertion order: later ones are new
        with self.index.recording() as used:  # type: ignore[union-attr]
            kind = compute()
            guess = self._guesses.pop(key, None)
            if guess is not None and type(kind) is Unknown and key in self._reentered:
                kind = self._prove(key, guess, mark, compute)
        self._reentered.discard(key)
        if self._exhausted and self._inside:  # cut short by the budget: not the answer
            del self._memo[key]
        else:
            self._memo[key] = (kind, frozenset(used))
        return kind

    def _prove(self, key: Tuple, guess: Kind, mark: int, compute: Callable[[], Kind]) -> Kind:
        """``guess`` if computing ``key`` under it gives it back; a guess the answer only
        widens (``Number(0)`` to ``Number()``: ``count = count + 1``) is widened once."""
        def under(assumed: Kind) -> Kind:
            self._memo[key] = (assumed, frozenset())
            again = compute()
            self._guesses.pop(key, None)
            return again

        proven = self._settle(guess, mark, under)
        return UNKNOWN if proven is None else proven

    def _settle(self, guess: Kind, mark: int, under: Callable[[Kind], Kind]) -> Optional[Kind]:
        """The guess that the answer computed under it (``under``, after the reads made while
        the key was unknown are dropped) gives back, widened at most once; None when none
        does (the reads since ``mark`` are dropped then too)."""
        for _ in range(2):
            self._forget_since(mark)  # read while the key was unknown: read again
            again = under(guess)
            if again == guess:
                return guess
            widened = join(guess, again)
            if type(widened) is Unknown or widened == guess:
                break
            guess = widened
        self._forget_since(mark)
        return None

    def _forget_since(self, mark: int) -> None:
        """Drop the answers memoised after the first ``mark`` (a nested drop removes only
        keys newer than its own mark, so the first ``mark`` keys stay in place)."""
        for stale in list(self._memo)[mark:]:
            del self._memo[stale]

    def _loop_carried(self, key: Tuple, kinds_of: Callable[[], List[Kind]], combine: Callable[[List[Kind]], Kind]) -> Kind:
        """The kind of a name whose bindings include ones a loop makes from the name itself
        (``key``: the scope, name and line read). Met again while read, it is unknown at
        first; when the bindings that give a kind agree, that kind is tried for the inner
        read and kept if every binding then gives it (widened once, as ``_prove``). One
        proof at a time: a name met inside another's proof keeps its first answer."""
        if key in self._carried:
            self._reentered.add(key)
            return self._carried[key]
        self._carried[key] = UNKNOWN
        mark = len(self._memo)
        proving = False
        try:
            kinds = kinds_of()
            kind = combine(kinds)
            guess = join_all([k for k in kinds if type(k) is not Unknown])
            if type(kind) is not Unknown or key not in self._reentered or type(guess) is Unknown or self._proving:
                return kind
            self._proving = proving = True

            def under(assumed: Kind) -> Kind:
                self._carried[key] = assumed
                return combine(kinds_of())

            proven = self._settle(guess, mark, under)
            return kind if proven is None else proven
        finally:
            if proving:
                self._proving = False
            del self._carried[key]
            self._reentered.discard(key)
