"""TPF206's project screen: can a file's loops reach ``empty_cache()`` through the project?

The rule reads a call of a project function that empties the cache on every call
(``call_values.empties_cache_every_call``), so a file that never names ``empty_cache``
may still hold a finding: when a project module it imports, directly or through others,
does (answered from module texts read once per summary), and then only when some call in
one of its loops runs such code (the rule's own question, asked of the ``ast`` tree).
Both are answered before LibCST parses the file.
"""

from __future__ import annotations

import ast
import bisect
import re
import weakref
from typing import Dict, List, Optional, Tuple

from ...project import ProjectIndex
from ...analysis.ast_index import LOOP_TYPES, code_identifiers, tree_index
from ...project.call_values import MAX_DEPTH, empties_cache_every_call
from ...project.forward_calls import target_runs_forward
from ...project.index import TEXTS_NAMING
from ...project.resolution import Definition
from ...project.tree_wheres import loop_calls_running
from ...project.values import MAX_SCANNED_MODULES, engine_for
from .no_grad import is_eval_function_name
from .screens import could_have_training_loop
from .step_names import loop_calls_step_by_name

# Names that mark evaluation: a loop of the module may evaluate a model.
_EVALUATES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "eval"})


def could_empty_in_loops(tree: ast.Module, path: str, project: ProjectIndex) -> bool:
    """TPF206's project screen: ``empty_cache`` here; or a loop here that may train or
    evaluate, a project module this one imports (directly or through other project modules,
    as deep as a helper is followed) that calls ``empty_cache``, and a call in a loop here
    that runs project code emptying the cache on every call (what ``visit_Call`` reports)."""
    question = loop_question(tree)
    answer = answer_loop_question(question, path, project)
    return answer if answer is not None else loops_call_emptying_code(project, path, tree, forward=not question[1])


def loop_question(tree: ast.Module) -> Tuple[bool, bool]:
    """The part of the screen the tree alone decides, as plain data (TPF206's
    ``project_question``): whether the code names ``empty_cache``, and whether a loop
    here may train or evaluate (names that mark evaluation, a function named like one)."""
    if "empty_cache" in code_identifiers(tree):
        return True, True
    return False, _loop_words(tree) or bool(_evaluation_functions(tree))


def _loop_words(tree: ast.Module) -> bool:
    """The code says a loop of the module may train or evaluate, wherever it stands: it
    trains, steps, or names what marks evaluation (``no_grad``, ``eval``...)."""
    return could_have_training_loop(tree) or loop_calls_step_by_name(tree) or bool(_EVALUATES & code_identifiers(tree))


def _evaluation_functions(tree: ast.Module) -> Tuple[Tuple[int, int], ...]:
    """The lines of the functions named like evaluation: without other words, the loops
    in them are the module's only ones that may evaluate (``_in_function``)."""
    return tuple((f.lineno, f.end_lineno or f.lineno) for f in tree_index(tree).functions if is_eval_function_name(f.name))


def objects_asked(project: Optional[ProjectIndex]) -> bool:
    """Whether calls of objects (``pipe(x)``, ``self.model(x)``: ``__call__``, ``forward``)
    and emptying code that runs the forward itself are followed: in projects of at most
    ``MAX_SCANNED_MODULES`` modules, as callers and subclasses are scanned."""
    return project is not None and len(project.files) <= MAX_SCANNED_MODULES


def answer_loop_question(question: Tuple[bool, bool], path: str, project: ProjectIndex) -> Optional[bool]:
    """The screen from ``loop_question``'s answer and the project, reading what the whole
    screen reads (the imported modules' texts) and nothing more: None when only the
    calls in the loops (the tree) can decide (``loops_call_emptying_code``). On the torch
    package that is 28 of 1,166 files: the others are not parsed again to be ruled out.
    Without training or evaluation words here, a loop may still evaluate through the very
    code that empties the cache (a no-grad ``__call__`` of a pipeline, a generator method
    that runs the model): asked, as objects' calls are, only in projects small enough to
    scan (``objects_asked``); in a large one nearly every module imports, a few levels
    down, one that empties the cache."""
    named, loops = question
    if named:
        return True
    if not loops and not objects_asked(project):
        return False
    if not imports_reach_empty_cache(project, path):
        return False
    return None


