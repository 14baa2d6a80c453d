"""Does any function of the project run a training step? When none does, no call of
project code trains (``call_values.training_reach`` is None for every function, at any
depth), and a screen that asks it of a loop's calls can stop before dispatching them.

A function trains when its summary says so (``call_values.trains``: backward, or an
optimizer's or a scaler's ``.step()``), or when its body, read again, holds such a call
(``call_values.read_body``): the summary finds a step call only on a line that spells
``.step``, so a module whose text has ``.`` and ``step`` apart (``opt. step()``, a line
continuation or a comment between them; a sentence of a comment or docstring too) is
parsed and its calls read as ``read_body`` reads them.

Asked in projects small enough to scan for callers (``MAX_SCANNED_MODULES``), where a
parameter's value comes from reading every caller and the dispatch this saves is dear.
What the answer depends on: "yes" on the summary of the module that holds the training
function; "no" on the texts that spell ``backward`` or ``step`` (only a module that starts
to spell one of them can change it: ``text_naming``).
"""

from __future__ import annotations

import ast
import re

from .call_values import _trains_call, trains
from .summarizer import parse_tree
from .values import MAX_SCANNED_MODULES, ValueEngine

_WORDS = ("backward", "step")
# A dot, then blanks, line continuations, line breaks or comments, then ``step``: a
# ``.step`` call the summary's scan of the lines that spell ``.step`` does not see.
_SPACED_STEP = re.compile(r"\.(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*\r?\n)+step\b")


def project_trains(engine: ValueEngine) -> bool:
    """Whether some project function may run a training step (see the module): False only
    when none can. True, without reading, in a project too large to scan."""
    index = engine.index
    if index is None or len(index.files) > MAX_SCANNED_MODULES:
        return True
    return bool(engine._memoised(("project trains",), lambda: _project_trains(engine)))  # type: ignore[arg-type,return-value]


def _project_trains(engine: ValueEngine) -> bool:
    index = engine.index
    assert index is not None
    paths = sorted(set(index.files) | index.module_paths())
    with index.unnoted():  # a "yes" depends on the one module that holds the step
        trainer = next((path for path in paths if _summary_trains(index.summary(path))), None)
    if trainer is not None:
        index.note_read(trainer)
        return True
    for path in paths:  # a "no": the texts that spell the words (each read through them)
        texts = [index.text_naming(path, word) for word in _WORDS]
        if texts[1] is not None and _SPACED_STEP.search(texts[1]) and _calls_train(texts[1]):
            return True
    return False


def _calls_train(text: str) -> bool:
    """Some call of the module trains as ``read_body`` sees one (a text Python rejects has
    no functions to call)."""
    tree = parse_tree(text)
    return tree is not None and any(type(node) is ast.Call and _trains_call(node) for node in ast.walk(tree))  # type: ignore[arg-type]


def _summary_trains(summary) -> bool:
    if not summary.ok:
        return False
    return any(trains(f) for f in summary.functions) or any(trains(m) for c in summary.classes for m in c.methods)
