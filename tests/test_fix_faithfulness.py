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
