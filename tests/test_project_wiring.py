"""Every way in reads the file's project: stdin, the language server's buffers, the flake8
plugin; the registry's catalogue agrees with the rules; an index kept for a process sees
later edits."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytorch_perflint import registry
from pytorch_perflint.config import Settings, load_settings
from pytorch_perflint.flake8 import Flake8Plugin
from pytorch_perflint.lsp.documents import Buffer, lint_buffer
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.project.root import ROOT_MARKERS
from pytorch_perflint.testing import FIXTURES

from test_cache_and_notebooks_cli import run  # noqa: E402

PROJECT = FIXTURES / "projects" / "cpu_script_beside_gpu"
DATA = (PROJECT / "data.py").read_text(encoding="utf-8")
PREPROCESS = (PROJECT / "preprocess_cpu.py").read_text(encoding="utf-8")


def _codes_on(diagnostics) -> set:
    return {(d.location.row, d.code) for d in diagnostics}


def test_stdin_counts_as_the_module_its_filename_names(tmp_path):
    shutil.copytree(PROJECT, tmp_path / "p")
    root = tmp_path / "p"
    result = CliRunnerInput(root).check(DATA, "data.py")
    assert "data.py:6:12: TPF102" in result
    # The same text as a CPU-only script that nothing imports is silent.
    assert "TPF102" not in CliRunnerInput(root).check(DATA, "scratch.py")


class CliRunnerInput:
    def __init__(self, root: Path) -> None:
        self.root = root

    def check(self, text: str, name: str) -> str:
        from click.testing import CliRunner

        from pytorch_perflint.cli import main

        old = os.getcwd()
        os.chdir(self.root)
        try:
            result = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "concise", "--stdin-filename", name, "-"], input=text)
        finally:
            os.chdir(old)
        return result.output


def test_the_language_server_lints_a_buffer_with_its_project():
    path = PROJECT / "data.py"
    linted = lint_buffer(Buffer(path.as_uri(), path, DATA, 1), for_fixes=False)
    assert _codes_on(linted.lint.diagnostics) == {(6, "TPF102")}
    cpu = PROJECT / "preprocess_cpu.py"
    linted = lint_buffer(Buffer(cpu.as_uri(), cpu, PREPROCESS, 1), for_fixes=False)
    assert linted.lint.diagnostics == []


def test_an_unsaved_buffer_counts_as_it_is(tmp_path):
    shutil.copytree(PROJECT, tmp_path / "p")
    cpu = tmp_path / "p" / "preprocess_cpu.py"
    edited = PREPROCESS + "\nx = x.cuda()\n"  # not saved: the buffer now selects CUDA
    linted = lint_buffer(Buffer(cpu.as_uri(), cpu, edited, 2), for_fixes=False)
    assert (14, "TPF102") in _codes_on(linted.lint.diagnostics)


def test_the_flake8_plugin_lints_with_the_project():
    found = list(Flake8Plugin(None, str(PROJECT / "data.py"), DATA.splitlines(keepends=True)).run())
    assert [(row, text.split()[0]) for row, _, text, _ in found] == [(6, "TPF102")]
    found = list(Flake8Plugin(None, str(PROJECT / "preprocess_cpu.py"), PREPROCESS.splitlines(keepends=True)).run())
    assert found == []


def test_a_kept_index_sees_a_module_saved_later(tmp_path):
    shutil.copytree(PROJECT, tmp_path / "p")
    root = tmp_path / "p"
    settings = load_settings([root / "cpu_stats.py"])
    index = index_for(root / "cpu_stats.py", settings)
    assert index is not None and not index.runs_on_accelerator(root / "cpu_stats.py")
    assert index_for(root / "cpu_stats.py", settings) is index  # nothing changed: kept
    (root / "launch.py").write_text("import cpu_stats\n\nmodel = model.cuda()\n")
    fresh = index_for(root / "cpu_stats.py", settings)
    assert fresh is not None and fresh.runs_on_accelerator(root / "cpu_stats.py")


def test_a_lone_file_has_no_project(tmp_path):
    if any((folder / marker).exists() for folder in tmp_path.parents for marker in ROOT_MARKERS):
        pytest.skip("a root marker above the temporary folder")
    (tmp_path / "m.py").write_text("x = 1\n")
    assert index_for(tmp_path / "m.py", Settings()) is None


def test_the_catalogue_read_from_the_rule_modules_is_the_rules_own():
    assert registry.catalogue() == registry._imported_catalogue()


@pytest.mark.parametrize("mode", ["always", "never"])
def test_the_accelerator_setting_reaches_the_rules_through_the_cli(tmp_path, mode):
    shutil.copytree(PROJECT, tmp_path / "p")
    root = tmp_path / "p"
    result = run(["check", "--no-cache", "--output-format", "concise", "--config", f'accelerator = "{mode}"', "preprocess_cpu.py"], root)
    assert ("TPF102" in result.output) is (mode == "always"), result.output
