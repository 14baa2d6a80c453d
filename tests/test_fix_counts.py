"""Counts that agree: what `check` reports, what `--fix` then fixes (fixes can reveal
further findings), per-rule `--show-fixes`, and rules whose fix safety depends on the finding."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from pytorch_perflint import registry
from pytorch_perflint.cli import main
from pytorch_perflint.engine import lint_source
from pytorch_perflint.output.summary import fix_only_sentence, fixed_sentence, summary_lines
from pytorch_perflint.rule import Rule
from pytorch_perflint.testing import fixtures, invalid_cases, settings_with
from pytorch_perflint.types import Applicability, RunSummary

# TPF101 (unsafe) and TPF102 (safe) fire now; once `pin_memory=True` is in, the two `.cuda()`
# copies become TPF104 findings (safe): fixing reveals them.
TRAIN = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=32)
model = model.cuda()
for x, y in loader:
    x = x.cuda()
    y = y.cuda()
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


@pytest.fixture
def train(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    return path


def _check(*args: str):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def test_fix_says_how_many_it_found_and_how_many_fixing_revealed(train):
    before = json.loads(_check("--output-format", "json").stdout)
    assert sorted(d["code"] for d in before) == ["TPF101", "TPF102"]
    result = _check("--fix", "--unsafe-fixes", "--show-fixes", "--output-format", "concise")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == "Found 2 errors, and fixing revealed 2 more (4 fixed, 0 remaining)."
    assert lines[:5] == [
        "Fixed 4 errors:",
        "- train.py:",
        "    2 × TPF104 (blocking-host-to-device-copy)",
        "    1 × TPF101 (dataloader-sync-loading)",
        "    1 × TPF102 (dataloader-no-pin-memory)",
    ]
    assert "num_workers=4, pin_memory=True" in train.read_text() and "non_blocking=True" in train.read_text()


def test_safe_fixes_only_count_the_unsafe_finding_that_remains(train):
    result = _check("--fix", "--output-format", "concise")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-2] == "Found 2 errors, and fixing revealed 2 more (3 fixed, 1 remaining)."
    assert "TPF101" in result.stdout


def test_diff_and_fix_only_say_the_same(train):
    diff = _check("--diff", "--unsafe-fixes")
    assert "Would fix 4 errors (2 found now, 2 more that fixing reveals)." in diff.stderr
    only = _check("--fix-only", "--unsafe-fixes")
    assert only.exit_code == 0 and "Fixed 4 errors (2 found, 2 more that fixing revealed)." in only.stderr


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        (RunSummary(fixed=4, remaining=0, found_before_fix=2, fix_mode=True), "Found 2 errors, and fixing revealed 2 more (4 fixed, 0 remaining)."),
        (RunSummary(fixed=3, remaining=0, found_before_fix=4, fix_mode=True), "Found 4 errors (3 fixed, 1 resolved by other fixes, 0 remaining)."),
        (RunSummary(fixed=2, remaining=1, found_before_fix=3, fix_mode=True), "Found 3 errors (2 fixed, 1 remaining)."),
        (RunSummary(fixed=1, remaining=0, fix_mode=True), "Found 1 error (1 fixed, 0 remaining)."),
    ],
)
def test_fixed_sentence_adds_up(summary, expected):
    assert fixed_sentence(summary) == expected
    assert summary_lines(summary)[0].text == expected


def test_diff_and_fix_only_sentences_add_up_with_findings_no_fix_removes():
    """Issue 21: "Would fix 28 errors (22 found now, 9 more...)": 22 + 9 is 31, the three
    findings without a fix (display-only) were counted and not said."""
    diff = RunSummary(fixed=28, remaining=3, found_before_fix=22, diff_mode=True)
    assert summary_lines(diff)[0].text == "Would fix 28 errors (22 found now, 9 more that fixing reveals, 3 would remain)."
    fix = RunSummary(fixed=28, remaining=3, found_before_fix=22, fix_mode=True)
    assert fix_only_sentence(fix) == "Fixed 28 errors (22 found, 9 more that fixing revealed, 3 remaining)."
    assert fixed_sentence(fix) == "Found 22 errors, and fixing revealed 9 more (28 fixed, 3 remaining)."


# -- fix safety that depends on the finding ----------------------------------------------


def test_tpf402_is_safe_or_unsafe_depending_on_the_device():
    rule = registry.rule_by_code("TPF402")
    assert rule.fix_label() == "safe/unsafe"
    source = "import torch\na = torch.zeros(3).cuda()\nb = torch.zeros(3).to(device)\n"
    found = lint_source(source, Path("m.py"), settings_with({}), rules=[rule]).diagnostics
    assert [(d.location.row, d.fix.applicability) for d in found] == [(2, Applicability.SAFE), (3, Applicability.UNSAFE)]


def test_rules_tables_show_safe_unsafe_where_it_depends():
    infos = {i["code"]: i for i in json.loads(CliRunner().invoke(main, ["rules", "--output-format", "json"]).stdout)}
    assert infos["TPF402"]["fix"] == "safe/unsafe" and infos["TPF102"]["fix"] == "safe"
    root = Path(__file__).resolve().parent.parent
    assert "| tensor-created-then-moved | safe/unsafe |" in (root / "README.md").read_text(encoding="utf-8")
    assert "| tensor-created-then-moved | safe/unsafe |" in (root / "docs" / "rules.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", registry.all_rules(), ids=lambda r: r.code)
def test_declared_fix_safety_covers_what_the_examples_get(rule):
    """Each rule's examples and fixtures get only the applicabilities it declares, and a
    rule that declares several shows each of them there."""
    seen = set()
    cases = [(case.code, case.options) for _, _, case in invalid_cases((rule,))]
    cases += [(fixture.source, fixture.options) for fixture in fixtures() if fixture.code == rule.code]
    for code, options in cases:
        lint = lint_source(code, Path("example.py"), settings_with(options), rules=[rule])
        seen.update(d.fix.applicability for d in lint.diagnostics if d.fix is not None)
    assert seen <= set(rule.applicabilities()), (rule.code, seen)
    if len(rule.applicabilities()) > 1:
        assert seen == set(rule.applicabilities()), (rule.code, seen)


class _Undeclared(Rule):
    """## What it does
    Test-only: makes an unsafe fix while declaring only safe ones."""

    code = "TPF903"
    name = "undeclared"
    message = "m"
    fix_applicability = Applicability.SAFE

    def visit_Name(self, node: cst.Name) -> None:
        self.report(node, fix=self.fix([(node, cst.Name("y"))], "rename", applicability=Applicability.UNSAFE))


def test_a_fix_of_an_undeclared_safety_is_refused():
    lint = lint_source("x\n", Path("m.py"), settings_with({}), rules=[_Undeclared])
    assert lint.errors and "made a fix that is unsafe but declares only safe" in lint.errors[0]
