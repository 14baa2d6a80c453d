"""The conventions ruff users expect of `check`: output file, exit codes on fix, noqa,
inline config, quiet and silent, colour, show-settings and show-files, clean, the output
format from the environment, preview selections, and watch mode."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pytorch_perflint.cache import CACHE_DIR
from pytorch_perflint.cli import main

from test_cli import CLEAN, FIRES, check, project, registered, write  # noqa: F401 - fixtures

ANSI = "\x1b["
PREVIEW_ONLY = "import torch\nopt = torch.optim.Adam(model.parameters())\nmodel.cuda()\n"


# -- output file -------------------------------------------------------------------------


def test_output_file_gets_the_report_and_stdout_stays_empty(project):
    write(project, "a.py", FIRES)
    result = check("-o", "reports/lint.txt", "--color", "always", "--output-format", "full")
    assert result.exit_code == 1 and result.stdout == ""
    text = (project / "reports" / "lint.txt").read_text()
    assert "a.py:2:9: TPF501" in text and "Found 1 error." in text
    assert ANSI not in text  # a file gets no colour codes


def test_output_file_that_cannot_be_written_is_an_error_before_linting(project):
    write(project, "a.py", FIRES)
    (project / "taken").write_text("a file, not a folder")
    result = check("--output-file", "taken/report.json", "--output-format", "json")
    assert result.exit_code == 2
    assert "taken/report.json: cannot write the output file" in result.stderr
    assert "TPF501" not in result.output


# -- exit codes --------------------------------------------------------------------------


def test_exit_non_zero_on_fix(project, registered):
    path = write(project, "m.py", "x = slow(1)\n")
    plain = check("--fix", "-j", "1")
    assert plain.exit_code == 0 and path.read_text() == "x = fast(1)\n"
    write(project, "m.py", "x = slow(1)\n")
    strict = check("--fix", "--exit-non-zero-on-fix", "-j", "1")
    assert strict.exit_code == 1 and path.read_text() == "x = fast(1)\n"
    nothing_fixed = check("--fix", "--exit-non-zero-on-fix", "-j", "1")
    assert nothing_fixed.exit_code == 0
    write(project, "m.py", "x = slow(1)\n")
    assert check("--fix-only", "--exit-non-zero-on-fix", "-j", "1").exit_code == 1


def test_exit_zero_and_exit_non_zero_on_fix_conflict(project):
    result = check("--exit-zero", "--exit-non-zero-on-fix")
    assert result.exit_code == 2
    assert "--exit-zero cannot be used with --exit-non-zero-on-fix" in result.stderr


# -- noqa --------------------------------------------------------------------------------


def test_ignore_noqa_reports_suppressed_lines_and_file_exemptions(project):
    write(project, "a.py", "import torch\nmodel = torch.nn.DataParallel(model)  # noqa: TPF501\n")
    write(project, "b.py", "# pytorch-perflint: noqa\n" + FIRES)
    assert check().exit_code == 0
    result = check("--ignore-noqa")
    assert result.exit_code == 1
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines() if "TPF501" in line) == ["a.py", "b.py"]


def test_ignore_noqa_still_knows_which_comments_match(project):
    write(project, "a.py", "import torch\nmodel = torch.nn.DataParallel(model)  # noqa: TPF501\n")
    result = check("--ignore-noqa", "--extend-select", "TPF002")
    assert "TPF501" in result.stdout and "TPF002" not in result.stdout


# -- inline config -----------------------------------------------------------------------


def test_config_inline_key_value_overrides_the_file(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nignore = []\n')
    write(project, "a.py", FIRES)
    assert check().exit_code == 1
    result = check("--config", 'ignore = ["TPF501"]')
    assert result.exit_code == 0, result.output
    assert check("--config", "ignore = ['TPF501']", "--config", "preview = true").exit_code == 0


def test_config_inline_and_path_together(project):
    write(project, "other.toml", 'select = ["TPF1"]\n')
    write(project, "a.py", FIRES)
    assert check("--config", "other.toml").exit_code == 0  # TPF501 not selected there
    assert check("--config", "other.toml", "--config", 'extend-select = ["TPF501"]').exit_code == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('selct = ["TPF501"]', "--config: unknown key 'selct' (did you mean 'select'?)"),
        ("preview = 1", "--config preview: expected true or false"),
        ("select = [", "not valid TOML"),
        ("missing.toml", "missing.toml: config file not found"),
        ('select = ["TPF999"]', "unknown rule selector 'TPF999'"),
    ],
)
def test_config_inline_errors_exit_2(project, value, message):
    write(project, "a.py", FIRES)
    result = check("--config", value)
    assert result.exit_code == 2
    assert message in result.stderr


def test_two_config_files_are_refused(project):
    write(project, "one.toml", "preview = true\n")
    write(project, "two.toml", "preview = false\n")
    result = check("--config", "one.toml", "--config", "two.toml")
    assert result.exit_code == 2 and "only one config file" in result.stderr


# -- output format from the environment ---------------------------------------------------


def test_output_format_from_the_environment_below_the_flag_above_the_file(project, monkeypatch):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\noutput-format = "concise"\n')
    write(project, "a.py", FIRES)
    monkeypatch.setenv("PYTORCH_PERFLINT_OUTPUT_FORMAT", "json-lines")
    lines = check().stdout.splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["TPF501"]
    assert check("--output-format", "pylint").stdout.startswith("a.py:2: [TPF501]")
    monkeypatch.setenv("PYTORCH_PERFLINT_OUTPUT_FORMAT", "xml")
    bad = check()
    assert bad.exit_code == 2 and "PYTORCH_PERFLINT_OUTPUT_FORMAT: expected one of" in bad.stderr


# -- quiet, silent, colour ----------------------------------------------------------------


def test_quiet_prints_findings_only_and_silent_prints_nothing(project):
    write(project, "a.py", FIRES)
    normal = check("--select", "TPF601,TPF501")
    assert "Found 1 error." in normal.stdout and "warning: Selection `TPF601`" in normal.stderr
    quiet = check("-q", "--select", "TPF601,TPF501")
    assert quiet.exit_code == 1
    assert quiet.stdout.splitlines() == [line for line in normal.stdout.splitlines() if "TPF501" in line]
    assert quiet.stderr == ""
    silent = check("--silent", "--select", "TPF601,TPF501")
    assert silent.exit_code == 1 and silent.output == ""
    write(project, "b.py", "x = (\n")
    assert check("-s").exit_code == 1  # TPF001 is a finding, not an error


def test_silent_still_says_why_it_exits_2(project):
    write(project, "a.py", FIRES)
    result = check("-s", "missing.py")
    assert result.exit_code == 2 and "missing.py" in result.stderr


def test_quiet_and_silent_conflict(project):
    assert check("-q", "-s").exit_code == 2


def test_color_always_and_never(project):
    write(project, "a.py", FIRES)
    always = check("--color", "always", "--output-format", "full")
    assert ANSI in always.stdout
    never = check("--color", "never", "--output-format", "full")
    assert ANSI not in never.stdout and "a.py:2:9: TPF501" in never.stdout
    assert check("--color", "sometimes").exit_code == 2


# -- show-settings, show-files -----------------------------------------------------------


def test_show_files_lists_what_would_be_linted_and_lints_nothing(project):
    write(project, "pkg/a.py", FIRES)
    write(project, "pkg/b.pyi", CLEAN)
    write(project, "nb.ipynb", "{}")
    write(project, "legacy/old.py", FIRES)
    write(project, "notes.txt", "x")
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nextend-exclude = ["legacy"]\n')
    result = check("--show-files")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [str(project / "nb.ipynb"), str(project / "pkg" / "a.py"), str(project / "pkg" / "b.pyi")]
    assert not (project / CACHE_DIR).exists()


def test_show_settings_shows_the_resolved_settings_for_the_first_file(project):
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nignore = ["TPF501"]\nper-file-ignores = { "tests/*" = ["TPF1"] }\n')
    write(project, "tests/t.py", FIRES)
    result = check("--show-settings", "tests/t.py", "--config", "preview = true")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"Resolved settings for: {Path('tests/t.py')}"
    assert lines[1] == f"Settings path: {project / 'pyproject.toml'}"
    assert 'ignore = ["TPF501"]' in lines and "preview = true" in lines
    assert 'per-file-ignores = { "tests/*" = ["TPF1"] }' in lines
    enabled = next(line for line in lines if line.startswith("# enabled rules = "))
    codes = json.loads(enabled.split(" = ", 1)[1])
    assert "TPF601" in codes and "TPF501" not in codes and not any(c.startswith("TPF1") for c in codes)
    assert "TPF501" not in result.stdout.split("[tool.pytorch-perflint]")[0]


def test_show_settings_table_is_valid_toml_with_known_keys(project):
    import tomllib

    from pytorch_perflint.config import KNOWN_KEYS

    write(project, "a.py", CLEAN)
    out = check("--show-settings").stdout
    table_text = out.split("[tool.pytorch-perflint]\n", 1)[1].split("\n\n", 1)[0]
    table = tomllib.loads(table_text)
    assert set(table) <= set(KNOWN_KEYS) and table["target-torch-version"] == "2.13"


def test_show_flags_conflict_with_each_other_and_with_watch(project):
    assert check("--show-files", "--show-settings").exit_code == 2
    assert check("--show-files", "--watch").exit_code == 2
    assert check("--statistics", "--watch").exit_code == 2


# -- preview selections -------------------------------------------------------------------


def test_preview_rule_by_exact_code_without_preview_warns_and_does_not_run(project):
    write(project, "a.py", PREVIEW_ONLY)
    exact = check("--select", "TPF602")
    prefix = check("--select", "TPF6")
    for result, selector in ((exact, "TPF602"), (prefix, "TPF6")):
        assert result.exit_code == 0, result.output
        assert f"warning: Selection `{selector}` has no effect because preview is not enabled." in result.stderr
        assert "TPF602" not in result.stdout
    with_preview = check("--select", "TPF602", "--preview")
    assert with_preview.exit_code == 1 and "TPF602" in with_preview.stdout and "warning" not in with_preview.stderr
    assert "TPF602" in check("--select", "TPF6", "--preview").stdout


def test_mixed_or_ignored_preview_selections_do_not_warn(project):
    write(project, "a.py", CLEAN)
    assert "warning" not in check("--select", "TPF", "--ignore", "TPF6").stderr
    assert "warning" not in check("--extend-select", "TPF5").stderr
    write(project, "pyproject.toml", '[tool.pytorch-perflint]\nextend-select = ["TPF601"]\n')
    assert "Selection `TPF601` has no effect" in check().stderr  # the file's selections too


# -- clean -------------------------------------------------------------------------------


def test_clean_removes_the_cache_a_run_made_and_nested_ones(project):
    write(project, "pyproject.toml", "[tool.pytorch-perflint]\n")
    write(project, "pkg/a.py", FIRES)
    check("pkg")
    made = [p for p in project.rglob(CACHE_DIR)]
    assert made, "the run should have written a cache"
    nested = project / "other" / CACHE_DIR
    nested.mkdir(parents=True)
    (nested / "lint.json").write_text("{}")
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0
    assert not list(project.rglob(CACHE_DIR))
    assert "Removing cache at:" in result.stderr
    assert (project / "pkg" / "a.py").exists()
    again = CliRunner().invoke(main, ["clean", "-q"])
    assert again.exit_code == 0 and again.output == ""


def test_clean_from_a_subfolder_removes_the_projects_cache(project, monkeypatch):
    write(project, "pyproject.toml", "[tool.pytorch-perflint]\n")
    write(project, "pkg/a.py", FIRES)
    check("pkg")
    assert list(project.rglob(CACHE_DIR))
    monkeypatch.chdir(project / "pkg")
    assert CliRunner().invoke(main, ["clean"]).exit_code == 0
    assert not list(project.rglob(CACHE_DIR))


# -- watch -------------------------------------------------------------------------------


class _Lines:
    """A subprocess pipe read line by line on a thread, so a test can wait for a line
    with a timeout (a pipe's own reads block)."""

    def __init__(self, stream) -> None:
        import queue
        import threading

        self.queue: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.queue.put(line)

    def until(self, needle: str, timeout: float) -> str:
        import queue

        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(line)
            if needle in line:
                break
        return "".join(seen)


def test_watch_lints_again_after_a_change_and_stops_on_ctrl_c(tmp_path):
    target = write(tmp_path, "train.py", CLEAN)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytorch_perflint", "check", "--watch", "--output-format", "concise", "--no-cache", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines = _Lines(proc.stdout)
    try:
        first = lines.until("All checks passed!", 60)
        assert "All checks passed!" in first
        time.sleep(1.0)  # the watcher starts after the first report
        target.write_text(FIRES)
        second = lines.until("Found 1 error.", 60)
        assert "train.py:2:9: TPF501" in second and "Found 1 error." in second
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "Starting linter in watch mode..." in err and "File change detected..." in err


def _watch_output(tmp_path, target, *, stdout_is_a_terminal: bool) -> bytes:
    """Everything a watch run wrote to its stdout, across one change."""
    import pty
    import select

    master, slave = pty.openpty()
    read_end, write_end = (master, slave) if stdout_is_a_terminal else os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytorch_perflint", "check", "--watch", "--output-format", "concise", "--no-cache", "."],
        cwd=tmp_path,
        stdin=slave,
        stdout=write_end,
        stderr=slave,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    os.close(slave)
    if write_end != slave:
        os.close(write_end)
    out = b""

    def read_until(needle: bytes, timeout: float) -> None:
        nonlocal out
        deadline = time.monotonic() + timeout
        while needle not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([read_end], [], [], 0.2)
            if ready:
                try:
                    out += os.read(read_end, 65536)
                except OSError:
                    return

    try:
        read_until(b"All checks passed!", 60)
        time.sleep(1.0)  # the watcher starts after the first report
        target.write_text(FIRES)
        read_until(b"Found 1 error.", 60)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        if read_end != master:
            os.close(read_end)
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
@pytest.mark.skipif(importlib.util.find_spec("watchfiles") is None, reason="watchfiles is not installed")
def test_watch_clears_a_terminal_before_each_run_and_never_a_pipe(tmp_path):
    """Issue 21 item 16: the screen was never cleared between runs (the earlier report
    stayed in the scrollback); as ruff does: home, clear, and clear the scrollback."""
    from pytorch_perflint.watch import CLEAR_SCREEN

    target = write(tmp_path, "train.py", CLEAN)
    shown = _watch_output(tmp_path, target, stdout_is_a_terminal=True)
    clear = CLEAR_SCREEN.encode()
    assert clear == b"\x1b[H\x1b[2J\x1b[3J"
    assert shown.count(clear) == 2, shown
    first, second = shown.split(clear)[1:]
    assert b"All checks passed!" in first and b"TPF501" not in first
    assert b"TPF501" in second and b"All checks passed!" not in second
    target.write_text(CLEAN)
    piped = _watch_output(tmp_path, target, stdout_is_a_terminal=False)
    assert b"\x1b[" not in piped and b"All checks passed!" in piped and b"Found 1 error." in piped
