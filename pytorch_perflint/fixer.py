"""Applying fixes to one source text until nothing more changes.

Each round lints, picks the applicable fixes whose replaced nodes do not overlap, applies
them on the tree, renders, and checks the result re-parses. Overlapping fixes wait for the
next round (they are found again on the new text). A result that does not parse is never
returned as fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Type

import libcst as cst

from . import registry
from .config import Settings
from .engine import FileLint, FixCandidate, compile_python, lint_source
from .rule import Rule
from .transform import apply_fixes, overlaps
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


def fix_source(
    source: str,
    path: Path,
    settings: Settings,
    *,
    rules: Optional[Sequence[Type[Rule]]] = None,
    with_edits: bool = False,
) -> FixOutcome:
    """Apply every applicable fix to ``source``; return the result and what remains."""
    fixable = _fixable_codes(settings)
    current = source
    fixed = 0
    errors: List[str] = []
    fix_errors: List[str] = []
    lint: FileLint = lint_source(current, path, settings, with_edits=False, rules=rules)
    seen_texts = {current}
    for _ in range(MAX_ROUNDS):
        chosen = _choose(lint.candidates, settings, fixable)
        if not chosen or lint.module is None:
            break
        try:
            updated = apply_fixes(lint.module, [c.fix for c in chosen]).code
            cst.parse_module(updated)
            compile_python(updated, path, flags=0)  # the compiler's checks too ('return' outside a function)
        except Exception as error:  # noqa: BLE001 - a broken fix must never be written
            codes = ", ".join(sorted({c.diagnostic.code for c in chosen}))
            fix_errors.append(f"{path}: fix for {codes} was not applied: the result does not parse ({error})")
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
