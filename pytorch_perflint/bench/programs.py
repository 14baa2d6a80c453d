"""Building a scenario's "after" program with the tool's own fix, and checking the rule.

The "after" must come from the same code path users run (``fix_source`` with unsafe fixes
and preview on, only the scenario's rule selected), so a benchmark measures the fix that
ships, not a hand-tuned variant. Display-only rules have no fix: their hand-written "after"
is checked the same way (the rule must be silent on it). Nothing here imports torch.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from .. import registry
from ..engine import lint_source
from ..fixer import fix_source
from ..testing import settings_with
from ..types import Diagnostic
from .scenario import Scenario


@dataclass(frozen=True)
class ProgramCheck:
    """Whether the rule fires on "before", is fixed, and is silent on "after"."""

    code: str
    rule_exists: bool
    fires_before: int  # diagnostics of the rule on "before"
    fires_after: int  # ... and on "after" (must be 0)
    fix_applied: int  # fixes the tool applied (0 for hand-written "after")
    after_source: str  # "tool-fix" or "hand-written"
    applicability: Optional[str]  # of the rule's fix on "before", as the diagnostic says
    messages: Tuple[str, ...]  # the rule's messages on "before"
    errors: Tuple[str, ...]  # lint or fix errors

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def problems(self) -> Tuple[str, ...]:
        """What went wrong, in words, for the table and the report."""
        found = []
        if not self.rule_exists:
            found.append(f"rule {self.code} is not implemented")
            return tuple(found)
        if self.fires_before == 0:
            found.append(f"{self.code} does not fire on the scenario")
        elif self.after_source == "tool-fix" and self.fix_applied == 0:
            found.append(f"the tool applied no fix for {self.code}")
        if self.fires_after:
            found.append(f"{self.code} still fires after the fix ({self.fires_after}x)")
        found.extend(self.errors)
        return tuple(found)


@dataclass(frozen=True)
class Programs:
    """The two program texts the harness runs, with the checks made on them."""

    scenario: Scenario
    before: str
    after: str
    check: ProgramCheck

    @property
    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"{self.scenario.code.lower()}_before.py",
                f"{self.scenario.code.lower()}_after.py",
            )
        )


def _path(scenario: Scenario) -> Path:
    return Path(f"bench_{scenario.code.lower()}.py")


def _settings(code: str):
    return settings_with({}, select=(code,), preview=True, fix=True, unsafe_fixes=True)


def _rule_diagnostics(source: str, scenario: Scenario) -> Tuple[Tuple[Diagnostic, ...], Tuple[str, ...]]:
    result = lint_source(source, _path(scenario), _settings(scenario.code))
    return tuple(d for d in result.diagnostics if d.code == scenario.code), tuple(result.errors)


def build(scenario: Scenario) -> Programs:
    """Lint "before", make "after" (the tool's fix or the hand-written text), re-lint it."""
    code = scenario.code
    if registry.rule_by_code(code) is None:
        check = ProgramCheck(code, False, 0, 0, 0, _kind(scenario), None, (), ())
        return Programs(scenario, scenario.before, scenario.after or scenario.before, check)
    before_diags, errors = _rule_diagnostics(scenario.before, scenario)
    applicability = next((str(d.fix.applicability) for d in before_diags if d.fix is not None), None)
    rule = registry.rule_by_code(code)
    if applicability is None and before_diags and rule is not None and rule.fix_applicability is not None:
        applicability = str(rule.fix_applicability)  # display-only rules attach no edits
    fixed = 0
    fix_errors: Tuple[str, ...] = ()
    if scenario.after is not None:
        after = scenario.after
    else:
        outcome = fix_source(scenario.before, _path(scenario), _settings(code))
        after, fixed = outcome.source, outcome.fixed
        fix_errors = tuple(outcome.errors) + tuple(outcome.fix_errors)
    after_diags, after_errors = _rule_diagnostics(after, scenario)
    all_errors = tuple(dict.fromkeys(errors + fix_errors + after_errors))
    check = ProgramCheck(
        code=code,
        rule_exists=True,
        fires_before=len(before_diags),
        fires_after=len(after_diags),
        fix_applied=fixed,
        after_source=_kind(scenario),
        applicability=applicability,
        messages=tuple(d.message for d in before_diags),
        errors=all_errors,
    )
    return Programs(scenario, scenario.before, after, check)


def _kind(scenario: Scenario) -> str:
    return "hand-written" if scenario.hand_written else "tool-fix"
