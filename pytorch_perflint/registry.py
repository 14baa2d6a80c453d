"""The rule catalogue: discovering the rules and what a selector stands for.

Rules are discovered from the family packages of ``pytorch_perflint.rules``
(``rules/<family>/tpfNNN_*.py``, one rule per module), once per process, so adding a rule
touches only its family folder. Which of them run on a file is ``selection.py``'s job.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from typing import Dict, Iterable, List, Optional, Tuple, Type

from .rule import Rule
# The built-in codes are part of the catalogue: callers read them here, beside the rules.
from .rules.builtin import BUILTIN_CODES, BUILTINS, BuiltinCode, builtin  # noqa: F401


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


def specificity(selector: str) -> int:
    if selector.upper() == "ALL":
        return 0
    upper = selector.upper()
    return 4 if upper in dict(_all_codes()) or not upper.startswith("TPF") else len(upper)


def preview_codes() -> set:
    return {rule.code for rule in all_rules() if rule.preview}


def ineffective_selectors(selectors: Iterable[str], preview: bool) -> List[str]:
    """The selectors (of select / extend-select) that enable nothing because every rule
    they name is a preview rule and preview is off: ruff warns about each of them."""
    if preview:
        return []
    previews = preview_codes()
    out: List[str] = []
    for selector in selectors:
        codes = set(expand(selector))
        if codes and codes <= previews and selector not in out:
            out.append(selector)
    return out
