"""Applying fixes to one source text until nothing more changes.

Each round lints, picks the applicable fixes whose replaced nodes do not overlap, applies
them on the tree, renders, and checks the result re-parses. Overlapping fixes wait for the
next round (they are found again on the new text), except fixes that only add keyword
arguments to the same call, which are merged. A result that does not parse is never
returned as fixed.

On a large file a round must not cost much more than its lint: only the top-level
statements the fixes touch are rebuilt, rendered and re-parsed by LibCST
(``transform.splice_fixes``); the whole text is compiled by Python, and the next round's
lint reuses the old tree with those statements swapped in instead of parsing it all again.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst

from . import notebook
from .config import Settings
from .engine import (
    FileLint,
    FixCandidate,
    _collector_paused,
    compile_python,
    lint_source,
)
from .finding import NodeFix
from .rule import Rule
from .selection import Selection, for_file
from .transform import (
    Spliced,
    apply_fixes,
    first_foreign_change,
    keep_line_endings,
    lines_of,
    merge_keyword_additions,
    mixed_line_endings,
    overlaps,
    splice_fixes,
    transplant,
)
from .types import Applicability, Diagnostic

MAX_ROUNDS = 10


@dataclass(frozen=True)
class FixOutcome:
    """The fixed text, how many fixes went in, and what remains to report."""

    source: str
    fixed: int
    diagnostics: Tuple[Diagnostic, ...]
    errors: Tuple[str, ...] = ()
    fix_errors: Tuple[str, ...] = ()
    # (code, name, count) of the fixes that went in, by rule, for --show-fixes.
    fixes: Tuple[Tuple[str, str, int], ...] = ()
    # How many findings the text had before any fix: what `check` reports. Fixes can reveal
    # more (a fix makes another rule's pattern appear), so ``fixed`` may exceed it.
    found_before: int = 0


def is_applicable(candidate_or_kind, settings: Settings, fixable: Optional[frozenset] = None) -> bool:
    """Whether a fix is applied by this run: safe ones always, unsafe with --unsafe-fixes."""
    if isinstance(candidate_or_kind, FixCandidate):
        kind = candidate_or_kind.fix.applicability
        code = candidate_or_kind.diagnostic.code
    else:
        kind, code = candidate_or_kind, None
    if kind is Applicability.DISPLAY_ONLY:
        return False
    if kind is Applicability.UNSAFE and not settings.unsafe_fixes:
        return False
    if fixable is not None and code is not None and code not in fixable:
        return False
    return True


@dataclass
class _Planned:
    """A fix this round applies, and the findings it fixes (two, when two fixes that add
    keyword arguments to one call were merged)."""

    fix: NodeFix
    ranges: Tuple[Tuple[Tuple[int, int], Tuple[int, int]], ...]
    diagnostics: List[Diagnostic]


def _choose(candidates: Sequence[FixCandidate], settings: Settings, fixable: Optional[frozenset]) -> List[_Planned]:
    """The fixes to apply this round: every applicable one that overlaps none chosen before
    it. A fix that only adds keyword arguments to a call another chosen fix also only adds
    keyword arguments to is merged into it (``merge_keyword_additions``): applied one per
    round they would cost a whole extra lint of the file each; any other overlapping fix
    waits for the next round."""
    chosen: List[_Planned] = []
    for candidate in candidates:
        if not is_applicable(candidate, settings, fixable):
            continue
        clashes = [planned for planned in chosen if overlaps(candidate.ranges, planned.ranges)]
        if not clashes:
            chosen.append(_Planned(candidate.fix, candidate.ranges, [candidate.diagnostic]))
            continue
        merged = _merged(clashes, candidate)
        if merged is not None:
            clashes[0].fix = merged
            clashes[0].diagnostics.append(candidate.diagnostic)
    return chosen


def _compile_flags(path: Path) -> int:
    """The compiler's checks ('return' outside a function); a notebook cell may also
    ``await`` at its top level, as IPython runs it."""
    return ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if path.suffix == ".ipynb" else 0


class _Unfaithful(Exception):
    """The fixed text would change lines no fix edits; the message says which."""


def _own_rows(source: str, chosen: Sequence["_Planned"]) -> FrozenSet[int]:
    """The rows the chosen fixes replace, with the comment and blank lines just above and
    below each (a replaced statement carries those above, a replaced block those below)."""
    lines = lines_of(source)

    def blank_or_comment(row: int) -> bool:
        return 1 <= row <= len(lines) and lines[row - 1].strip(" \t\x0c\r\n")[:1] in ("", "#")

    rows = set()
    for candidate in chosen:
        for (start, _), (end, _) in candidate.ranges:
            rows.update(range(start, end + 1))
            for row, step in ((start - 1, -1), (end + 1, 1)):
                while blank_or_comment(row):
                    rows.add(row)
                    row += step
    return frozenset(rows)


# What LibCST may not write back as it read it (see ``transform.transplant``): a form feed,
# a lone carriage return, a last line of only indentation or an indented comment (the blank
# and comment lines between it and the last statement are lost).
_LOSSY = re.compile(r"\x0c|\r(?!\n)|\n[ \t]+(?:#[^\r\n]*)?(?:\r?\n)?\Z")


def _faithful(module: cst.Module, source: str, chosen: Sequence["_Planned"], spliced: Optional[Spliced] = None) -> str:
    """The source with the chosen fixes applied, changed only on the fixes' own lines.

    LibCST renders the whole fixed tree. Where the source holds bytes its rendering loses
    (a form feed, a lone carriage return), only the changed lines are taken from it, and a
    changed line it renders differently refuses the fix. Whatever the cause, a change to a
    line no fix edits refuses it too.

    ``spliced``: what ``splice_fixes`` made, which renders only the statements the fixes
    touch and keeps every other byte: only those statements need the last check.
    """
    fixes = [candidate.fix for candidate in chosen]
    if spliced is not None:
        own = _own_rows(source, chosen)
        for first, old, new in spliced.pieces:
            local = frozenset(row - first + 1 for row in own if row >= first)
            row = first_foreign_change(old, new, local, False)
            if row is not None:
                raise _Unfaithful(f"the result would also change line {row + first - 1}, which no fix edits")
        return spliced.text
    updated = apply_fixes(module, fixes).code
    rendered = module.code if _LOSSY.search(source) else source
    if rendered != source:
        transplanted = transplant(source, rendered, updated)
        if transplanted is None:
            lost = first_foreign_change(source, rendered, frozenset(), False)
            raise _Unfaithful(
                f"LibCST would also change line {lost}, which it cannot write back as it is "
                "(a form feed in the line's indentation, or a lone carriage return)"
            )
        updated = transplanted
    if mixed_line_endings(source):
        updated = keep_line_endings(source, updated)
    row = first_foreign_change(source, updated, _own_rows(source, chosen), any(fix.imports for fix in fixes))
    if row is not None:
        raise _Unfaithful(f"the result would also change line {row}, which no fix edits")
    return updated


def _merged(clashes: List[_Planned], candidate: FixCandidate) -> Optional[NodeFix]:
    if len(clashes) != 1:
        return None
    planned = clashes[0].fix
    if len(planned.replacements) != 1 or len(candidate.fix.replacements) != 1:
        return None
    (old, first), (other, second) = planned.replacements[0], candidate.fix.replacements[0]
    if old is not other:
        return None
    call = merge_keyword_additions(old, first, second)
    if call is None:
        return None
    unsafe = Applicability.UNSAFE in (planned.applicability, candidate.fix.applicability)
    return NodeFix(
        ((old, call),),
        Applicability.UNSAFE if unsafe else planned.applicability,
        f"{planned.message}; {candidate.fix.message}",
        tuple(dict.fromkeys((*planned.imports, *candidate.fix.imports))),
    )


def _render(
    lint: FileLint, source: str, tree: Optional[ast.Module], plan: Sequence[_Planned], path: Path
) -> Tuple[str, ast.Module, Optional[cst.Module]]:
    """The text after this round's fixes, its ``ast`` tree, and its LibCST tree when it
    comes for free. Only the statements the fixes touch are rebuilt, rendered and re-parsed
    by LibCST (``splice_fixes``) when that can be done with certainty, else the whole
    module; either way Python's compiler checks the whole text. Any failure raises."""
    assert lint.module is not None
    spliced = None
    if tree is not None:
        spliced = splice_fixes(lint.module, source, tree, [(p.fix, [r[0][0] for r in p.ranges]) for p in plan])
    updated = _faithful(lint.module, source, plan, spliced)
    if spliced is None:
        cst.parse_module(updated)
    flags = _compile_flags(path)
    new_tree = compile_python(updated, path, flags=flags | ast.PyCF_ONLY_AST)
    # The compiler's checks too ('return' outside a function, ``from __future__`` placement);
    # a notebook's as IPython runs its cells.
    if path.suffix == ".ipynb":
        notebook.compile_cells(updated, path)
    else:
        compile_python(new_tree, path, flags=flags)
    return updated, new_tree, spliced.module if spliced is not None else None


