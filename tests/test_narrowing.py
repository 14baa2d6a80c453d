"""Parsing only part of a large file finds exactly what parsing all of it finds.

``narrowing`` blanks the top-level statements the statement-local rules cannot need. The
invariant is checked on every example, fixture and contract case of those rules, padded
into a large file, and the rules of the blanking are checked one by one.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from test_screens import parsed_sources
from pytorch_perflint import engine, narrowing, screening
from pytorch_perflint.config import Settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.registry import all_rules, rule_by_code
from pytorch_perflint.runner import Mode, process_bytes
from pytorch_perflint.testing import lint_example

LOCAL = [r for r in all_rules() if r.candidates_tree(ast.parse("")) is not None]
PADDING = "".join(f"\ndef _pad_{i}(value):\n    return value + {i}\n" for i in range(600))
SETTINGS = dataclasses.replace(Settings(), select=("ALL",), preview=True)


def _key(diagnostic):
    fix = diagnostic.fix and (diagnostic.fix.applicability, diagnostic.fix.message)
    return diagnostic.code, diagnostic.location, diagnostic.end_location, diagnostic.message, fix


def _both(source: str, settings: Settings = SETTINGS):
    path = Path("big.py")
    whole = engine.lint_source(source, path, settings, with_edits=False)
    part = engine.lint_source(source, path, settings, with_edits=False, keep_module=False)
    return whole, part


def test_the_statement_local_rules_are_the_ones_that_say_so():
    """A rule answers ``candidates_tree`` exactly when it declares ``statement_local``, so
    a rule that starts (or stops) narrowing the parse is a visible, deliberate change."""
    assert LOCAL and {r.code for r in LOCAL} == {r.code for r in all_rules() if r.statement_local}


@pytest.mark.parametrize("rule", LOCAL, ids=[r.code for r in LOCAL])
def test_a_padded_example_gets_the_same_diagnostics_either_way(rule, monkeypatch):
    narrowed = []
    real = narrowing.narrowed_source

    def spy(*args):
        text = real(*args)
        narrowed.append(text is not None)
        return text

    monkeypatch.setattr(narrowing, "narrowed_source", spy)
    settings = dataclasses.replace(SETTINGS, select=(rule.code,))
    reported = 0
    for source, options, _ in parsed_sources(rule):
        padded = source.rstrip("\n") + "\n" + PADDING
        whole, part = _both(padded, dataclasses.replace(settings, **{k: v for k, v in options.items() if k != "preview"}))
        assert [_key(d) for d in part.diagnostics] == [_key(d) for d in whole.diagnostics], source
        reported += bool(whole.diagnostics)
    assert reported >= 3
    assert sum(narrowed) >= reported  # the positives really were parsed in part


@pytest.mark.parametrize("rule", LOCAL, ids=[r.code for r in LOCAL])
def test_every_finding_is_in_a_statement_holding_a_candidate(rule, monkeypatch):
    """Stronger than the file-level screen: narrowing keeps only statements with candidates."""
    monkeypatch.setattr(screening, "screen_with_ast", lambda active, source, parsed=None: (active, None))
    reported = 0
    for source, options, tree in parsed_sources(rule):
        rows = [row for row, _ in lint_example(rule, source, options)]
        spans = [(s.lineno, s.end_lineno) for s in tree.body]
        lines = {c.lineno for c in rule.candidates_tree(tree)}
        holding = {span for span in spans if any(span[0] <= line <= span[1] for line in lines)}
        for row in rows:
            assert any(first <= row <= last for first, last in holding), f"{rule.code} row {row}:\n{source}"
        reported += bool(rows)
    assert reported >= 3


def _big(head: str, tail: str = "") -> str:
    return head + PADDING + tail


def test_keeps_candidates_and_whatever_binds_or_changes_the_names_they_read():
    source = _big(
        "import torch as th\nimport numpy as np\nimport os\nBASE = np.zeros(3)\narr = BASE + 1\n"
        "UNUSED = np.ones(2)\n",
        "\ndef helper():\n    global arr\n    arr = arr.tolist()\n"
        "\ndef grow(base=BASE):\n    BASE.append(1)\n"
        "\ndef local_only():\n    arr = 1\n    return [BASE for BASE in range(arr)]\n"
        "\nx = th.tensor(arr)\n",
    )
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "th.tensor"]
    text = narrowing.narrowed_source(source, tree, calls)
    assert text is not None
    kept = text.splitlines()
    assert len(kept) == len(source.splitlines())
    for line in ("import torch as th", "import numpy as np", "BASE = np.zeros(3)", "arr = BASE + 1",
                 "    global arr", "    BASE.append(1)", "x = th.tensor(arr)"):
        assert line in kept
    for line in ("import os", "UNUSED = np.ones(2)", "def _pad_7(value):", "def local_only():"):
        assert line not in kept
    # Every line kept stays where it was.
    assert all(new in ("", old) for new, old in zip(kept, source.splitlines()))


def test_statements_sharing_a_line_are_kept_together_and_decorators_with_their_function():
    source = _big(
        "import torch\nx = [\n  1]; dev = 'cuda'\n@decorate\ndef make():\n    return torch.zeros(3).to(dev)\n"
    )
    tree = ast.parse(source)
    text = narrowing.narrowed_source(source, tree, [tree.body[3].body[0].value])
    assert text is not None
    assert text.startswith("import torch\nx = [\n  1]; dev = 'cuda'\n@decorate\ndef make():\n")
    compile(text, "narrowed.py", "exec")


def test_keeps_line_breaks_as_they_were():
    source = _big("import torch\nx = torch.zeros(3).cuda()\n").replace("\n", "\r\n")
    tree = ast.parse(source)
    text = narrowing.narrowed_source(source, tree, [tree.body[1].value])
    assert text is not None
    assert text.count("\r\n") == source.count("\r\n") and "\n" not in text.replace("\r\n", "")


def test_small_files_and_files_mostly_needed_are_parsed_whole():
    small = "import torch\nx = torch.zeros(3).cuda()\n"
    tree = ast.parse(small)
    assert narrowing.narrowed_source(small, tree, [tree.body[1].value]) is None
    # Every padding function is called from the candidate's statement: nothing to leave out.
    calls = " + ".join(f"_pad_{i}(0)" for i in range(600))
    needed = _big("import torch\n", f"\nx = torch.zeros({calls}).cuda()\n")
    tree = ast.parse(needed)
    assert narrowing.narrowed_source(needed, tree, [tree.body[-1].value]) is None


def test_a_large_file_checked_in_part_reports_at_the_same_place_and_hands_out_no_module():
    source = _big("import torch\n", "\nx = torch.zeros(3).cuda()\n")
    whole, part = _both(source)
    assert [_key(d) for d in part.diagnostics] == [_key(d) for d in whole.diagnostics]
    assert whole.diagnostics[0].location.row == source.count("\n")
    assert part.module is None and not part.candidates
    assert whole.module is not None and whole.candidates


def test_fixing_a_large_file_still_parses_and_rewrites_all_of_it():
    source = _big("import torch\n", "\nx = torch.zeros(3).cuda()\n")
    outcome = fix_source(source, Path("big.py"), SETTINGS)
    assert outcome.fixed == 1
    assert outcome.source == source.replace("torch.zeros(3).cuda()", 'torch.zeros(3, device="cuda")')


def test_check_mode_parses_in_part(monkeypatch):
    seen = []
    real = narrowing.narrowed_source
    monkeypatch.setattr(narrowing, "narrowed_source", lambda *a: seen.append(real(*a)) or seen[-1])
    source = _big("import torch\n", "\nx = torch.zeros(3).cuda()\n")
    processed = process_bytes(source.encode(), Path("big.py"), SETTINGS, Mode.CHECK)
    assert [d.code for d in processed.result.diagnostics] == ["TPF402"]
    assert seen and seen[0] is not None


def test_a_rule_that_reads_the_whole_module_keeps_the_file_whole(monkeypatch):
    called = []
    monkeypatch.setattr(narrowing, "narrowed_source", lambda *a: called.append(a))
    # TPF203 is active here too (an eval loop), and it reads callers anywhere in the module.
    source = _big("import torch\nimport numpy as np\nmodel.eval()\nfor x in loader:\n    model(x)\n",
                  "\ny = torch.tensor(np.zeros(3))\n")
    rules = [rule_by_code("TPF401"), rule_by_code("TPF203")]
    engine.lint_source(source, Path("big.py"), SETTINGS, with_edits=False, keep_module=False, rules=rules)
    assert called == []
