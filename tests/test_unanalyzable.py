"""TPF003: valid Python that LibCST cannot parse is "not analysed", never a syntax error.

Python's own parser is the judge of what is valid: a file ``compile`` accepts is never
TPF001. Where the tool's parser (LibCST) still fails, the file gets TPF003, which says the
limitation is the tool's, so that the user knows the file was not checked.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from pytorch_perflint import registry
from pytorch_perflint.cli import main
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source

LOADER = "from torch.utils.data import DataLoader\n"

# Valid Python (3.9+) that LibCST 1.x rejects, each found by hand or reported upstream
# (Instagram/LibCST#1061 for the conditional expression). The row is where LibCST stopped.
LIBCST_REJECTS = [
    pytest.param("(x): int = 1\n", 2, id="parenthesised-annotation-target"),
    pytest.param("(x): int\n", 2, id="parenthesised-bare-annotation"),
    pytest.param("((x)): int = 1\n", 2, id="doubly-parenthesised-target"),
    pytest.param("(x.y): int = 1\n", 2, id="parenthesised-attribute-target"),
    pytest.param("(x[0]): int\n", 2, id="parenthesised-subscript-target"),
    pytest.param("class A:\n    (x): int = 1\n", 3, id="in-a-class-body"),
]
# LibCST's parser reads this, then its own node validation raises a TypeError (a bug in
# ``IfExp._validate``, Instagram/LibCST#1061). The engine's parse does not validate the
# parser's output (``cst_parse``), so the file is linted and fixed like any other.
VALIDATION_CRASH = "() if 0 else(lambda:())\n"


def _valid_python(source: str) -> bool:
    try:
        compile(source, "<test>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return False
    return True


def _libcst_parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure counts
        return False
    return True


@pytest.mark.parametrize(("construct", "row"), LIBCST_REJECTS)
def test_valid_python_libcst_rejects_is_tpf003_not_tpf001(construct, row):
    source = LOADER + construct + "loader = DataLoader(ds)\n"
    assert _valid_python(source) and not _libcst_parses(source)  # the premise of the test
    lint = lint_source(source, Path("x.py"), Settings())
    assert [d.code for d in lint.diagnostics] == ["TPF003"]
    (diagnostic,) = lint.diagnostics
    assert diagnostic.name == "unanalyzable-file"
    assert diagnostic.location.row == row
    assert "not an error in your code" in diagnostic.message and "not checked" in diagnostic.message
    assert lint.errors == []


@pytest.mark.parametrize(("construct", "row"), LIBCST_REJECTS)
def test_valid_python_libcst_rejects_gets_no_fix_and_no_tpf001_in_fix_mode(construct, row):
    source = LOADER + construct + "loader = DataLoader(ds)\n"
    outcome = fix_source(source, Path("x.py"), Settings())
    assert outcome.source == source and outcome.fixed == 0
    assert [d.code for d in outcome.diagnostics] == ["TPF003"]


def test_a_file_libcst_validation_crashes_on_is_linted_and_fixed():
    source = LOADER + VALIDATION_CRASH + "loader = DataLoader(ds)\n"
    assert _valid_python(source) and not _libcst_parses(source)  # the premise of the test
    lint = lint_source(source, Path("x.py"), Settings())
    assert [(d.code, d.location.row) for d in lint.diagnostics] == [("TPF101", 3)]
    outcome = fix_source(source, Path("x.py"), dataclasses.replace(Settings(), unsafe_fixes=True))
    assert outcome.fixed == 1 and not outcome.diagnostics and not outcome.fix_errors
    assert outcome.source == LOADER + VALIDATION_CRASH + "loader = DataLoader(ds, num_workers=4)\n"
    assert _valid_python(outcome.source)


def test_a_file_no_rule_could_fire_in_needs_no_analysis_and_gets_nothing():
    assert lint_source("(x): int = 1\n", Path("x.py"), Settings()).diagnostics == []


def test_a_real_syntax_error_is_still_tpf001():
    (diagnostic,) = lint_source(LOADER + "(x): = 1\nDataLoader(ds)\n", Path("x.py"), Settings()).diagnostics
    assert diagnostic.code == "TPF001" and diagnostic.location.row == 2


SOURCE = LOADER + "(x): int = 1\nloader = DataLoader(ds)\n"


@pytest.mark.parametrize(
    "change",
    [
        {"ignore": ("TPF003",)},
        {"ignore": ("unanalyzable-file",)},
        {"select": ("TPF101",)},
        {"per_file_ignores": (("x.py", ("TPF003",)),)},
    ],
)
def test_tpf003_follows_selection(change):
    settings = dataclasses.replace(Settings(), **change)
    assert lint_source(SOURCE, Path("x.py"), settings).diagnostics == []


def test_tpf003_selected_by_code_and_by_prefix_with_a_rule():
    # TPF003 alone runs no rule: nothing needs parsing, so nothing is reported.
    assert lint_source(SOURCE, Path("x.py"), dataclasses.replace(Settings(), select=("TPF003",))).diagnostics == []
    for select in (("TPF003", "TPF101"), ("TPF0", "TPF101")):
        settings = dataclasses.replace(Settings(), select=select)
        assert [d.code for d in lint_source(SOURCE, Path("x.py"), settings).diagnostics] == ["TPF003"]


def test_tpf003_is_suppressed_by_noqa_on_its_line_and_by_the_file_directive():
    noqa = SOURCE.replace("(x): int = 1\n", "(x): int = 1  # noqa: TPF003\n")
    assert lint_source(noqa, Path("x.py"), Settings()).diagnostics == []
    other = SOURCE.replace("(x): int = 1\n", "(x): int = 1  # noqa: TPF101\n")
    assert [d.code for d in lint_source(other, Path("x.py"), Settings()).diagnostics] == ["TPF003"]
    whole = "# pytorch-perflint: noqa\n" + SOURCE
    assert lint_source(whole, Path("x.py"), Settings()).diagnostics == []


def test_tpf003_is_a_builtin_code_on_by_default():
    assert registry.BUILTIN_CODES["TPF003"] == "unanalyzable-file"
    assert "TPF003" in registry.default_codes(preview=False)
    assert registry.expand("unanalyzable-file") == ["TPF003"]


def test_tpf003_in_the_rules_and_rule_commands():
    listing = CliRunner().invoke(main, ["rules", "--output-format", "json"])
    info = {item["code"]: item for item in json.loads(listing.stdout)}["TPF003"]
    assert info["name"] == "unanalyzable-file" and info["default"] is True and info["fix"] is None
    assert "parser" in info["summary"]
    explained = CliRunner().invoke(main, ["rule", "unanalyzable-file"])
    assert explained.exit_code == 0
    assert explained.stdout.startswith("# TPF003: unanalyzable-file\n")
    assert "## Why is this bad?" in explained.stdout and "--ignore TPF003" in explained.stdout


def test_tpf003_end_to_end_in_concise_json_and_sarif(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text(SOURCE)
    concise = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "x.py"])
    assert concise.exit_code == 1
    assert concise.stdout.startswith("x.py:2:1: TPF003 ")
    as_json = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "x.py"])
    (item,) = json.loads(as_json.stdout)
    assert (item["code"], item["name"], item["fix"]) == ("TPF003", "unanalyzable-file", None)
    sarif = json.loads(CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "sarif", "x.py"]).stdout)
    (run,) = sarif["runs"]
    (result,) = run["results"]
    assert result["ruleId"] == "TPF003" and result["level"] == "warning"
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == "TPF003" and "parser" in rule["help"]["markdown"]
    ignored = CliRunner().invoke(main, ["check", "--no-cache", "--ignore", "TPF003", "x.py"])
    assert ignored.exit_code == 0


@pytest.mark.parametrize(("construct", "cell_row"), [("(x): int = 1\n", 2)])
def test_tpf003_in_a_notebook_is_kept_on_its_cell(tmp_path, monkeypatch, construct, cell_row):
    monkeypatch.chdir(tmp_path)
    cells = [LOADER + construct, "loader = DataLoader(ds)\n"]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", "nb.ipynb"])
    (item,) = json.loads(result.stdout)
    assert (item["code"], item["cell"], item["location"]["row"]) == ("TPF003", 1, cell_row)


def test_a_libcst_error_without_a_position_is_named_in_the_message(monkeypatch):
    from pytorch_perflint import engine

    def fail(source):
        raise cst.ParserSyntaxError("tokenizer error: something odd", lines=source.splitlines(True), raw_line=3, raw_column=0)

    monkeypatch.setattr(engine.cst, "parse_module", fail)
    (diagnostic,) = lint_source(LOADER + "loader = DataLoader(ds)\n", Path("x.py"), Settings()).diagnostics
    assert diagnostic.code == "TPF003" and diagnostic.location.row == 1
    assert "cannot read this file (tokenizer error: something odd)" in diagnostic.message
