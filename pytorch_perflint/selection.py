"""Which codes run on a file, which rules that is, and which fixes may go in: worked out once.

The runner builds one ``Selection`` per file and passes it down to the engine and the fixer,
so nothing below it resolves selectors, ``per-file-ignores`` or ``fixable`` again (a fix's
re-lint rounds reuse it too).
"""

from __future__ import annotations

import fnmatch
import functools
import os
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, FrozenSet, List, Optional, Sequence, Tuple, Type

from . import registry
from .config import Settings

if TYPE_CHECKING:  # importing the rules imports LibCST: not on a warm run's path
    from .rule import Rule

# The codes the engine itself emits when a caller hands it its own rules (tests, the LSP's
# rule picker): a syntax error and an unanalyzable file are still said.
_WITH_GIVEN_RULES = frozenset({"TPF001", "TPF003"})


@dataclass(frozen=True)
class Selection:
    """What runs on one file: its enabled ``codes`` (rules and built-in codes), the visitor
    ``rules`` among them, and the codes whose fixes may be applied (None: every code)."""

    codes: FrozenSet[str]
    rules: Tuple[Type["Rule"], ...]
    fixable: Optional[FrozenSet[str]]


def enabled_codes(
    select: Optional[Sequence[str]],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    preview: bool,
) -> FrozenSet[str]:
    """Resolve select/extend-select/ignore into the enabled codes (ruff's precedence:
    a more specific selector wins; at equal specificity ignore wins)."""
    chosen = set(registry.default_codes(preview)) if select is None else set()
    entries: List[Tuple[int, int, str]] = []
    for selector in select or ():
        entries.append((registry.specificity(selector), 0, selector))
    for selector in extend_select:
        entries.append((registry.specificity(selector), 0, selector))
    for selector in ignore:
        entries.append((registry.specificity(selector), 1, selector))
    for _, is_ignore, selector in sorted(entries):
        codes = registry.expand(selector)
        if is_ignore:
            chosen.difference_update(codes)
        else:
            chosen.update(codes)
    if not preview:
        # A preview rule runs only in preview mode, however it is selected (ruff's rule);
        # ``registry.ineffective_selectors`` names the selections this leaves empty.
        chosen -= registry.preview_codes()
    return frozenset(chosen)


@functools.lru_cache(maxsize=64)
def enabled(settings: Settings) -> FrozenSet[str]:
    """The codes the settings enable before ``per-file-ignores`` (cached: one per run)."""
    return enabled_codes(settings.select, settings.extend_select, settings.ignore, settings.preview)


def path_ignores(path: PurePath, per_file_ignores: Sequence[Tuple[str, Sequence[str]]], root: Optional[str]) -> frozenset:
    """Codes switched off for one file by ``per-file-ignores``."""
    ignored: set = set()
    text = path.as_posix()
    rel = text
    if root:
        try:
            # A relative path is relative to the current folder, not to the project root.
            rel = PurePath(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
        except ValueError:
            rel = text
    for pattern, selectors in per_file_ignores:
        if (
            fnmatch.fnmatch(rel, pattern)
            or fnmatch.fnmatch(text, pattern)
            or fnmatch.fnmatch(path.name, pattern)
            or fnmatch.fnmatch(rel, f"*/{pattern}")
        ):
            for selector in selectors:
                ignored.update(registry.expand(selector))
    return frozenset(ignored)


def fixable_codes(settings: Settings) -> Optional[FrozenSet[str]]:
    """The codes whose fixes ``fixable``/``unfixable`` allow (None: every code)."""
    if settings.fixable is None and not settings.unfixable:
        return None
    allowed = set()
    for selector in settings.fixable if settings.fixable is not None else ("ALL",):
        allowed.update(registry.expand(selector))
    for selector in settings.unfixable:
        allowed.difference_update(registry.expand(selector))
    return frozenset(allowed)


def for_file(path: PurePath, settings: Settings, rules: Optional[Sequence[Type["Rule"]]] = None) -> Selection:
    """The selection for one file; ``rules`` given (tests, the LSP) replaces the selectors."""
    if rules is not None:
        return Selection(frozenset(r.code for r in rules) | _WITH_GIVEN_RULES, tuple(rules), fixable_codes(settings))
    codes = enabled(settings)
    if settings.per_file_ignores:
        codes = codes - path_ignores(path, settings.per_file_ignores, settings.project_root)
    version = settings.target_torch_version
    chosen = tuple(r for r in registry.all_rules() if r.code in codes and r.applies_to(version))
    return Selection(codes, chosen, fixable_codes(settings))