_Rendered = Tuple[str, ast.Module, Optional[cst.Module]]


def _attempt(lint: FileLint, source: str, tree: Optional[ast.Module], plan: Sequence[_Planned], path: Path) -> Tuple[Optional[_Rendered], Optional[str]]:
    """This round's result (``_render``), or why it must not be written."""
    try:
        return _render(lint, source, tree, plan, path), None
    except _Unfaithful as error:
        return None, str(error)
    except Exception as error:  # noqa: BLE001 - a broken fix must never be written
        return None, f"the result does not parse ({error})"


def _refusal_key(module: cst.Module, candidate: FixCandidate) -> Tuple[str, ...]:
    """What names a fix across rounds (its rows move as other fixes add lines)."""
    replaced = (module.code_for_node(old) for old, _ in candidate.fix.replacements)
    return (candidate.diagnostic.code, candidate.fix.message, *replaced)


def _codes(plan: Sequence[_Planned]) -> str:
    return ", ".join(sorted({d.code for p in plan for d in p.diagnostics}))


def _parse_failed(lint: FileLint) -> bool:
    """Whether LibCST could not parse a text Python accepted (TPF003, or TPF001)."""
    return lint.module is None and any(d.code in ("TPF001", "TPF003") for d in lint.diagnostics)


def fix_source(
    source: str,
    path: Path,
    settings: Settings,
    *,
    rules: Optional[Sequence[Type[Rule]]] = None,
    with_edits: bool = False,
    selection: Optional[Selection] = None,
    project=None,
) -> FixOutcome:
    """Apply every applicable fix to ``source``; return the result and what remains.

    When a round's result fails its checks, each of its fixes is checked alone: the ones
    that fail alone are refused (and not tried again), the others still go in.
    ``selection`` is the file's (the runner's); without it, it is worked out once here and
    every re-lint round reuses it.
    ``project``: the file's project index (see ``engine.lint_source``).
    """
    # The rounds hold a whole LibCST tree while they build others: the cyclic collector
    # would scan it again and again and free nothing (see the engine).
    with _collector_paused():
        chosen = selection if selection is not None else for_file(path, settings, rules)
        return _fix_source(source, path, settings, chosen, with_edits, project)


