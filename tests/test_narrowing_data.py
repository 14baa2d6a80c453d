"""A large table of data is not handed to LibCST (``narrowing.without_data``), and every
rule finds exactly what it finds with the table parsed.

torch's ``sparse/_triton_ops_meta.py`` holds a 7,000-line dict of numbers keyed by
``torch.float16`` and the like; one rule that reads the whole module made LibCST parse it
all (6 s, a sixth of a cold run over the torch package).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from test_screens import parsed_sources
from pytorch_perflint import engine, narrowing
from pytorch_perflint.config import Settings
from pytorch_perflint.registry import all_rules
from pytorch_perflint.testing import lint_example, settings_with

SETTINGS = dataclasses.replace(Settings(), select=("ALL",), preview=True)
ROWS = "".join(f"    ({i}, torch.float16): [-{i}, 'x'],\n" for i in range(100))
TABLE = "\nimport torch\n_TABLE: dict = {\n" + ROWS + "}\n"


def _key(diagnostic):
    fix = diagnostic.fix and (diagnostic.fix.applicability, diagnostic.fix.message)
    return diagnostic.code, diagnostic.location, diagnostic.end_location, diagnostic.message, fix


def _blanked(source: str):
    return narrowing.without_data(source, ast.parse(source))


def test_a_large_literal_assignment_is_written_as_an_ellipsis_on_its_rows():
    source = "import torch\nx = 1\n" + TABLE + "y = _TABLE[(1, torch.float16)]\n"
    text = _blanked(source)
    assert text is not None
    lines, old = text.splitlines(), source.splitlines()
    assert len(lines) == len(old)
    assert "_TABLE: dict = ..." in lines
    assert all(new in ("", old_line) or new == "_TABLE: dict = ..." for new, old_line in zip(lines, old))
    assert lines[-1] == "y = _TABLE[(1, torch.float16)]"
    compile(text, "lean.py", "exec")


@pytest.mark.parametrize(
    "table",
    [
        TABLE.replace("'x'", "make()"),  # a call: code, not data
        TABLE.replace("'x'", "value"),  # a name a rule's scope analysis may follow
        TABLE.replace("torch.float16", "np.float16"),  # not imported: may be a variable
        TABLE.replace("_TABLE: dict = {", "_TABLE: dict = ({").replace("\n}\n", "\n})\n"),  # parenthesised
        TABLE.replace("\n}\n", "\n}; other = 1\n"),  # shares its last line
        TABLE.replace(ROWS, "".join(ROWS.splitlines(keepends=True)[:50])),  # too small to matter
    ],
    ids=["call", "name", "unimported", "parenthesised", "shared-line", "small"],
)
def test_anything_but_a_large_literal_standing_alone_is_kept(table):
    assert _blanked("import torch\n" + table) is None


def test_line_breaks_stay_as_they_were():
    source = ("import torch\n" + TABLE).replace("\n", "\r\n")
    text = _blanked(source)
    assert text is not None and text.count("\r\n") == source.count("\r\n")


def test_a_check_parses_the_file_without_its_table(monkeypatch):
    parsed = []
    real = cst.parse_module
    monkeypatch.setattr(engine.cst, "parse_module", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    source = "import torch\n" + TABLE + "model = torch.nn.Conv2d(3, 8, 3).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    source += "for x in loader:\n    model(x.cuda()).sum().backward()\n    opt.step()\n"
    whole = engine.lint_source(source, Path("big.py"), SETTINGS, with_edits=False)
    lean = engine.lint_source(source, Path("big.py"), SETTINGS, with_edits=False, keep_module=False)
    assert [_key(d) for d in lean.diagnostics] == [_key(d) for d in whole.diagnostics]
    assert "TPF403" in {d.code for d in whole.diagnostics}
    assert len(parsed) == 2 and "(99, torch.float16)" in parsed[0] and "(99, torch.float16)" not in parsed[1]
    assert lean.module is None and not lean.candidates


RULES = list(all_rules())


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_rule_finds_the_same_with_a_table_in_the_file(rule):
    """Each example each rule reports on, with a table appended (that no example reads),
    checked whole and without the table: the same findings at the same places, the same
    fix edits."""
    for source, options, _ in parsed_sources(rule):
        if not lint_example(rule, source, options):
            continue
        padded = source.rstrip("\n") + "\n" + TABLE
        assert _blanked(padded) is not None
        chosen = settings_with({**options, "preview": True, "select": (rule.code,)})
        whole = engine.lint_source(padded, Path("big.py"), chosen, with_edits=True)
        lean = engine.lint_source(padded, Path("big.py"), chosen, with_edits=True, keep_module=False)
        assert [_key(d) for d in lean.diagnostics] == [_key(d) for d in whole.diagnostics], source
        assert [d.fix and d.fix.edits for d in lean.diagnostics] == [d.fix and d.fix.edits for d in whole.diagnostics], source
