"""Running a rule's VALID/INVALID examples and the fixture files: test cases as data.

The test suite parametrises over these, so a rule's examples live beside its code and a
new rule is tested without editing any test file.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple, Type

from .config import Settings
from .engine import lint_source
from .fixer import fix_source
from .rule import Invalid, Rule, Valid

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_EXPECT = re.compile(r"#.*\bexpect:\s*(?P<codes>TPF\d{3}(?:\s*,\s*TPF\d{3})*)")
_OPTIONS = re.compile(r"^#\s*fixture-options:\s*(?P<json>\{.*\})\s*$", re.MULTILINE)


def settings_with(options: Mapping[str, Any], **extra: Any) -> Settings:
    """Settings with overrides given as in pyproject (``target-torch-version = "1.13"``)."""
    values: Dict[str, Any] = {}
    for key, value in {**options, **extra}.items():
        key = key.replace("-", "_")
        if key == "target_torch_version" and isinstance(value, str):
            major, minor = value.split(".")[:2]
            value = (int(major), int(minor))
        elif key == "target_torch_version":
            value = tuple(value)
        values[key] = value
    return dataclasses.replace(Settings(), **values)


def lint_example(
    rule: Type[Rule], code: str, options: Mapping[str, Any] = {}, path: str = "example.py"
) -> List[Tuple[int, str]]:
    """(line, code) of every diagnostic the rule gives on ``code`` (linted as ``path``:
    some rules treat test files differently)."""
    result = lint_source(code, Path(path), settings_with(options), rules=[rule])
    assert not result.errors, result.errors
    return [(d.location.row, d.code) for d in result.diagnostics if d.code == rule.code]


def fix_example(
    rule: Type[Rule], code: str, options: Mapping[str, Any] = {}, unsafe: bool = True, path: str = "example.py"
) -> str:
    settings = settings_with(options, unsafe_fixes=unsafe, fix=True)
    outcome = fix_source(code, Path(path), settings, rules=[rule])
    assert not outcome.errors and not outcome.fix_errors, (outcome.errors, outcome.fix_errors)
    return outcome.source


def valid_cases(rules: Tuple[Type[Rule], ...]) -> Iterator[Tuple[str, Type[Rule], Valid]]:
    for rule in rules:
        for index, case in enumerate(rule.VALID):
            yield f"{rule.code}-valid-{index}", rule, case if isinstance(case, Valid) else Valid(case)


def invalid_cases(rules: Tuple[Type[Rule], ...]) -> Iterator[Tuple[str, Type[Rule], Invalid]]:
    for rule in rules:
        for index, case in enumerate(rule.INVALID):
            yield f"{rule.code}-invalid-{index}", rule, case


@dataclass(frozen=True)
class Fixture:
    """One input file under fixtures/CODE/, with what it expects.

    Lines that a rule must flag end in ``# expect: TPF101``; every other line must stay
    clean. ``NAME.py.fixed`` is the expected text after ``--fix``, ``NAME.py.unsafe-fixed``
    after ``--fix --unsafe-fixes``. A first line ``# fixture-options: {...}`` sets options.
    """

    code: str
    path: Path

    @property
    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def options(self) -> Dict[str, Any]:
        match = _OPTIONS.search(self.source)
        return json.loads(match.group("json")) if match else {}

    def expected(self) -> Set[Tuple[int, str]]:
        found = set()
        for row, line in enumerate(self.source.splitlines(), start=1):
            match = _EXPECT.search(line)
            if match:
                for code in re.split(r"\s*,\s*", match.group("codes")):
                    if code == self.code:
                        found.add((row, code))
        return found

    def expected_fix(self, unsafe: bool) -> Optional[str]:
        suffix = ".unsafe-fixed" if unsafe else ".fixed"
        target = self.path.with_name(self.path.name + suffix)
        return target.read_text(encoding="utf-8") if target.exists() else None


def fixtures(root: Path = FIXTURES) -> List[Fixture]:
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        for path in sorted(folder.glob("*.py")):
            out.append(Fixture(folder.name, path))
    return out
