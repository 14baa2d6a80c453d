"""Test-only rules with a safe and an unsafe fix, shared by the runner and CLI tests."""

from __future__ import annotations

import libcst as cst

from pytorch_perflint.rule import Rule
from pytorch_perflint.types import Applicability


class SlowCall(Rule):
    """## What it does
    Test-only rule: flags `slow(...)` and offers a safe fix to `fast(...)`.
    """

    code = "TPF901"
    name = "slow-call"
    message = "use `fast()`"
    fix_applicability = Applicability.SAFE
    triggers = ("slow",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "slow":
            self.report(node, fix=self.fix([(node.func, cst.Name("fast"))], "call `fast` instead"))


class RiskyCall(Rule):
    """## What it does
    Test-only rule: flags `risky(...)` with an unsafe fix to `safe(...)`.
    """

    code = "TPF902"
    name = "risky-call"
    message = "use `safe()`"
    fix_applicability = Applicability.UNSAFE
    triggers = ("risky",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "risky":
            self.report(node, fix=self.fix([(node.func, cst.Name("safe"))], "call `safe` instead"))


TEST_RULES = (SlowCall, RiskyCall)
