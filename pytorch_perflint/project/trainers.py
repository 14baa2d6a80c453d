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
    paths = sorted(index.module_paths())  # the import graph's nodes, summarised by the run
    with index.unnoted():  # a "yes" depends on the one module that holds the step
        trainer = next((path for path in paths if _summary_trains(index.summary(path))), None)
    if trainer is not None:
        index.note_read(trainer)
        return True
    for path in paths:  # a "no": the texts that spell the words (each read through them)
        texts = [index.text_naming(path, word) for word in _WORDS]
        if texts[1] is not None and _SPACED_STEP.search(texts[1]) and _calls_train(texts[1], _trains_call):
            return True
    # Stubs (``.pyi``) are read as text, not summarised: a summary read here would reach the
    # run's parent as a new module and drop its import graph (and the cache's project state).
    for path in sorted(p for p in index.files if not p.endswith(".py")):
        texts = [index.text_naming(path, word) for word in _WORDS]
        if any(text is not None and _calls_train(text, _may_train_call) for text in texts):
            return True
    return False


def _calls_train(text: str, trains_call) -> bool:
    """Some call of the module trains as ``trains_call`` sees one (a text Python rejects
    has no functions to call)."""
    tree = parse_tree(text)
    return tree is not None and any(type(node) is ast.Call and trains_call(node) for node in ast.walk(tree))


def _may_train_call(call: ast.Call) -> bool:
    """A call that may be backward or a step, whatever its receiver: more than a summary's
    ``trains`` counts (``opts[0].step()``, ``torch.autograd.backward(loss)``)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("backward", "manual_backward", "step")


def _summary_trains(summary) -> bool:
    if not summary.ok:
        return False
    return any(trains(f) for f in summary.functions) or any(trains(m) for c in summary.classes for m in c.methods)
