"""Finding the rules and choosing which of them run.

Rules are discovered from the modules of ``pytorch_perflint.rules`` (one rule per module),
once per process, so adding a rule touches only its own file.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import os
import pkgutil
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Type

from .rule import Rule


class SelectorError(ValueError):
    """A selector names no rule: a clear error, not silence."""


RULE_MODULE = re.compile(r"^tpf\d{3}_\w+$")


@functools.lru_cache(maxsize=None)
def all_rules() -> Tuple[Type[Rule], ...]:
    """Every rule class, sorted by code: one per ``rules/<family>/tpfNNN_*.py`` module."""
    from . import rules as package

    found: Dict[str, Type[Rule]] = {}
    for family in pkgutil.iter_modules(package.__path__):
        if not family.ispkg:
            continue
        family_package = importlib.import_module(f"{package.__name__}.{family.name}")
        for info in pkgutil.iter_modules(family_package.__path__):
            if not RULE_MODULE.match(info.name):
                continue
            module = importlib.import_module(f"{family_package.__name__}.{info.name}")
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, Rule)
                    and value is not Rule
                    and value.__module__ == module.__name__
                    and getattr(value, "code", None)
                ):
                    found[value.code] = value
    return tuple(found[code] for code in sorted(found))


@dataclass(frozen=True)
class BuiltinCode:
    """A diagnostic the tool emits itself (no rule class): its docs, in one place for the
    ``rule``/``rules`` commands, SARIF's rule help and ``docs/rules.md``."""

    code: str
    name: str
    summary: str
    docs: str  # Markdown: What it does / Why is this bad? / Fix safety, as a rule's docs
    default: bool
    level: str  # SARIF / GitHub severity: "error" or "warning"


BUILTINS: Tuple[BuiltinCode, ...] = (
    BuiltinCode(
        "TPF001",
        "syntax-error",
        "The file cannot be parsed: a syntax error, or bytes that are not Python source.",
        "## What it does\nReports a file that Python itself cannot parse: a syntax error (at "
        "Python's own position and message), bytes that are not valid in the file's encoding, "
        "a binary file, or a notebook that is not valid notebook JSON.\n\n## Why is this bad?\n"
        "No rule can check a file that does not parse. The run goes on with the other files.\n\n"
        "## Fix safety\nThere is no fix: correct the file, or exclude it.",
        True,
        "error",
    ),
    BuiltinCode(
        "TPF002",
        "unused-noqa",
        "A `# noqa: TPFxxx` comment that suppresses nothing.",
        "## What it does\nReports a `# noqa: TPFxxx` comment that names a rule which does not fire "
        "on that line (off by default; enable with `--extend-select TPF002`).\n\n## Why is this bad?\n"
        "Stale suppressions hide future findings on that line.\n\n## Fix safety\nThere is no "
        "automatic fix yet: delete the code from the comment.",
        False,
        "warning",
    ),
    BuiltinCode(
        "TPF003",
        "unanalyzable-file",
        "Valid Python that the tool's parser (LibCST) cannot read: the file was not checked.",
        "## What it does\nReports a file that Python accepts but that pytorch-perflint's parser, "
        "LibCST, cannot read (for example a parenthesised annotation target, `(x): int = 1`). "
        "This is a limitation of the tool, not an error in the file. It is reported at the line "
        "where LibCST stopped, and only when a rule could apply to the file (it mentions what a "
        "rule looks for), since otherwise nothing was missed.\n\n## Why is this bad?\nNo rule "
        "checked the file, so its findings are unknown; without this notice a clean run would "
        "suggest otherwise. It is on by default for that reason, and a run that reports it exits "
        "1 like any finding.\n\n## Fix safety\nThere is no fix. Rewriting the line (for "
        "`(x): int = 1`, `x: int = 1`) lets the file be checked; `# noqa: TPF003` on the "
        "reported line or `--ignore TPF003` (or `per-file-ignores`) accepts that it is not.",
        True,
        "warning",
    ),
)

# Code -> name of the diagnostics the tool emits itself.
BUILTIN_CODES: Dict[str, str] = {builtin.code: builtin.name for builtin in BUILTINS}


def builtin(code: str) -> Optional[BuiltinCode]:
    """The built-in code's docs (None for a rule's code)."""
    return next((b for b in BUILTINS if b.code == code), None)


def rule_by_code(code: str) -> Optional[Type[Rule]]:
    for rule in all_rules():
        if rule.code == code.upper() or rule.name == code:
            return rule
    return None


def _all_codes() -> List[Tuple[str, str]]:
    pairs = [(rule.code, rule.name) for rule in all_rules()]
    pairs.extend(BUILTIN_CODES.items())
    return sorted(pairs)


def expand(selector: str) -> List[str]:
    """The codes a selector (code, prefix, name or ALL) stands for."""
    selector = selector.strip()
    codes = _all_codes()
    if selector.upper() == "ALL":
        return [code for code, _ in codes]
    upper = selector.upper()
    matched = [code for code, name in codes if code.startswith(upper) or name == selector]
    if not matched:
        raise SelectorError(f"unknown rule selector {selector!r}: no rule code, prefix or name matches")
    return matched


def validate(selectors: Iterable[str]) -> None:
    for selector in selectors:
        expand(selector)


def default_codes(preview: bool) -> List[str]:
    codes = [
        rule.code
        for rule in all_rules()
        if rule.default_enabled and (preview or not rule.preview)
    ]
    codes.extend(b.code for b in BUILTINS if b.default)
    return codes


def _specificity(selector: str) -> int:
    if selector.upper() == "ALL":
        return 0
    upper = selector.upper()
    return 4 if upper in dict(_all_codes()) or not upper.startswith("TPF") else len(upper)


def enabled_codes(
    select: Optional[Sequence[str]],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    preview: bool,
) -> frozenset:
    """Resolve select/extend-select/ignore into the enabled codes (ruff's precedence:
    a more specific selector wins; at equal specificity ignore wins)."""
    chosen = set(default_codes(preview)) if select is None else set()
    entries: List[Tuple[int, int, str]] = []
    for selector in select or ():
        entries.append((_specificity(selector), 0, selector))
    for selector in extend_select:
        entries.append((_specificity(selector), 0, selector))
    for selector in ignore:
        entries.append((_specificity(selector), 1, selector))
    for _, is_ignore, selector in sorted(entries):
        codes = expand(selector)
        if is_ignore:
            chosen.difference_update(codes)
        else:
            chosen.update(codes)
    if not preview:
        # A preview rule runs only in preview mode, however it is selected (ruff's rule);
        # ``ineffective_selectors`` names the selections this leaves empty.
        chosen -= _preview_codes()
    return frozenset(chosen)


def _preview_codes() -> set:
    return {rule.code for rule in all_rules() if rule.preview}


def ineffective_selectors(selectors: Iterable[str], preview: bool) -> List[str]:
    """The selectors (of select / extend-select) that enable nothing because every rule
    they name is a preview rule and preview is off: ruff warns about each of them."""
    if preview:
        return []
    previews = _preview_codes()
    out: List[str] = []
    for selector in selectors:
        codes = set(expand(selector))
        if codes and codes <= previews and selector not in out:
            out.append(selector)
    return out


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
                ignored.update(expand(selector))
    return frozenset(ignored)
