"""The fixer's fast paths give what the plain algorithm gives.

On a large file the fixer rebuilds, renders and re-parses only the statements its fixes
touch (`splice_fixes`), lints the old tree with those statements swapped in, and merges fixes that add keyword arguments to the same call
(`merge_keyword_additions`) instead of spending a lint of the whole file per fix. Both
must produce the text of the plain algorithm: every fix on the whole module, overlapping
fixes one round later. These tests run both on every fixture and rule example, with every
rule (unsafe fixes and preview included), and compare.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import libcst as cst
import pytest

from pytorch_perflint import registry
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import MAX_ROUNDS, _choose, fix_source
from pytorch_perflint.testing import fixtures, invalid_cases, settings_with
from pytorch_perflint.transform import apply_fixes, merge_keyword_additions, overlaps, splice_fixes

SETTINGS = settings_with({"select": ("ALL",), "preview": True}, unsafe_fixes=True, fix=True)
SOURCES = [pytest.param(f.source, id=f"{f.code}/{f.path.name}") for f in fixtures()] + [
    pytest.param(case.code, id=name) for name, _, case in invalid_cases(registry.all_rules()) if case.expected_fix
]


def plain_fix(source: str) -> str:
    """The reference: each round applies the non-overlapping fixes to the whole module."""
    current = source
    for _ in range(MAX_ROUNDS):
        lint = lint_source(current, Path("example.py"), SETTINGS, with_edits=False)
        chosen: List = []
        for candidate in lint.candidates:
            if candidate.fix.applicability.value == "display-only":
                continue
            if not any(overlaps(candidate.ranges, other.ranges) for other in chosen):
                chosen.append(candidate)
        if not chosen or lint.module is None:
            return current
        updated = apply_fixes(lint.module, [c.fix for c in chosen]).code
        if updated == current:
            return current
        current = updated
    return current


@pytest.mark.parametrize("source", SOURCES)
def test_fast_fixer_gives_the_plain_algorithms_text(source):
    outcome = fix_source(source, Path("example.py"), SETTINGS)
    assert not outcome.fix_errors
    assert outcome.source == plain_fix(source)


@pytest.mark.parametrize("source", SOURCES)
def test_splicing_statements_equals_rendering_the_module(source):
    lint = lint_source(source, Path("example.py"), SETTINGS, with_edits=False)
    plan = _choose(lint.candidates, SETTINGS, None)
    if not plan or lint.module is None:
        pytest.skip("no fix to apply")
    fixes = [(p.fix, [r[0][0] for r in p.ranges]) for p in plan]
    spliced = splice_fixes(lint.module, source, ast.parse(source), fixes)
    if spliced is None:
        assert any(p.fix.imports for p in plan), "only an import to add may need the whole module"
        return
    assert spliced.text == apply_fixes(lint.module, [p.fix for p in plan]).code
    # The next round lints the old tree with the rebuilt statements swapped in: it must be
    # the tree LibCST makes of the whole text.
    assert spliced.module is not None
    assert spliced.module.deep_equals(cst.parse_module(spliced.text))


def test_splicing_keeps_the_text_around_the_statements_byte_for_byte():
    source = "# head\n\nimport torch  # c\n\n\nx = torch.nn.DataParallel(m)\r\ny = 1  \n# tail\n"
    module = cst.parse_module(source)
    call = module.body[1].body[0].value
    fix = ((call.func, cst.parse_expression("torch.nn.Identity")),)
    from pytorch_perflint.finding import NodeFix
    from pytorch_perflint.types import Applicability

    node_fix = NodeFix(fix, Applicability.UNSAFE, "m")
    spliced = splice_fixes(module, source, ast.parse(source), [(node_fix, [6])])
    assert spliced.text == source.replace("torch.nn.DataParallel", "torch.nn.Identity")
    assert spliced.text == apply_fixes(module, [node_fix]).code
    assert spliced.module is not None and spliced.module.deep_equals(cst.parse_module(spliced.text))
    # the statement with its leading blank lines, from row 4
    assert spliced.pieces == ((4, "\n\nx = torch.nn.DataParallel(m)\r\n", "\n\nx = torch.nn.Identity(m)\r\n"),)


@pytest.mark.parametrize(
    "call",
    [
        "DataLoader(ds)",
        "DataLoader(ds, batch_size=8)",
        "DataLoader(\n    ds,\n    batch_size=8,\n)",
        "DataLoader(\n    ds,  # the data\n    batch_size=8,  # small\n)",
        "DataLoader(ds,\n           batch_size=8)",
    ],
)
def test_merged_keyword_additions_equal_applying_one_after_the_other(call):
    from pytorch_perflint.analysis.call_edits import keyword_arg, with_keywords

    old = cst.parse_expression(call)
    workers = keyword_arg("num_workers", cst.Integer("4"))
    pinned = keyword_arg("pin_memory", cst.Name("True"))
    first, second = with_keywords(old, [workers]), with_keywords(old, [pinned])
    merged = merge_keyword_additions(old, first, second)
    sequential = with_keywords(with_keywords(old, [workers]), [pinned])
    assert merged is not None
    assert cst.Module([]).code_for_node(merged) == cst.Module([]).code_for_node(sequential)


def test_only_pure_keyword_additions_with_new_names_merge():
    from pytorch_perflint.analysis.call_edits import keyword_arg, with_keywords

    old = cst.parse_expression("DataLoader(ds, num_workers=0)")
    same_name = with_keywords(old, [keyword_arg("pin_memory", cst.Name("True"))])
    assert merge_keyword_additions(old, same_name, same_name) is None  # one keyword twice
    changed = old.with_changes(args=[old.args[0].with_changes(value=cst.Name("other")), *old.args[1:]])
    renamed = with_keywords(changed, [keyword_arg("timeout", cst.Integer("5"))])
    assert merge_keyword_additions(old, same_name, renamed) is None  # changes an argument
    other_func = with_keywords(old.with_changes(func=cst.Name("Loader")), [keyword_arg("timeout", cst.Integer("5"))])
    assert merge_keyword_additions(old, same_name, other_func) is None
    assert merge_keyword_additions(old, same_name, cst.Name("x")) is None


def test_a_dataloader_gets_its_keywords_in_one_round_and_the_counts_say_so(monkeypatch):
    from pytorch_perflint import fixer

    lints = []
    monkeypatch.setattr(fixer, "lint_source", lambda *a, **k: lints.append(1) or lint_source(*a, **k))
    source = "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\nloader = DataLoader(ds, batch_size=8)\n"
    outcome = fix_source(source, Path("m.py"), SETTINGS)
    assert "loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)\n" in outcome.source
    assert outcome.source == plain_fix(source)
    assert [(code, count) for code, _, count in outcome.fixes] == [("TPF101", 1), ("TPF102", 1)]
    assert len(lints) == 2  # one lint to find both, one to see that nothing is left


LAYOUTS = [
    "# top comment\n\nimport x\n\n# lead\n\ndef f():\n    y = slow(1)\n    # trailing in the body\n\n# after\nz = 1\n",
    "class A:\n    def m(self):\n        return slow(2)\n\n    # between\n    def n(self):\n        pass\n",
    "if a:\n    slow(1)\nelse:\n    pass\n# end of file\n",
    "a = slow(1); b = 2\r\nc = 3\r\n",
    "x = [\n    slow(1),  # keep\n    2,\n]\n\n\n\ny = 1\n",
    "def f():\n\tif x:\n\t\treturn slow(1)\n\treturn 0\n",
    "x = slow(1)",  # no final newline: the whole-module path
]


@pytest.mark.parametrize("source", LAYOUTS)
def test_splicing_keeps_every_layout_and_its_tree_is_the_parsed_one(source):
    from fix_rules import SlowCall

    lint = lint_source(source, Path("m.py"), SETTINGS, with_edits=False, rules=[SlowCall])
    plan = _choose(lint.candidates, SETTINGS, None)
    spliced = splice_fixes(lint.module, source, ast.parse(source), [(p.fix, [r[0][0] for r in p.ranges]) for p in plan])
    if spliced is not None:
        assert spliced.text == apply_fixes(lint.module, [p.fix for p in plan]).code
        if spliced.module is not None:
            assert spliced.module.deep_equals(cst.parse_module(spliced.text))
    outcome = fix_source(source, Path("m.py"), SETTINGS, rules=[SlowCall])
    assert outcome.source == source.replace("slow(", "fast(") and not outcome.fix_errors
