"""The names of the project's training steps: every function or method whose own body runs
``.backward()`` or an optimizer step (``call_values.trains``, read from the summaries).

A loop can train through a project method whose name says nothing (``coach.fit_critic(x)``);
the training rules' screens ask, before LibCST parses a file, whether any name its loops
call is one of these (an over-approximation by name: the rule's dispatch decides).
Memoised per index and summary generation; the answer depends on every module's text.
"""

from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, FrozenSet, Set, Tuple

from .call_values import _BUILTINS, trains
from .method_callers import NN_MODULE_METHODS
from .resolution import ALL_TEXTS

if TYPE_CHECKING:
    from .index import ProjectIndex

_MEMO: "weakref.WeakKeyDictionary[ProjectIndex, Tuple[int, FrozenSet[str]]]" = weakref.WeakKeyDictionary()
_CALLED = re.compile(r"(\w+)\s*\(")
# Names every module spells for other reasons (``model.train()``, ``x.item()``, ``print``),
# or that the training rules' own screens already look for (``.backward(``, ``.step(``):
# never taken for a training step's name.
NOT_STEPS = NN_MODULE_METHODS | _BUILTINS | frozenset(
    "backward step __call__ __init__ item cpu tolist numpy detach append extend format "
    "size view mean sum clone contiguous unsqueeze squeeze reshape permute".split()
)


def training_names(index: "ProjectIndex") -> FrozenSet[str]:
    """The names of the project's functions and methods that run a training step themselves
    (not ``nn.Module``'s own method names, nor ``backward``/``step``)."""
    index.note_read(ALL_TEXTS)
    kept = _MEMO.get(index)
    if kept is not None and kept[0] == index.generation:
        return kept[1]
    names: Set[str] = set()
    for path in sorted(index.module_paths()):
        summary = index.summary(path)
        for function in (*summary.functions, *(m for c in summary.classes for m in c.methods)):
            if function.name not in names and function.name not in NOT_STEPS and trains(function):
                names.add(function.name)
    found = frozenset(names)
    _MEMO[index] = (index.generation, found)
    return found


def calls_training_name(source: str, index: "ProjectIndex") -> bool:
    """The text calls (``name(``, ``x.name(``) one of the project's training steps."""
    names = training_names(index)
    return bool(names) and not names.isdisjoint(_CALLED.findall(source))
