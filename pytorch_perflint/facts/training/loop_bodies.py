"""Is a step function a loop body whose own syncs TPF202 reports (RULES.md: "a function
that runs .backward() or an optimizer step and is called from a loop is a loop body")?

A step function is one: when the project calls it from loops and none of those calls runs
plainly on every iteration (a plain call is reported where it stands, as a helper that
syncs: ``call_sites.plain_loop_call``); or, called from no loop, when another step
function that is a loop body calls it on every one of its own calls, at any depth
(``update_EG()`` called from the training loop runs ``self.backward_EG()``, which runs
``loss.backward()`` and then stores a dozen ``.item()``s: those are per-step syncs, and
they are reported at each sync in ``backward_EG``, not at the call in ``update_EG``).
A call in the caller's own frame counts only when it runs on every call of the caller
(``call_values.Site.always``: no condition, loop or early exit before it), and only a
caller that runs one training step per call (``training_reach`` False: not an epoch
helper, whose loop is the first case) passes the question on. Callers of a method are
the calls on ``self`` in its class and on objects the engine knows to be of its class
(``call_sites.step_call_sites``). Answers are memoised in the engine with their reads.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from ...project.call_sites import loop_call_sites, plain_loop_call, step_call_sites
from ...project.call_values import MAX_DEPTH, body_facts, training_reach
from ...project.forms import Attr, Ref
from ...project.resolution import Definition
from ...project.values import ValueEngine


_LOOPS = "loops"  # called from loops, never plainly
_CALLER = "caller"  # called on every call of a step function that is a loop body


def is_loop_body(engine: ValueEngine, definition: Definition) -> bool:
    """Whether the step function ``definition`` is a loop body (see the module's
    docstring): its unconditional syncs are reported where they stand."""
    return _how(engine, definition, 0) is not None


def reached_per_step(engine: ValueEngine, definition: Definition) -> bool:
    """Whether the step function is a loop body through a caller that is one (the second
    case): the call in that caller is then not reported, the syncs in it are."""
    return _how(engine, definition, 0) == _CALLER


def _how(engine: ValueEngine, definition: Definition, depth: int) -> Optional[str]:
    function = definition.function
    if function is None or engine.index is None or definition.kind not in ("function", "method"):
        return None
    key = ("loop-body", definition.path, definition.name, function.line)
    found = engine._memoised(key, lambda: _compute(engine, definition, depth))  # type: ignore[arg-type,return-value]
    return found if found in (_LOOPS, _CALLER) else None  # type: ignore[return-value]


def _compute(engine: ValueEngine, definition: Definition, depth: int) -> Optional[str]:
    index = engine.index
    sites = loop_call_sites(engine, definition)
    if sites is None:
        return None
    if sites:
        return None if any(plain_loop_call(index, *site) for site in sites) else _LOOPS  # type: ignore[arg-type]
    if depth >= MAX_DEPTH or training_reach(engine, definition) is not False:
        return None  # the second case holds only for a function that runs one step itself
    short = definition.name.rsplit(".", 1)[-1]
    callers: Dict[Tuple[str, int, str], Definition] = {}

    def wanted(path: str, line: int, caller: str) -> bool:
        """A step function (one step per call) that calls it on every call, in its frame."""
        found = index.resolve(path, caller)  # type: ignore[union-attr]
        if found is None or found.kind not in ("function", "method") or found.key == definition.key:
            return False
        if training_reach(engine, found) is not False or not _every_call(engine, found, line, short):
            return False
        callers[(path, line, caller)] = found
        return True

    for site in step_call_sites(engine, definition, wanted) or ():
        if _how(engine, callers[site], depth + 1) is not None:
            return _CALLER
    return None


def _every_call(engine: ValueEngine, caller: Definition, line: int, short: str) -> bool:
    """The caller calls ``short`` on ``line`` on every one of its calls, in its own frame."""
    facts = body_facts(engine, caller)
    if facts is None:
        return False
    return any(site.line == line and site.always and not site.in_loop and _names(site.func) == short for site in facts.sites)


def _names(form: object) -> Optional[str]:
    if type(form) is Attr:
        return form.attr  # type: ignore[attr-defined]
    if type(form) is Ref:
        return form.name.rsplit(".", 1)[-1]  # type: ignore[attr-defined]
    return None
