"""TPF203's project screen as plain data: what the ``ast`` screens ask the project about a
file, worked out from its tree in the summarising worker, so that the lint phase answers it
without parsing the file again (``Rule.project_question``).

The screens (``could_evaluate_without_no_grad``, ``could_evaluate_through_helpers``) ask
two questions of the project: whether every caller of a module-level helper puts the model
it passes in eval mode (``evaluated_by_callers(name, models)``), and whether every caller
of a method does (``method_evaluated(name)``). Each is a filter on one frame, so the
screen holds when it holds with every answer "no", or when one answer "yes" alone makes
it hold: the question lists those, and its answer asks only them.
"""

from __future__ import annotations

import ast
from typing import Callable, FrozenSet, List, Optional, Tuple

from .eval_helper_screens import could_evaluate_through_helpers
from .screens import could_evaluate_without_no_grad

# (fires with every answer "no"; ... also in a project small enough for the helper shapes;
# the helpers ``(name, model parameters)`` one "yes" of whose callers makes it fire; the
# methods ``Class.method`` one "yes" of whose callers does)
EvalQuestion = Tuple[bool, bool, Tuple[Tuple[str, Tuple[str, ...]], ...], Tuple[str, ...]]


def eval_question(tree: ast.Module) -> EvalQuestion:
    """The question of ``tree`` (see the module docstring)."""
    asked: List[Tuple[str, Tuple[str, ...]]] = []

    def record(name: str, models: FrozenSet[str]) -> bool:
        key = (name, tuple(sorted(models)))
        if key not in asked:
            asked.append(key)
        return False

    if could_evaluate_without_no_grad(tree, record):
        return True, True, (), ()
    methods: List[str] = []

    def record_method(name: str) -> bool:
        if name not in methods:
            methods.append(name)
        return False

    if could_evaluate_through_helpers(tree, record_method, helpers=False):
        return True, True, (), ()  # (cannot happen: every method is answered "no")
    small = could_evaluate_through_helpers(tree, lambda name: False, helpers=True)
    # The helpers whose "yes" alone makes the frame fire (the others' frames fail anyway).
    firing = tuple(key for key in asked if could_evaluate_without_no_grad(tree, _only(key)))
    return False, small, firing, tuple(methods)


def _only(key: Tuple[str, Tuple[str, ...]]) -> Callable[[str, FrozenSet[str]], bool]:
    return lambda name, models: (name, tuple(sorted(models))) == key


def answer_eval_question(
    question: EvalQuestion,
    small_project: bool,
    evaluated_by_callers: Callable[[str, FrozenSet[str]], bool],
    method_evaluated: Callable[[str], bool],
) -> Optional[bool]:
    """The screen's answer from the question and the project's answers."""
    fires, fires_small, helpers, methods = question
    if fires or (small_project and fires_small):
        return True
    if any(evaluated_by_callers(name, frozenset(models)) for name, models in helpers):
        return True
    return any(method_evaluated(name) for name in methods)
