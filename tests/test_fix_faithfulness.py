"""Fixes change only their own lines, and compiling the user's code prints nothing.

The linted code's own warnings (``"\\d"``, ``x is 1``, ``assert (x, "m")``) are the user's
business: compiling it to check a fix must not print them, nor (under ``-W error``) turn
valid code into a syntax error.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source

from fix_rules import SlowCall

NOISY = 'import re\np = re.compile("\\d+")\nif x is 1:\n    pass\nassert (x, "always true")\ny = slow(1)\n'


def test_linting_and_fixing_code_that_warns_emits_no_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lint = lint_source(NOISY, Path("noisy.py"), Settings(), rules=[SlowCall])
        outcome = fix_source(NOISY, Path("noisy.py"), Settings(), rules=[SlowCall])
        check = lint_source("x = 1\np = '\\d'\n", Path("quiet.py"), Settings())
    assert [str(w.message) for w in caught] == []
    assert [d.code for d in lint.diagnostics] == ["TPF901"]
    assert outcome.fixed == 1 and outcome.fix_errors == ()
    assert check.diagnostics == []


def test_warnings_as_errors_do_not_make_valid_code_a_syntax_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lint_source("x = 1\np = '\\d'\n", Path("quiet.py"), Settings()).diagnostics == []
        assert [d.code for d in lint_source(NOISY, Path("noisy.py"), Settings(), rules=[SlowCall]).diagnostics] == ["TPF901"]
        assert fix_source(NOISY, Path("noisy.py"), Settings(), rules=[SlowCall]).fixed == 1


def test_fix_in_worker_processes_prints_no_warning_of_the_linted_code(tmp_path):
    source = NOISY.replace("y = slow(1)\n", "import torch\nmodel = torch.optim.SGD(p, lr=1)\nopt.zero_grad(set_to_none=False)\n")
    for index in range(8):  # enough files for the process pool
        (tmp_path / f"m{index}.py").write_text(source)
    result = subprocess.run(
        [sys.executable, "-W", "always", "-m", "pytorch_perflint", "check", "--no-cache", "--fix", "--unsafe-fixes", "-j", "2", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Warning" not in result.stderr, result.stderr
    assert "fixed" in result.stdout + result.stderr


# LibCST's parser drops a form feed at the start of a statement's line (it keeps a block's
# indentation as one string per block, not per line) and the last newline of a file whose
# lines end with a lone "\r": a fix must not take those bytes with it.
FAITHFUL = [
    pytest.param("x = 1\n\x0cdef f():\n    pass\ny = slow(1)\n", id="form-feed-before-a-def"),
    pytest.param("if x:\n    a = 1\n\x0c    b = 2\ny = slow(1)\n", id="form-feed-in-an-indentation"),
    pytest.param("if x:\n    a = 1\n  \x0c    b = 2\ny = slow(1)\n", id="form-feed-inside-an-indentation"),
    pytest.param("\x0cz = 2\ny = slow(1)\n", id="form-feed-at-the-file-start"),
    pytest.param("y = slow(1)\n\x0cz = 2\n\x0c\x0cw = 3\n", id="form-feeds-after-the-fix"),
    pytest.param("x = 1\n\x0c\ny = slow(1)\n\x0c# comment\n", id="form-feed-lines"),
    pytest.param("y = slow(1,\n\x0c 2)\nz = 1 \x0c\n", id="form-feed-in-an-expression-and-after-code"),
    pytest.param("x = 1   \n\t\ny = slow(1)  \nz = 2\t\n", id="trailing-whitespace"),
    pytest.param("if x:\n\ta = 1\n\tb = slow(1)\n\tc = 2\n", id="tabs"),
    pytest.param("x = 1\ry = slow(1)\rz = 2\r", id="lone-carriage-returns"),
    pytest.param("x = 1\r\n\x0cdef f():\r\n    pass\r\ny = slow(1)\r\n", id="crlf-and-form-feed"),
    pytest.param("if x:\n    a = 1\n    \n  # c\n    b = slow(1)\n", id="whitespace-and-comment-lines"),
    pytest.param("\x0cy = slow(1)\nz = 1\n\x0cw = 2\n", id="form-feed-on-the-fixed-line"),
    pytest.param("if x:\n\x0c\x0c    b = slow(1)\n", id="form-feeds-before-the-indentation-of-the-fixed-line"),
    pytest.param("x = 1\ry = slow(1)\r", id="lone-carriage-return-on-the-fixed-last-line"),
    # LibCST folds the lines after the last statement into a last line of only whitespace
    # (blank lines and comments go); found by the fuzz test (`pass\n\n ` from hypothesmith).
    pytest.param("y = slow(1)\npass\n\n ", id="blank-then-whitespace-last-line-after-another-statement"),
    pytest.param("y = slow(1)\n\n ", id="blank-then-whitespace-last-line-next-to-the-fix"),
    pytest.param("y = slow(1)\n\n  # c\n\n \n", id="comment-before-a-whitespace-last-line"),
    pytest.param("def f():\n    return slow(1)\n\n\n\t", id="blank-lines-then-a-tab-after-a-block"),
    pytest.param("y = slow(1)\r\n\r\n ", id="crlf-blank-then-whitespace-last-line"),
    pytest.param("y = slow(1)\npass\n\n #", id="blank-then-an-indented-comment-last"),
    pytest.param("y = slow(1)\n # a\n # c\n", id="indented-comments-last"),
    pytest.param("if x:\n    y = slow(1)\n\n\n  # c\n  # d\n", id="comments-indented-apart-from-the-block"),
]


@pytest.mark.parametrize("source", FAITHFUL)
def test_a_fix_changes_only_its_own_lines(source):
    outcome = fix_source(source, Path("x.py"), Settings(), rules=[SlowCall])
    assert outcome.fix_errors == ()
    assert outcome.fixed == 1
    assert outcome.source == source.replace("slow(", "fast(")


def test_a_fix_on_a_line_libcst_would_render_differently_is_skipped_with_a_warning():
    """A form feed inside the indentation of the fixed line cannot be put back."""
    source = "if x:\n    a = 1\n  \x0c    b = slow(1)\n"
    outcome = fix_source(source, Path("x.py"), Settings(), rules=[SlowCall])
    assert outcome.source == source and outcome.fixed == 0
    (warning,) = outcome.fix_errors
    assert "TPF901" in warning and "not applied" in warning and "would also change line 3" in warning
    assert [d.code for d in outcome.diagnostics] == ["TPF901"]


def test_a_fix_whose_result_changes_a_line_it_does_not_edit_is_skipped(monkeypatch):
    """Whatever the cause, a change outside the fix's own lines is refused."""
    import libcst as cst

    from pytorch_perflint import fixer

    real = fixer.apply_fixes

    def meddling(module, fixes):
        return cst.parse_module(real(module, fixes).code.replace("z = 2", "z = 3"))

    real_splice = fixer.splice_fixes

    def meddling_splice(*args):  # the fast path: as if it had rebuilt `z = 2` wrongly too
        spliced = real_splice(*args)
        if spliced is None:
            return None
        pieces = (*spliced.pieces, (3, "z = 2\n", "z = 3\n"))
        return type(spliced)(spliced.text.replace("z = 2", "z = 3"), pieces)

    monkeypatch.setattr(fixer, "apply_fixes", meddling)
    monkeypatch.setattr(fixer, "splice_fixes", meddling_splice)
    source = "y = slow(1)\nw = 1\nz = 2\n"
    outcome = fix_source(source, Path("x.py"), Settings(), rules=[SlowCall])
    assert outcome.source == source and outcome.fixed == 0
    assert len(outcome.fix_errors) == 1 and "line 3" in outcome.fix_errors[0]


