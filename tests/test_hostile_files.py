"""Files built to hurt a parser: Python is the judge, LibCST never sees what it rejects,
and a file too large to analyse is said to be so (TPF003) instead of exhausting the machine.

The inputs are small: nesting just past what CPython accepts at its default recursion
limit (the tool's workers run with a far higher one, where ``ast`` accepts these and LibCST
was given them: minutes and gigabytes at 5,000 to 10,000 levels), and a low
``max-file-size`` to show the size cut-off.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from pytorch_perflint import engine, pyparse
from pytorch_perflint.cli import main
from pytorch_perflint.config import ConfigError, Settings, load_settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.workers import call_deep

from fix_rules import SlowCall  # noqa: E402

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
# Python refuses each of these (`python file.py` fails), at any recursion limit or at its
# default one; LibCST parses them.
REJECTED = [
    pytest.param("x = " + "(" * 300 + "1" + ")" * 300 + "\n", "too many nested parentheses", id="nested-parentheses"),
    pytest.param("x = " + "[" * 300 + "]" * 300 + "\n" + LOADER, "too many nested parentheses", id="nested-lists"),
    pytest.param("x = " + "-" * 3000 + "1\n" + LOADER, "RecursionError", id="unary-minuses"),
    pytest.param("x = " + "+".join(["a"] * 3000) + "\n" + LOADER, "RecursionError", id="long-sum"),
]


@pytest.fixture
def no_libcst(monkeypatch):
    """LibCST's parser must not be called."""

    def refuse(*args, **kwargs):
        raise AssertionError("LibCST was given a file Python rejects")

    monkeypatch.setattr(cst, "parse_module", refuse)


def _lint(source: str, **kwargs):
    # As a worker lints: in a thread with the tool's high recursion limit.
    return call_deep(lambda: engine.lint_source(source, Path("m.py"), Settings(), **kwargs))


@pytest.mark.parametrize(("source", "why"), REJECTED)
def test_a_file_python_rejects_is_tpf001_and_never_reaches_libcst(source, why, no_libcst):
    for keep in (True, False):
        result = _lint(source, keep_module=keep)
        assert [d.code for d in result.diagnostics] == ["TPF001"], result
        assert why in result.diagnostics[0].message
        assert result.module is None and not result.errors


@pytest.mark.parametrize(("source", "why"), REJECTED)
def test_python_rejects_these_at_its_default_limit_whatever_the_limit_here(source, why):
    assert call_deep(pyparse.verdict, source)[1] is not None
    assert pyparse.verdict(source)[1] is not None


def test_the_default_limit_is_restored_after_the_verdict():
    before = call_deep(lambda: (__import__("sys").getrecursionlimit(), pyparse.verdict(REJECTED[2].values[0]))[0])
    assert before > pyparse.PYTHON_RECURSION_LIMIT
    assert call_deep(lambda: __import__("sys").getrecursionlimit()) == before


def test_fix_mode_leaves_a_rejected_file_alone(no_libcst):
    source = "x = " + "-" * 3000 + "1\n" + LOADER
    outcome = call_deep(lambda: fix_source(source, Path("m.py"), Settings(unsafe_fixes=True)))
    assert outcome.fixed == 0 and outcome.source == source
    assert [d.code for d in outcome.diagnostics] == ["TPF001"]


def test_fix_does_not_rewrite_a_file_python_rejects(tmp_path, monkeypatch):
    """The issue's case: `--fix` rewrote a file of 5,000 unary minuses."""
    from pytorch_perflint import registry, selection

    known = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: tuple(sorted((*known, SlowCall), key=lambda r: r.code)))
    selection.enabled.cache_clear()
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.py"
    text = "x = " + "-" * 3000 + "1\ny = slow(1)\n"
    path.write_text(text)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "--fix", "--output-format", "concise", "m.py"])
    finally:
        selection.enabled.cache_clear()
    assert path.read_text() == text
    assert result.exit_code == 1 and "m.py:1:1: TPF001 RecursionError" in result.stdout, result.output


def _check(*args: str, input=None):
    return CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", *args], input=input)


@pytest.mark.parametrize(("source", "why"), REJECTED)
def test_check_reports_tpf001_for_files_stdin_and_notebooks(tmp_path, monkeypatch, source, why):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(source)
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s} for s in ("import torch\n", source)]
    book = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "n.ipynb").write_text(json.dumps(book))
    result = _check("m.py", "n.ipynb")
    assert result.exit_code == 1, result.output
    # (a RecursionError has no position: its TPF001 is at the start of the notebook)
    assert "m.py:1:" in result.stdout and "n.ipynb:cell " in result.stdout and why in result.stdout
    assert result.stdout.count("TPF001") == 2, result.output
    result = _check("-", "--stdin-filename", "s.py", input=source)
    assert result.exit_code == 1 and "s.py:1:" in result.stdout and "TPF001" in result.stdout, result.output


def test_flake8_plugin_and_language_server_report_tpf001(tmp_path, no_libcst):
    from pytorch_perflint.flake8 import Flake8Plugin
    from pytorch_perflint.lsp.documents import Buffer, lint_buffer

    source = REJECTED[3].values[0]
    path = tmp_path / "m.py"
    path.write_text(source)
    reported = list(call_deep(lambda: list(Flake8Plugin(filename=str(path), lines=source.splitlines(True)).run())))
    assert [message.split()[0] for _, _, message, _ in reported] == ["TPF001"]
    for for_fixes in (True, False):
        linted = call_deep(lambda: lint_buffer(Buffer("file:///m.py", path, source), for_fixes=for_fixes))
        assert [d.code for d in linted.lint.diagnostics] == ["TPF001"]


