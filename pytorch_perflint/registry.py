"""The rule catalogue: discovering the rules and what a selector stands for.

Rules are discovered from the family packages of ``pytorch_perflint.rules``
(``rules/<family>/tpfNNN_*.py``, one rule per module), once per process, so adding a rule
touches only its family folder. Which of them run on a file is ``selection.py``'s job.
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import pkgutil
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple, Type

# The built-in codes are part of the catalogue: callers read them here, beside the rules.
from .rules.builtin import BUILTIN_CODES, BUILTINS, BuiltinCode, builtin  # noqa: F401

if TYPE_CHECKING:
    from .rule import Rule


class SelectorError(ValueError):
    """A selector names no rule: a clear error, not silence."""


RULE_MODULE = re.compile(r"^tpf\d{3}_\w+$")


@functools.lru_cache(maxsize=None)
def all_rules() -> Tuple[Type[Rule], ...]:
    """Every rule class, sorted by code: one per ``rules/<family>/tpfNNN_*.py`` module."""
    from . import rules as package
    from .rule import Rule

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
class RuleEntry:
    """What selecting rules needs to know of one rule, without importing it."""

    code: str
    name: str
    preview: bool = False
    default_enabled: bool = True


@functools.lru_cache(maxsize=None)
def catalogue() -> Tuple[RuleEntry, ...]:
    """Every rule's code, name and flags, sorted by code, read from the rule modules'
    ``ast`` rather than by importing them: choosing what a run selects (config checks, a
    warm run answered by the cache) then never imports the rules and LibCST, a third of a
    second. A class attribute that is not a literal there means: import them after all.
    The test suite checks this agrees with ``all_rules``."""
    from . import rules as package

    found: Dict[str, RuleEntry] = {}
    for folder in package.__path__:
        for family in sorted(os.scandir(folder), key=lambda entry: entry.name):
            if not family.is_dir() or not os.path.exists(os.path.join(family.path, "__init__.py")):
                continue
            for file in sorted(os.listdir(family.path)):
                if not (file.endswith(".py") and RULE_MODULE.match(file[:-3])):
                    continue
                try:
                    with open(os.path.join(family.path, file), "rb") as handle:
                        tree = ast.parse(handle.read())
                except (OSError, SyntaxError, ValueError):
                    return _imported_catalogue()
                for node in tree.body:
                    if isinstance(node, ast.ClassDef):
                        entry = _entry(node)
                        if entry is not None:
                            found[entry.code] = entry
    if not found:
        return _imported_catalogue()
    return tuple(found[code] for code in sorted(found))


def _entry(node: ast.ClassDef) -> Optional[RuleEntry]:
    values: Dict[str, object] = {}
    for stmt in node.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else getattr(stmt, "target", None)
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and target.id in ("code", "name", "preview", "default_enabled"):
            if not isinstance(value, ast.Constant):
                raise _NotLiteral(target.id)
            values[target.id] = value.value
    if not isinstance(values.get("code"), str) or not isinstance(values.get("name"), str):
        return None
    return RuleEntry(values["code"], values["name"], bool(values.get("preview", False)), bool(values.get("default_enabled", True)))  # type: ignore[arg-type]


class _NotLiteral(Exception):
    pass


def _catalogue() -> Tuple[RuleEntry, ...]:
    if f"{__package__}.rule" in sys.modules:  # the rules are imported already: ask them
        return _imported_catalogue()
    try:
        return catalogue()
    except _NotLiteral:
        return _imported_catalogue()


def _imported_catalogue() -> Tuple[RuleEntry, ...]:
    return tuple(RuleEntry(r.code, r.name, r.preview, r.default_enabled) for r in all_rules())


def rule_by_code(code: str) -> Optional[Type[Rule]]:
    for rule in all_rules():
        if rule.code == code.upper() or rule.name == code:
            return rule
    return None


def _all_codes() -> List[Tuple[str, str]]:
    pairs = [(rule.code, rule.name) for rule in _catalogue()]
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
        if selector.strip().upper() != "ALL":  # always valid: no need to list the rules
            expand(selector)


def default_codes(preview: bool) -> List[str]:
    codes = [
        rule.code
        for rule in _catalogue()
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
    return {rule.code for rule in _catalogue() if rule.preview}


def ineffective_selectors(selectors: Iterable[str], preview: bool) -> List[str]:
    """The selectors (of select / extend-select) that enable nothing because every rule
    they name is a preview rule and preview is off: ruff warns about each of them."""
    selectors = list(selectors)
    if preview or not selectors:
        return []  # and no catalogue read: a warm run must not parse the rules' sources
    previews = preview_codes()
    out: List[str] = []
    for selector in selectors:
        codes = set(expand(selector))
        if codes and codes <= previews and selector not in out:
            out.append(selector)
    return out
