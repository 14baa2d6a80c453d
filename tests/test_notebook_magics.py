"""IPython magics are masked only where IPython itself reads them: at the start of a logical
line. A ``%`` or ``!=`` that continues an expression is Python, and ``x = !cmd`` or
``x = %time f()`` assign a magic's result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytorch_perflint import notebook
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source

from fix_rules import SlowCall


def book(*cells: str) -> notebook.Notebook:
    data = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return notebook.load(json.dumps(data, indent=1) + "\n")


def codes(nb: notebook.Notebook):
    return [d.code for d in lint_source(nb.source, Path("nb.ipynb"), Settings(), rules=[SlowCall]).diagnostics]


PYTHON_NOT_MAGIC = [
    pytest.param('msg = ("v %d"\n     % 3)\n', id="modulo-continuation-in-brackets"),
    pytest.param("ok = (1\n      != 2)\n", id="not-equal-continuation-in-brackets"),
    pytest.param("ok = 1 \\\n!= 2\n", id="not-equal-after-backslash"),
    pytest.param('s = "a %s" \\\n% "b"\n', id="modulo-after-backslash"),
    pytest.param("x = [\n    1,\n    %2,\n]\n".replace("%2", "2 % 1"), id="modulo-inside-list"),
    pytest.param('s = """\n%not a magic\n!nor this\n"""\n', id="inside-a-triple-quoted-string"),
    pytest.param("d = {\n  'a': 1\n  !=2 }\n".replace("!=2", "!= 2"), id="not-equal-inside-dict"),
    pytest.param("if x:  # why?\n    y = 1\n", id="question-mark-in-a-comment"),
    pytest.param("y = 'what?'\n", id="question-mark-in-a-string"),
]


@pytest.mark.parametrize("cell", PYTHON_NOT_MAGIC)
def test_continuation_lines_and_strings_are_not_masked(cell):
    nb = book(cell, "z = slow(1)\n")
    assert nb.magics == ()
    assert codes(nb) == ["TPF901"]  # parsed, and the rule in the next cell still found


MAGICS = [
    pytest.param("output = !ls -la\n", id="assign-from-shell"),
    pytest.param("x = %time f()\n", id="assign-from-line-magic"),
    pytest.param("a, b = !echo 1 2\n", id="tuple-assign-from-shell"),
    pytest.param("files = %sx ls\n", id="assign-from-sx"),
    pytest.param("self.out = !cmd\n", id="attribute-assign-from-shell"),
    pytest.param("%time f()\n", id="line-magic"),
    pytest.param("!pip install x\n", id="shell"),
    pytest.param("model?\n", id="help-suffix"),
    pytest.param("?model\n", id="help-prefix"),
    pytest.param("model??  # source\n", id="help-suffix-with-comment"),
    pytest.param("for i in range(3):\n    !echo $i\n    x = %env HOME\n", id="indented"),
    pytest.param("!echo a \\\n  b c\n", id="shell-continued-with-backslash"),
    pytest.param("%%bash\necho (unbalanced\n", id="cell-magic"),
    pytest.param("x = (1,\n  2)\n!ls\n", id="after-a-closed-bracket"),
]


@pytest.mark.parametrize("cell", MAGICS)
def test_magics_at_a_logical_line_start_are_masked_and_restored(cell):
    nb = book(cell, "z = slow(1)\n")
    assert nb.magics
    assert codes(nb) == ["TPF901"]
    outcome = fix_source(nb.source, Path("nb.ipynb"), Settings(), rules=[SlowCall])
    assert outcome.fixed == 1
    data = json.loads(notebook.dump(nb, outcome.source))
    assert data["cells"][0]["source"] == cell
    assert data["cells"][1]["source"] == "z = fast(1)\n"


def test_a_cell_with_broken_indentation_still_masks_the_lines_after_it():
    nb = book("if x:\n        a = 1\n    b = 2\n!ls\n")
    assert "!ls" in nb.magics[-1]
    assert codes(nb) == ["TPF001"]


def test_top_level_await_in_a_cell_does_not_block_a_fix():
    """IPython runs `await` and `async for` at a cell's top level; a fix there is fine."""
    nb = book("r = await fetch()\nasync for x in stream():\n    pass\n", "z = slow(1)\n")
    outcome = fix_source(nb.source, Path("nb.ipynb"), Settings(), rules=[SlowCall])
    assert outcome.fix_errors == () and outcome.fixed == 1
    assert json.loads(notebook.dump(nb, outcome.source))["cells"][1]["source"] == "z = fast(1)\n"


def test_top_level_await_in_a_python_file_still_refuses_a_fix():
    source = "r = await fetch()\nz = slow(1)\n"
    outcome = fix_source(source, Path("m.py"), Settings(), rules=[SlowCall])
    assert outcome.fixed == 0 and "'await' outside function" in outcome.fix_errors[0]