# -- too large to analyse (max-file-size, and the memory cap that follows it) -----------

BIG = "from torch.utils.data import DataLoader\n" + "".join(f"x{i} = [{i}] * 3\n" for i in range(40)) + "loader = DataLoader(ds)\n"


def test_max_file_size_is_a_config_key_with_a_default_that_keeps_torch_whole():
    assert Settings().max_file_size == 4 * 1024 * 1024  # torch's largest file: 1.4 MB


def test_max_file_size_in_pyproject_and_bad_values(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\nmax-file-size = 1000\n")
    assert load_settings([tmp_path]).max_file_size == 1000
    for bad in ("-1", '"4MB"', "1.5", "true"):
        (tmp_path / "pyproject.toml").write_text(f"[tool.pytorch-perflint]\nmax-file-size = {bad}\n")
        with pytest.raises(ConfigError, match=r"max-file-size: expected a whole number of bytes \(0 for no limit\)"):
            load_settings([tmp_path])


def test_a_file_over_the_limit_is_tpf003_and_never_parsed(no_libcst):
    result = engine.lint_source(BIG, Path("m.py"), Settings(max_file_size=100))
    assert [d.code for d in result.diagnostics] == ["TPF003"]
    message = result.diagnostics[0].message
    assert f"too large to analyse ({len(BIG):,} bytes" in message and "over the limit of 100)" in message
    assert "`max-file-size`" in message
    assert engine.lint_source(BIG, Path("m.py"), Settings(max_file_size=100, ignore=("TPF003",))).diagnostics == []


def test_the_size_counts_utf8_bytes():
    text = "s = '" + "é" * 60 + "'\n"  # 68 characters, 128 bytes
    assert [d.code for d in engine.lint_source(text, Path("m.py"), Settings(max_file_size=100)).diagnostics] == ["TPF003"]
    assert engine.lint_source(text, Path("m.py"), Settings(max_file_size=200)).diagnostics == []


def test_check_reports_a_large_file_without_reading_it_and_the_limit_can_be_raised(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BIG)
    (tmp_path / "small.py").write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\nmax-file-size = 200\n")
    result = _check(".")
    assert result.exit_code == 1, result.output
    assert f"m.py:1:1: TPF003 File not checked: too large to analyse ({len(BIG):,} bytes" in result.stdout
    assert "small.py:2:10: TPF101" in result.stdout
    result = _check("-", "--stdin-filename", "s.py", input=BIG)
    assert "s.py:1:1: TPF003" in result.stdout, result.output
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\nmax-file-size = 0\n")
    result = _check(".")
    assert "TPF003" not in result.stdout and "m.py:42:10: TPF101" in result.stdout, result.output


def test_read_source_gives_the_size_of_a_file_over_the_limit(tmp_path):
    from pytorch_perflint.tree_files import read_source

    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n" * 10)
    assert read_source(path, 59) == 60
    assert read_source(path, 60) == b"x = 1\n" * 10 and read_source(path, 0) == b"x = 1\n" * 10


def _allocate(size):
    return len(bytearray(size))


def _abort(_):
    import faulthandler

    faulthandler.disable()  # (pytest's would print every thread's stack)
    os.abort()  # what LibCST's native parser does when an allocation fails


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cap is Linux's RLIMIT_AS")
def test_a_worker_past_its_memory_cap_gives_an_out_of_memory_failure():
    from pytorch_perflint import workers

    out = list(workers.run_tasks(_allocate, [1000, 8 << 30, 10], jobs=1, time_limit=None, memory_limit=512 << 20))
    assert out[0] == 1000 and out[2] == 10
    assert isinstance(out[1], workers.Failure) and out[1].out_of_memory
    aborted = list(workers.run_tasks(_abort, [1], jobs=1, time_limit=None, memory_limit=512 << 20))
    assert isinstance(aborted[0], workers.Failure) and aborted[0].out_of_memory and "SIGABRT" in aborted[0].detail


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cap is Linux's RLIMIT_AS")
def test_a_file_past_the_memory_cap_is_tpf003_naming_the_cap(tmp_path, monkeypatch):
    """A low cap stands in for a huge file: LibCST runs out of memory and the file is
    reported as too large to analyse, the run goes on."""
    from pytorch_perflint import workers

    monkeypatch.setattr(workers, "memory_limit_for", lambda size: 150 << 20)
    monkeypatch.chdir(tmp_path)
    lines = "".join(f"x{i} = [{i}, ({i} + 1) * 2]\n" for i in range(20_000))
    (tmp_path / "m.py").write_text("from torch.utils.data import DataLoader\n" + lines + "loader = DataLoader(ds)\n")
    result = _check("m.py", "--config", "max-file-size = 0")
    assert "m.py:1:1: TPF003 File not checked: too large to analyse (its analysis needed more than" in result.stdout, result.output
    assert result.exit_code == 1


def test_a_long_valid_sum_is_fixed_and_its_fix_checked():
    """The ecosystem's mutation run: a fixed file with a 2,000-term sum (valid Python) was
    refused, its tree compiled back at Python's limit ("maximum recursion depth exceeded
    while traversing 'expr' node"); only texts are judged at that limit."""
    source = "import torch\nx = torch.zeros(3).to('cuda')\n_long = " + " + ".join(["_a"] * 2000) + "\n"
    outcome = call_deep(lambda: fix_source(source, Path("m.py"), Settings(unsafe_fixes=True)))
    assert not outcome.fix_errors and not outcome.errors, outcome.fix_errors
    assert outcome.fixed == 1 and "torch.zeros(3, device='cuda')" in outcome.source