def _fix_source(
    source: str,
    path: Path,
    settings: Settings,
    chosen: Selection,
    with_edits: bool,
    project=None,
) -> FixOutcome:
    fixable = chosen.fixable
    current = source
    fixed = 0
    errors: List[str] = []
    fix_errors: List[str] = []
    refused: Set[Tuple[str, ...]] = set()
    lint: FileLint = lint_source(current, path, settings, with_edits=False, selection=chosen, project=project)
    seen_texts = {current}
    found_before = len(lint.diagnostics)
    by_rule: Counter = Counter()
    tree: Optional[ast.Module] = None
    if lint.candidates:
        try:
            tree = compile_python(current, path, flags=_compile_flags(path) | ast.PyCF_ONLY_AST)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    for _ in range(MAX_ROUNDS):
        if lint.module is None:
            break
        module = lint.module
        candidates = [c for c in lint.candidates if not refused or _refusal_key(module, c) not in refused]
        plan = _choose(candidates, settings, fixable)
        if not plan:
            break
        rendered, why = _attempt(lint, current, tree, plan, path)
        if why is not None and len(plan) > 1:
            alone = {id(p): _attempt(lint, current, tree, [p], path)[1] for p in plan}
            sound = [p for p in plan if alone[id(p)] is None]
            if sound and len(sound) < len(plan):
                rendered, why = _attempt(lint, current, tree, sound, path)
                if why is None:
                    for planned in plan:
                        if alone[id(planned)] is None:
                            continue
                        for candidate in lint.candidates:
                            if candidate.diagnostic in planned.diagnostics:
                                refused.add(_refusal_key(module, candidate))
                        fix_errors.append(f"{path}: fix for {_codes([planned])} was not applied: {alone[id(planned)]}")
                    plan = sound
        if why is not None or rendered is None:
            fix_errors.append(f"{path}: fix for {_codes(plan)} was not applied: {why}")
            break
        updated, new_tree, new_module = rendered
        codes = _codes(plan)
        if updated in seen_texts:
            break  # a fix that brings back an earlier text would loop forever
        seen_texts.add(updated)
        # The next lint reuses both trees (the engine's own ast parse has no notebook flags).
        reuse_tree = new_tree if not _compile_flags(path) else None
        new_lint = lint_source(updated, path, settings, with_edits=False, selection=chosen, module=new_module, tree=reuse_tree, project=project)
        if _parse_failed(new_lint):
            fix_errors.append(f"{path}: fix for {codes} was not applied: the result does not parse with LibCST")
            break
        fixed += sum(len(p.diagnostics) for p in plan)
        by_rule.update((d.code, d.name) for p in plan for d in p.diagnostics)
        current, tree, lint = updated, new_tree, new_lint
        errors.extend(e for e in lint.errors if e not in errors)
    else:
        fix_errors.append(f"{path}: fixes did not settle after {MAX_ROUNDS} rounds")
    if with_edits and lint.diagnostics and any(d.fix for d in lint.diagnostics):
        lint = lint_source(current, path, settings, with_edits=True, selection=chosen, project=project)
    errors.extend(e for e in lint.errors if e not in errors)
    fixes = tuple((code, name, count) for (code, name), count in sorted(by_rule.items()))
    return FixOutcome(current, fixed, tuple(lint.diagnostics), tuple(errors), tuple(fix_errors), fixes, found_before)
