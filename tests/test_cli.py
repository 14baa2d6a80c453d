"""The command line end to end: exit codes, config, paths, stdin, fixes, rules, laziness."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pytorch_perflint import __version__, engine, selection
from pytorch_perflint.cli import main

from fix_rules import RiskyCall, SlowCall  # noqa: E402

FIRES = "import torch\nmodel = torch.nn.DataParallel(model)\n"
CLEAN = "import torch\nx = torch.zeros(3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def registered(monkeypatch):
    """The fixable test rules are known to the registry (in this process: run with -j 1)."""
    from pytorch_perflint import registry

    known = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: tuple(sorted((*known, SlowCall, RiskyCall), key=lambda r: r.code)))
    selection.enabled.cache_clear()
    yield
    selection.enabled.cache_clear()


def check(*args: str, input=None):
    return CliRunner().invoke(main, ["check", *args], input=input, catch_exceptions=False)


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def codes(output: str):
    """(file, code) pairs from concise output lines."""
    pairs = []
    for line in output.splitlines():
        parts = line.split(": ", 1)
        if len(parts) == 2 and parts[1][:3] == "TPF":
            pairs.append((parts[0].rsplit(":", 2)[0], parts[1].split()[0]))
    return sorted(pairs)


# -- exit codes ------------------------------------------------------------------------


def test_clean_tree_exits_0(project):
    write(project, "a.py", CLEAN)
    result = check()
    assert result.exit_code == 0, result.output
    assert "All checks passed!" in result.stdout


def test_findings_exit_1_in_concise_format_when_not_a_terminal(project):
    write(project, "pkg/a.py", FIRES)
    result = check()
    assert result.exit_code == 1
    assert "pkg/a.py:2:9: TPF501 " in result.stdout


def test_exit_zero_forces_0_for_findings_but_not_for_errors(project):
    write(project, "a.py", FIRES)
    assert check("--exit-zero").exit_code == 0
    result = check("--exit-zero", "a.py", "missing.py")
    assert result.exit_code == 2
    assert "error: missing.py: no such file or folder" in result.stderr
    assert codes(result.stdout) == [("a.py", "TPF501")]  # the rest is still linted


@pytest.mark.parametrize("fmt", ["concise", "full"])
def test_a_missing_path_is_the_users_error_not_an_internal_one(project, fmt):
    """Issue 15 defect 9: `check missing.py` said "1 internal error occurred"."""
    result = check("--output-format", fmt, "missing.py")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "error: missing.py: no such file or folder"
    assert "internal" not in result.output
    assert "No findings, but 1 error occurred." in result.stdout


MOVED = "import torch\ny = torch.zeros(3).to('cuda')\n"
MOVED_FIXED = "import torch\ny = torch.zeros(3, device='cuda')\n"


def test_a_write_that_fails_is_an_error_even_with_fix_only_and_exit_zero(project):
    """Issue 11 item 11 and issue 15 defect 5: a read-only file was rewritten, and a failed
    write was only a warning (exit 0 under --fix-only)."""
    path = write(project, "ro.py", MOVED)
    path.chmod(0o444)
    for flags in (["--fix-only"], ["--fix", "--exit-zero"]):
        result = check("--no-cache", *flags, "ro.py")
        assert result.exit_code == 2
        assert "error: ro.py: fix not written: the file is read-only" in result.stderr
        assert path.read_text() == MOVED


def test_fix_never_writes_through_a_symlink_out_of_the_linted_tree(project):
    """Issue 11 item 8: `check --fix tree` rewrote outside/target.py via tree/link.py."""
    target = write(project, "outside/target.py", MOVED)
    write(project, "tree/own.py", MOVED)
    (project / "tree" / "link.py").symlink_to(Path("..") / "outside" / "target.py")
    result = check("--no-cache", "--fix", "--output-format", "concise", "tree")
    assert target.read_text() == MOVED and (project / "tree" / "own.py").read_text() == MOVED_FIXED
    assert "warning: tree/link.py: fix not written: it is a symlink to" in result.stderr
    assert codes(result.stdout) == [("tree/link.py", "TPF402")] and result.exit_code == 1


def test_fix_never_writes_through_a_named_symlink_out_of_the_tree(project):
    """Issue 21 item 7: `check --fix --force-exclude x.py`, x.py a symlink to a file
    elsewhere, rewrote that file."""
    target = write(project, "outside/target.py", MOVED)
    (project / "tree").mkdir()
    (project / "tree" / "x.py").symlink_to(Path("..") / "outside" / "target.py")
    for extra in ((), ("--force-exclude",)):
        result = check("--no-cache", "--fix", "--output-format", "concise", *extra, "tree/x.py")
        assert target.read_text() == MOVED
        assert "warning: tree/x.py: fix not written: it is a symlink to" in result.stderr
        assert codes(result.stdout) == [("tree/x.py", "TPF402")] and result.exit_code == 1
    own = write(project, "tree/own.py", MOVED)  # a plain named file is still fixed
    assert check("--no-cache", "--fix", "tree/own.py").exit_code == 0 and own.read_text() == MOVED_FIXED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_fifo_or_device_exits_2_at_once_and_the_rest_is_linted(project):
    """Issue 21 item 7: a named FIFO blocked for the whole time limit; /dev/zero was read
    until the worker was killed for its memory."""
    os.mkfifo(project / "pipe.py")
    (project / "zero.py").symlink_to("/dev/zero")
    write(project, "a.py", FIRES)
    result = check("--no-cache", "--output-format", "concise", "pipe.py", "zero.py", "a.py")
    assert result.exit_code == 2
    assert "pipe.py: not a regular file (a named pipe)" in result.stderr
    assert "zero.py: not a regular file (a device or special file)" in result.stderr
    assert codes(result.stdout) == [("a.py", "TPF501")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_reading_a_file_to_lint_never_blocks_on_a_fifo(project):
    from pytorch_perflint.config import Settings
    from pytorch_perflint.runner import process_file

    os.mkfifo(project / "pipe.py")
    result = process_file(Path("pipe.py"), Settings())
    assert result.errors == ("pipe.py: cannot read: not a regular file",)


def test_unknown_selector_exits_2(project):
    write(project, "a.py", FIRES)
    result = check("--select", "TPF501,TPF999")
    assert result.exit_code == 2
    assert "error: --select: unknown rule selector 'TPF999'" in result.stderr
    assert result.stdout == ""


def test_select_by_name_and_ignore(project):
    write(project, "a.py", FIRES)
    assert check("--select", "data-parallel").exit_code == 1
    assert check("--ignore", "TPF501").exit_code == 0
    assert check("--select", "TPF001", "--extend-select", "TPF5").exit_code == 1


def test_internal_error_in_one_file_exits_2_and_others_are_reported(project, monkeypatch):
    write(project, "a.py", FIRES)
    write(project, "boom.py", FIRES)
    real = engine.lint_source

    def lint_source(source, path, *args, **kwargs):
        if path.name == "boom.py":
            raise RuntimeError("kaboom")
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_source", lint_source)
    result = check("-j", "1")
    assert result.exit_code == 2
    assert "error: boom.py: internal error: RuntimeError: kaboom" in result.stderr
    assert codes(result.stdout) == [("a.py", "TPF501")]


def test_a_file_past_the_time_limit_exits_2_and_the_others_are_reported(project, monkeypatch):
    import threading

    write(project, "a.py", FIRES)
    write(project, "slow.py", FIRES)
    real = engine.lint_source

    def lint_source(source, path, *args, **kwargs):
        if path.name == "slow.py":
            threading.Event().wait()
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_source", lint_source)
    result = check("--no-cache", "--file-timeout", "0.5", "--output-format", "concise")
    assert result.exit_code == 2
    assert "error: slow.py: not linted: it took longer than 0.5 s, the time limit per file" in result.stderr
    assert codes(result.stdout) == [("a.py", "TPF501")]
    write(project, "pyproject.toml", "[tool.pytorch-perflint]\nfile-timeout = 0.5\n")
    again = check("--no-cache", "--exit-zero", "--output-format", "concise", "slow.py")
    assert again.exit_code == 2 and "slow.py: not linted" in again.stderr


# -- config ----------------------------------------------------------------------------


def test_config_is_discovered_from_a_nested_folder(project, monkeypatch):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nignore = ["TPF501"]\n')
    write(project, "src/pkg/a.py", FIRES)
    monkeypatch.chdir(project / "src" / "pkg")
    assert check().exit_code == 0
    assert check("a.py").exit_code == 0
    monkeypatch.chdir(project)
    assert check("src/pkg").exit_code == 0


def test_flags_override_config(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nignore = ["TPF501"]\noutput-format = "json"\n')
    write(project, "a.py", FIRES)
    result = check()
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    result = check("--select", "TPF501", "--output-format", "concise")
    assert result.exit_code == 1 and codes(result.stdout) == [("a.py", "TPF501")]


def test_unknown_config_key_exits_2_naming_file_and_key(project):
    config = write(project, "pyproject.toml", "[tool.pytorch-perflint]\nselcet = []\n")
    write(project, "a.py", FIRES)
    result = check()
    assert result.exit_code == 2
    assert f"error: {config}: unknown key 'selcet'" in result.stderr
    assert "did you mean 'select'" in result.stderr


def test_explicit_config_flag(project):
    write(project, "a.py", FIRES)
    write(project, "conf/strict.toml", 'ignore = ["TPF501"]\n')
    assert check("--config", "conf/strict.toml").exit_code == 0
    result = check("--config", "conf/missing.toml")
    assert result.exit_code == 2


def test_bad_target_torch_version_flag_exits_2(project):
    write(project, "a.py", CLEAN)
    result = check("--target-torch-version", "latest")
    assert result.exit_code == 2 and "--target-torch-version" in result.stderr


def test_per_file_ignores(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nper-file-ignores = { "tests/*.py" = ["TPF501"] }\n')
    write(project, "tests/t.py", FIRES)
    write(project, "src/m.py", FIRES)
    result = check()
    assert codes(result.stdout) == [("src/m.py", "TPF501")]


def test_exclude_and_extend_exclude(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nextend-exclude = ["generated"]\n')
    write(project, "generated/g.py", FIRES)
    write(project, "build/b.py", FIRES)
    write(project, "m.py", FIRES)
    assert codes(check().stdout) == [("m.py", "TPF501")]
    # --exclude replaces the defaults (and the file's exclude), extend-exclude still applies.
    assert codes(check("--exclude", "m.py").stdout) == [("build/b.py", "TPF501")]


def test_explicitly_named_excluded_file_is_still_linted(project):
    write(project, "build/b.py", FIRES)
    assert codes(check("build/b.py").stdout) == [("build/b.py", "TPF501")]
    assert check("build/b.py", "--force-exclude").exit_code == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_gitignore_is_respected(project):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    write(project, ".gitignore", "scratch/\n")
    write(project, "scratch/s.py", FIRES)
    write(project, "m.py", FIRES)
    assert codes(check().stdout) == [("m.py", "TPF501")]
    assert codes(check("--no-respect-gitignore").stdout) == [("m.py", "TPF501"), ("scratch/s.py", "TPF501")]


# -- bad input -------------------------------------------------------------------------


def test_broken_non_utf8_and_binary_files_get_tpf001_while_others_get_findings(project):
    write(project, "a.py", FIRES)
    write(project, "broken.py", "def f(:\n")
    (project / "latin.py").write_bytes(b'x = "\xe9"\n')
    (project / "blob.py").write_bytes(b"\x7fELF\x00\x00\x01")
    (project / "empty.py").write_bytes(b"")
    (project / "cookie.py").write_bytes(b'# -*- coding: latin-1 -*-\nimport torch\nm = torch.nn.DataParallel("\xe9")\n')
    result = check()
    assert result.exit_code == 1
    assert codes(result.stdout) == [
        ("a.py", "TPF501"),
        ("blob.py", "TPF001"),
        ("broken.py", "TPF001"),
        ("cookie.py", "TPF501"),
        ("latin.py", "TPF001"),
    ]
    assert "latin.py:1:1: TPF001 cannot be parsed: not valid utf-8 text: byte 0xe9 on line 1" in result.stdout
    assert "binary file" in result.stdout


# -- stdin -----------------------------------------------------------------------------


def test_stdin_with_stdin_filename(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nper-file-ignores = { "tests/*.py" = ["TPF501"] }\n')
    result = check("-", "--stdin-filename", "src/m.py", input=FIRES)
    assert result.exit_code == 1 and codes(result.stdout) == [("src/m.py", "TPF501")]
    result = check("-", "--stdin-filename", "tests/t.py", input=FIRES)
    assert result.exit_code == 0
    result = check("-", input=FIRES)
    assert result.exit_code == 1 and "-:2:9: TPF501" in result.stdout


def test_stdin_cannot_be_mixed_with_paths(project):
    result = check("-", "a.py", input="")
    assert result.exit_code == 2 and "cannot be combined" in result.stderr


def test_stdin_fix_writes_the_fixed_text_to_stdout(project, registered):
    result = check("-", "--fix", "--stdin-filename", "m.py", input="x = slow(1)\ny = risky(2)\n")
    assert result.exit_code == 1  # the unsafe one remains
    assert result.stdout == "x = fast(1)\ny = risky(2)\n"
    assert "m.py:2:5: TPF902" in result.stderr
    assert not (project / "m.py").exists()


# -- fixing ----------------------------------------------------------------------------


def test_fix_writes_keeps_crlf_bom_and_mode_and_is_idempotent(project, registered):
    path = project / "m.py"
    path.write_bytes(b"\xef\xbb\xbfa = slow(1)\r\nb = 2\r\n")
    os.chmod(path, 0o741)
    result = check("--fix", "-j", "1")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == b"\xef\xbb\xbfa = fast(1)\r\nb = 2\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o741
    assert "1 fixed" in result.stdout
    second = check("--fix", "-j", "1")
    assert second.exit_code == 0 and path.read_bytes() == b"\xef\xbb\xbfa = fast(1)\r\nb = 2\r\n"
    assert sorted(p.name for p in project.iterdir()) == ["m.py"]


def test_fix_applies_unsafe_fixes_only_when_asked(project, registered):
    path = write(project, "m.py", "x = slow(1)\ny = risky(2)\n")
    result = check("-j", "1")
    assert result.exit_code == 1
    assert "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled" in result.stdout
    assert check("--fix", "-j", "1").exit_code == 1
    assert path.read_text() == "x = fast(1)\ny = risky(2)\n"
    assert check("--fix", "--unsafe-fixes", "-j", "1").exit_code == 0
    assert path.read_text() == "x = fast(1)\ny = safe(2)\n"


def test_unfixable_flag_keeps_a_rule_from_being_fixed(project, registered):
    path = write(project, "m.py", "x = slow(1)\n")
    assert check("--fix", "--unfixable", "TPF901", "-j", "1").exit_code == 1
    assert path.read_text() == "x = slow(1)\n"


def test_diff_writes_nothing_and_exits_1(project, registered):
    path = write(project, "m.py", "x = slow(1)\n")
    result = check("--diff", "-j", "1")
    assert result.exit_code == 1
    assert "--- a/m.py\n+++ b/m.py\n" in result.stdout and "+x = fast(1)\n" in result.stdout
    assert "Would fix 1 error." in result.stderr
    assert path.read_text() == "x = slow(1)\n"
    write(project, "m.py", "x = fast(1)\n")
    nothing = check("--diff", "-j", "1")
    assert nothing.exit_code == 0 and nothing.stdout == ""


def test_fix_only_reports_nothing_and_exits_0(project, registered):
    path = write(project, "m.py", "x = slow(1)\ny = risky(2)\n")
    result = check("--fix-only", "-j", "1")
    assert result.exit_code == 0 and result.stdout == ""
    assert "Fixed 1 error." in result.stderr
    assert path.read_text() == "x = fast(1)\ny = risky(2)\n"


def test_json_output_carries_fix_edits(project, registered):
    write(project, "m.py", "x = slow(1)\n")
    result = check("--output-format", "json", "-j", "1")
    assert result.exit_code == 1
    (item,) = json.loads(result.stdout)
    assert item["code"] == "TPF901" and item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"] and item["fix"]["edits"][0]["content"] == "x = fast(1)\n"


# -- parallel --------------------------------------------------------------------------


def test_jobs_2_gives_the_same_output_as_jobs_1(project):
    for index in range(12):
        write(project, f"pkg/m{index:02d}.py", [FIRES, "x = (\n", CLEAN][index % 3])
    one = check("-j", "1", "--output-format", "json")
    two = check("-j", "2", "--output-format", "json")
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout
    assert len(json.loads(one.stdout)) == 8


# -- rules and rule --------------------------------------------------------------------


def test_rules_json_lists_every_rule_with_builtins():
    result = CliRunner().invoke(main, ["rules", "--output-format", "json"])
    assert result.exit_code == 0
    rules = {item["code"]: item for item in json.loads(result.stdout)}
    assert {"TPF001", "TPF002", "TPF501"} <= set(rules)
    assert rules["TPF501"]["name"] == "data-parallel" and rules["TPF501"]["fix"] == "display-only"
    assert rules["TPF002"]["default"] is False and rules["TPF001"]["default"] is True
    assert set(rules["TPF501"]) == {"code", "name", "fix", "preview", "default", "summary", "url"}


def test_rules_table():
    result = CliRunner().invoke(main, ["rules"])
    assert result.exit_code == 0 and "TPF501" in result.stdout and "data-parallel" in result.stdout


def test_rule_by_code_or_name_and_unknown():
    by_code = CliRunner().invoke(main, ["rule", "tpf501"])
    assert by_code.exit_code == 0
    assert by_code.stdout.startswith("# TPF501: data-parallel\n") and "## Why is this bad?" in by_code.stdout
    assert CliRunner().invoke(main, ["rule", "data-parallel"]).stdout == by_code.stdout
    assert "syntax-error" in CliRunner().invoke(main, ["rule", "TPF001"]).stdout
    unknown = CliRunner().invoke(main, ["rule", "TPF999"])
    assert unknown.exit_code == 2 and "unknown rule 'TPF999'" in unknown.stderr


# -- the program as users start it -----------------------------------------------------


def _run(*args: str, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_version_and_help_stay_light():
    version = _run("-X", "importtime", "-m", "pytorch_perflint", "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"pytorch-perflint {__version__}"
    imported = {line.rsplit("|", 1)[-1].strip() for line in version.stderr.splitlines() if "|" in line}
    assert not {"libcst", "rich", "pytorch_perflint.bench", "pytorch_perflint.engine"} & imported
    helped = _run("-X", "importtime", "-m", "pytorch_perflint", "--help")
    assert helped.returncode == 0 and "check" in helped.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in helped.stderr.splitlines() if "|" in line}
    assert not {"libcst", "rich", "pytorch_perflint.bench", "pytorch_perflint.bench.cli"} & imported


def test_python_dash_m_check_end_to_end(tmp_path):
    write(tmp_path, "a.py", FIRES)
    done = _run("-m", "pytorch_perflint", "check", "--output-format", "concise", cwd=tmp_path)
    assert done.returncode == 1 and "a.py:2:9: TPF501" in done.stdout


def test_python_dash_m_imports_nothing_from_the_linted_tree(tmp_path):
    """Issue 11 item 9: `python -m` puts the current folder first on sys.path, so a tree's
    own click.py or torch.py was imported (and run) by the linter."""
    write(tmp_path, "a.py", FIRES)
    for module in ("click", "rich", "torch", "libcst", "pathspec", "tomli"):
        write(tmp_path, f"{module}.py", f"raise SystemExit('imported {module}.py from the linted tree')\n")
    done = _run("-m", "pytorch_perflint", "check", "--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert "from the linted tree" not in done.stderr
    assert done.returncode == 1 and "a.py:2:9: TPF501" in done.stdout


def test_the_package_itself_imports_nothing_third_party():
    code = "import sys, pytorch_perflint; print(sorted(m for m in ('click', 'rich', 'libcst', 'pathspec') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_lazy_command_is_listed_without_import_and_imported_when_run(tmp_path, monkeypatch):
    from pytorch_perflint import cli

    (tmp_path / "fake_bench_cli.py").write_text(
        "import click\n@click.command()\ndef bench():\n    'Run it.'\n    click.echo('benched')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.LAZY_COMMANDS, "bench", ("fake_bench_cli", "bench", "Measure things."))
    monkeypatch.setattr(cli, "_lazy_available", lambda name: True)
    monkeypatch.delitem(sys.modules, "fake_bench_cli", raising=False)
    monkeypatch.delitem(main.commands, "bench", raising=False)
    helped = CliRunner().invoke(main, ["--help"])
    assert "bench" in helped.stdout and "Measure things." in helped.stdout
    assert "fake_bench_cli" not in sys.modules
    ran = CliRunner().invoke(main, ["bench"])
    assert ran.exit_code == 0 and ran.stdout == "benched\n"
    main.commands.pop("bench", None)


def test_a_check_does_not_load_the_codemod_machinery(tmp_path):
    """``libcst.codemod`` pulls in ``libcst.matchers`` (a third of a second): only a fix that
    adds an import loads it, never a check."""
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.DataParallel(net)\n")
    code = (
        "import sys\n"
        "from pytorch_perflint.cli import main\n"
        "try:\n"
        "    main(['check', '--no-cache', '--output-format', 'concise', 'train.py'])\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code)\n"
        "print('codemod loaded:', 'libcst.codemod' in sys.modules, 'libcst loaded:', 'libcst' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120).stdout
    assert "exit 1" in out and "TPF501" in out
    assert "codemod loaded: False libcst loaded: True" in out
