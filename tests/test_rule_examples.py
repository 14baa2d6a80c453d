"""Every rule's VALID/INVALID examples and every fixture file, run as data."""

from __future__ import annotations

import pytest

from pytorch_perflint.registry import all_rules, rule_by_code
from pytorch_perflint.testing import fix_example, fixtures, invalid_cases, lint_example, valid_cases

RULES = all_rules()


@pytest.mark.parametrize(("rule", "case"), [pytest.param(r, c, id=i) for i, r, c in valid_cases(RULES)])
def test_valid_examples_are_not_flagged(rule, case):
    assert lint_example(rule, case.code, case.options) == []


@pytest.mark.parametrize(("rule", "case"), [pytest.param(r, c, id=i) for i, r, c in invalid_cases(RULES)])
def test_invalid_examples_are_flagged(rule, case):
    found = lint_example(rule, case.code, case.options)
    assert found, f"{rule.code} did not fire on:\n{case.code}"
    if case.line is not None:
        assert case.line in [line for line, _ in found]
    if case.expected_fix is not None:
        assert fix_example(rule, case.code, case.options) == case.expected_fix


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_rule_is_documented_and_has_examples(rule):
    docs = rule.docs()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in docs, f"{rule.code} docs lack {heading!r}"
    assert rule.VALID and rule.INVALID
    assert rule.name == rule.name.lower() and " " not in rule.name


FIXTURES = fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{f.code}/{f.path.name}" for f in FIXTURES])
def test_fixture_findings(fixture):
    rule = rule_by_code(fixture.code)
    assert rule is not None, f"fixtures/{fixture.code} names no rule"
    found = set(lint_example(rule, fixture.source, fixture.options, path=fixture.path.name))
    assert found == fixture.expected()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{f.code}/{f.path.name}" for f in FIXTURES])
@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fix"])
def test_fixture_fixes(fixture, unsafe):
    expected = fixture.expected_fix(unsafe)
    if expected is None:
        pytest.skip("no expected output for this mode")
    rule = rule_by_code(fixture.code)
    fixed = fix_example(rule, fixture.source, fixture.options, unsafe=unsafe, path=fixture.path.name)
    assert fixed == expected
    # Fixing twice changes nothing the second time.
    assert fix_example(rule, fixed, fixture.options, unsafe=unsafe, path=fixture.path.name) == fixed


def test_rule_codes_are_unique_and_named_after_their_module():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    for rule in RULES:
        module = rule.__module__.rsplit(".", 1)[-1]
        assert module == f"{rule.code.lower()}_{rule.name.replace('-', '_')}"