def imports_reach_empty_cache(project: ProjectIndex, path: str) -> bool:
    """A project module that ``path`` imports (directly or through other project modules,
    as deep as a helper is followed) names ``empty_cache``."""
    seen = {path}
    frontier = [path]
    for _ in range(MAX_DEPTH):
        following = []
        for module in frontier:
            for imported in project.imported_modules(module):
                if imported in seen:
                    continue
                seen.add(imported)
                if _mentions_empty_cache(project, imported):
                    return True
                following.append(imported)
        frontier = following
    return False


def loops_call_emptying_code(project: ProjectIndex, path: str, tree: ast.Module, forward: bool = False) -> bool:
    """Some call in a loop of the module (``tree``, at ``path``) runs project code that
    empties the cache on every call: the rule's own question about each such call
    (``dispatch`` without objects, then ``empties_cache_every_call``), asked of the
    ``ast`` tree before LibCST parses the file. The engine's memos make the rule's
    questions, when the file passes, answers already known. With ``forward``, the code
    must also run a model forward (the loop evaluates through it)."""
    engine = engine_for(project)
    objects = objects_asked(project)

    def holds(definition: Definition, forward: bool = forward) -> bool:
        if not empties_cache_every_call(engine, definition):
            return False
        return not forward or target_runs_forward(engine, definition) is not None

    if forward or _loop_words(tree):
        return loop_calls_running(engine, path, tree, holds, objects=objects)
    # Only functions named like evaluation say that a loop here may evaluate: the loops
    # in them are asked as such, the others as a module without those words asks them
    # (in a small project: code that runs the forward itself; else not at all).
    spans = _evaluation_functions(tree)

    def inside(call: ast.Call) -> bool:
        return any(first <= call.lineno <= last for first, last in spans)

    if loop_calls_running(engine, path, tree, holds, objects=objects, only=inside):
        return True
    outside = lambda definition: holds(definition, forward=True)  # noqa: E731
    return objects and loop_calls_running(engine, path, tree, outside, objects=objects, only=lambda call: not inside(call))


_MENTIONS: "weakref.WeakKeyDictionary[ProjectIndex, Dict[str, Tuple[object, bool, bool]]]" = weakref.WeakKeyDictionary()


# A call of ``empty_cache`` (not its own definition: ``torch/cuda/memory.py`` defines it).
_CALLS_EMPTY_CACHE = re.compile(r"(?<!def )\bempty_cache\s*\(")


def _calls_empty_cache(text: str) -> bool:
    """Some line calls ``empty_cache`` outside a comment (a docstring may still say so: a
    screen may let too much through, never too little)."""
    return any(
        _CALLS_EMPTY_CACHE.search(line.split("#", 1)[0]) for line in text.splitlines() if "empty_cache" in line
    )


def _mentions_empty_cache(project: ProjectIndex, path: str) -> bool:
    """Whether a project module's text names ``empty_cache``: read once per summary of it
    (as ``call_values.body_facts`` keeps bodies), the read still recorded for the cache: a
    module that does not spell it is no dependency until it does (``text_naming``)."""
    summary = project.summary(path)
    kept = _MENTIONS.setdefault(project, {})
    hit = kept.get(path)
    if hit is not None and hit[0] is summary:
        project.note_read(TEXTS_NAMING + "empty_cache")
        if hit[2]:
            project.note_text(path)
        return hit[1]
    text = project.text_naming(path, "empty_cache")
    found = text is not None and _calls_empty_cache(text)
    kept[path] = (summary, found, text is not None)
    return found


def loop_calls(tree: ast.Module) -> bool:
    """Some ``for``/``while`` body calls something. Asked of every file with a loop: the
    calls under loops come from the shared ``tree_index``, the loops from a walk of the
    statements alone, and a call is in a body when its position lies in the body's span
    (a node within a statement's span is part of it)."""
    calls = tree_index(tree).calls_in_loops
    if not calls:
        return False
    starts = sorted((call.lineno, call.col_offset) for call in calls)
    stack: List[ast.AST] = list(tree.body)
    while stack:
        statement = stack.pop()
        body = getattr(statement, "body", None)
        if type(statement) in LOOP_TYPES and body:
            first, last = body[0], body[-1]
            at = bisect.bisect_left(starts, (first.lineno, first.col_offset))
            if at < len(starts) and starts[at] <= (last.end_lineno, last.end_col_offset):
                return True
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            value = getattr(statement, field, None)
            if type(value) is list:
                stack.extend(value)
    return False
