"""Applying fixes to one source text until nothing more changes.

Each round lints, picks the applicable fixes whose replaced nodes do not overlap, applies
them on the tree, renders, and checks the result re-parses. Overlapping fixes wait for the
next round (they are found again on the new text). A result that does not parse is never
returned as fixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst

from . import notebook, registry
from .config import Settings
from .engine import FileLint, FixCandidate, compile_python, lint_source
from .rule import Rule
from .transform import apply_fixes, first_foreign_change, lines_of, overlaps, transplant
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


def _fixable_codes(settings: Settings) -> Optional[frozenset]:
    if settings.fixable is None and not settings.unfixable:
        return None
    allowed = set()
    for selector in settings.fixable if settings.fixable is not None else ("ALL",):
        allowed.update(registry.expand(selector))
    for selector in settings.unfixable:
        allowed.difference_update(registry.expand(selector))
    return frozenset(allowed)


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


def _choose(candidates: Sequence[FixCandidate], settings: Settings, fixable: Optional[frozenset]) -> List[FixCandidate]:
    chosen: List[FixCandidate] = []
    for candidate in candidates:
        if not is_applicable(candidate, settings, fixable):
            continue
        if any(overlaps(candidate.ranges, other.ranges) for other in chosen):
            continue
        chosen.append(candidate)
    return chosen


def _compile(source: str, path: Path) -> None:
    """The compiler's checks ('return' outside a function, ``from __future__`` placement);
    a notebook's as IPython runs its cells (``notebook.compile_cells``)."""
    if path.suffix == ".ipynb":
        notebook.compile_cells(source, path)
    else:
        compile_python(source, path, flags=0)


class _Unfaithful(Exception):
    """The fixed text would change lines no fix edits; the message says which."""


def _own_rows(source: str, chosen: Sequence[FixCandidate]) -> FrozenSet[int]:
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


def _faithful(module: cst.Module, source: str, chosen: Sequence[FixCandidate]) -> str:
    """The source with the chosen fixes applied, changed only on the fixes' own lines.

    LibCST renders the whole fixed tree. Where the source holds bytes its rendering loses
    (a form feed, a lone carriage return), only the changed lines are taken from it, and a
    changed line it renders differently refuses the fix. Whatever the cause, a change to a
    line no fix edits refuses it too.
    """
    fixes = [candidate.fix for candidate in chosen]
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
    row = first_foreign_change(source, updated, _own_rows(source, chosen), any(fix.imports for fix in fixes))
    if row is not None:
        raise _Unfaithful(f"the result would also change line {row}, which no fix edits")
    return updated


def _attempt(module: cst.Module, source: str, chosen: Sequence[FixCandidate], path: Path) -> Tuple[str, Optional[str]]:
    """The source with the chosen fixes applied and checked, and why it must not be
    written (None: it may)."""
    try:
        updated = _faithful(module, source, chosen)
        cst.parse_module(updated)
        _compile(updated, path)  # the compiler's checks too
    except _Unfaithful as error:
        return source, str(error)
    except Exception as error:  # noqa: BLE001 - a broken fix must never be written
        return source, f"the result does not parse ({error})"
    return updated, None


def _refusal_key(module: cst.Module, candidate: FixCandidate) -> Tuple[str, ...]:
    """What names a fix across rounds (its rows move as other fixes add lines)."""
    replaced = (module.code_for_node(old) for old, _ in candidate.fix.replacements)
    return (candidate.diagnostic.code, candidate.fix.message, *replaced)


def _codes(chosen: Sequence[FixCandidate]) -> str:
    return ", ".join(sorted({c.diagnostic.code for c in chosen}))


def fix_source(
    source: str,
    path: Path,
    settings: Settings,
    *,
    rules: Optional[Sequence[Type[Rule]]] = None,
    with_edits: bool = False,
) -> FixOutcome:
    """Apply every applicable fix to ``source``; return the result and what remains.

    When a round's result fails its checks, each of its fixes is checked alone: the ones
    that fail alone are refused (and not tried again), the others still go in.
    """
    fixable = _fixable_codes(settings)
    current = source
    fixed = 0
    errors: List[str] = []
    fix_errors: List[str] = []
    refused: Set[Tuple[str, ...]] = set()
    lint: FileLint = lint_source(current, path, settings, with_edits=False, rules=rules)
    seen_texts = {current}
    for _ in range(MAX_ROUNDS):
        if lint.module is None:
            break
        module = lint.module
        candidates = [c for c in lint.candidates if not refused or _refusal_key(module, c) not in refused]
        chosen = _choose(candidates, settings, fixable)
        if not chosen:
            break
        updated, why = _attempt(module, current, chosen, path)
        if why is not None and len(chosen) > 1:
            alone = {id(c): _attempt(module, current, [c], path)[1] for c in chosen}
            sound = [c for c in chosen if alone[id(c)] is None]
            if sound and len(sound) < len(chosen):
                updated, why = _attempt(module, current, sound, path)
                if why is None:
                    for candidate in chosen:
                        if alone[id(candidate)] is not None:
                            refused.add(_refusal_key(module, candidate))
                            fix_errors.append(f"{path}: fix for {candidate.diagnostic.code} was not applied: {alone[id(candidate)]}")
                    chosen = sound
        if why is not None:
            fix_errors.append(f"{path}: fix for {_codes(chosen)} was not applied: {why}")
            break
        if updated in seen_texts:
            break  # a fix that brings back an earlier text would loop forever
        seen_texts.add(updated)
        fixed += len(chosen)
        current = updated
        lint = lint_source(current, path, settings, with_edits=False, rules=rules)
        errors.extend(e for e in lint.errors if e not in errors)
    else:
        fix_errors.append(f"{path}: fixes did not settle after {MAX_ROUNDS} rounds")
    if with_edits and lint.diagnostics and any(d.fix for d in lint.diagnostics):
        lint = lint_source(current, path, settings, with_edits=True, rules=rules)
    errors.extend(e for e in lint.errors if e not in errors)
    return FixOutcome(current, fixed, tuple(lint.diagnostics), tuple(errors), tuple(fix_errors))
