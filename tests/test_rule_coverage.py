"""Every rule the registry finds is complete: fixtures, a bench scenario and a docs entry.

This is what makes docs/architecture.md's "adding a rule" true: a rule's family folder, its
fixtures and its scenario (plus the regenerated docs) are all a new rule needs, and a rule
missing any of them fails here rather than slipping through.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytorch_perflint.bench.scenario import discover
from pytorch_perflint.registry import RULE_MODULE, all_rules
from pytorch_perflint.testing import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
RULES = all_rules()
IDS = [rule.code for rule in RULES]


def test_the_registry_finds_the_rules_of_every_family():
    families = {rule.__module__.split(".")[2] for rule in RULES}
    assert len(RULES) >= 15 and families >= {"dataloader", "training", "tensors", "layers", "parallel"}


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_lives_in_its_own_module_of_a_family(rule):
    *_, family, module = rule.__module__.split(".")
    assert rule.__module__.startswith("pytorch_perflint.rules.") and family != "rules"
    assert RULE_MODULE.match(module) and module.startswith(rule.code.lower() + "_")


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_has_fixtures_that_expect_it_and_look_alikes(rule):
    folder = FIXTURES / rule.code
    inputs = sorted(folder.glob("*.py"))
    assert inputs, f"no fixtures under {folder}"
    marker = f"# expect: {rule.code}"
    flagged = [p for p in inputs if marker in p.read_text(encoding="utf-8")]
    assert flagged, f"no fixture of {rule.code} says {marker!r}"
    # Look-alikes: code it must not flag, in a file of their own or beside the findings.
    lines = [line for p in inputs for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert any(marker not in line for line in lines)


def test_every_rule_has_one_bench_scenario():
    assert [s.code for s in discover()] == IDS


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_has_its_docs_entry(rule):
    """docs/rules.md is generated from the rules (scripts/gen_rule_docs.py); a rule added
    without regenerating it has no entry."""
    docs = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {rule.code}\b", docs, re.M), f"run: python scripts/gen_rule_docs.py ({rule.code})"
    assert rule.name in docs