def test_text_edits_and_diffs_count_rows_as_python_does():
    """``str.splitlines`` breaks at form feeds (and \\x1c, \\u2028...): rows shifted after one."""
    from pytorch_perflint.transform import text_edits, unified_diff

    before = "a = 1\x0cb = 2  # \u2028 \x1c\ny = slow(1)\n"
    after = before.replace("slow", "fast")
    (edit,) = text_edits(before, after)
    assert (edit.location.row, edit.end_location.row, edit.content) == (2, 3, "y = fast(1)\n")
    assert "@@ -1,2 +1,2 @@" in unified_diff("x.py", before, after)


# TPF204 unwraps `with torch.autograd.detect_anomaly():`; every comment of the statement
# survives, at the unwrapped code's indentation.
UNWRAP = [
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    loss.backward()\n    # last\nx = 1\n",
        "loss.backward()\n# last\nx = 1\n",
        id="after-the-last-statement",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    loss.backward()\n    # last\n",
        "loss.backward()\n# last\n",
        id="after-the-last-statement-at-the-end-of-the-file",
    ),
    pytest.param(
        "def f():\n    with torch.autograd.detect_anomaly():\n        loss.backward()\n        # last\n    return 1\n",
        "def f():\n    loss.backward()\n    # last\n    return 1\n",
        id="after-the-last-statement-in-a-function",
    ),
    pytest.param(
        "def f():\n    with torch.autograd.detect_anomaly():\n        loss.backward()\n        # last\n\n\nx = 1\n",
        "def f():\n    loss.backward()\n    # last\n\n\nx = 1\n",
        id="after-the-last-statement-at-the-end-of-a-function",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    loss.backward()\n\n    # last\n\nx = 1\n",
        "loss.backward()\n\n# last\n\nx = 1\n",
        id="after-blank-lines",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    loss.backward()  # same line\nx = 1\n",
        "loss.backward()  # same line\nx = 1\n",
        id="on-the-last-line",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly(): a(); loss.backward()  # same line\nx = 1\n",
        "a(); loss.backward()  # same line\nx = 1\n",
        id="on-a-one-line-with",
    ),
    pytest.param(
        "# above\nwith torch.autograd.detect_anomaly():  # header\n    # first\n    a()  # a\n    # between\n    loss.backward()  # b\n    # last\n# after\nx = 1\n",
        "# above\n# header\n# first\na()  # a\n# between\nloss.backward()  # b\n# last\n# after\nx = 1\n",
        id="everywhere",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    if x:\n        loss.backward()\n        # inner\n    # outer\nx = 1\n",
        "if x:\n    loss.backward()\n    # inner\n# outer\nx = 1\n",
        id="nested-block-footers",
    ),
    pytest.param(
        "with torch.autograd.detect_anomaly():\n    loss.backward()\n    # last\nwith torch.autograd.detect_anomaly():\n    opt.step()\n    # second\n",
        "loss.backward()\n# last\nopt.step()\n# second\n",
        id="two-in-a-row",
    ),
]


@pytest.mark.parametrize(("body", "expected"), UNWRAP)
def test_tpf204_unwrap_keeps_every_comment(body, expected):
    import dataclasses

    from pytorch_perflint import registry

    settings = dataclasses.replace(Settings(), unsafe_fixes=True)
    outcome = fix_source("import torch\n" + body, Path("t.py"), settings, rules=[registry.rule_by_code("TPF204")])
    assert outcome.fix_errors == ()
    assert outcome.source == "import torch\n" + expected
