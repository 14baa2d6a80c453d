"""The runner: decoding, lint and fix per file, guarded atomic writes, the process pool."""

from __future__ import annotations

import dataclasses
import os
import stat
import threading
from pathlib import Path

import pytest

from pytorch_perflint import engine, runner, safe_write, selection
from pytorch_perflint.config import Settings
from pytorch_perflint.decoding import Undecodable, decode
from pytorch_perflint.runner import Mode, process_bytes, process_file, run
from pytorch_perflint.safe_write import write_fixed

from fix_rules import TEST_RULES  # noqa: E402

FIRES = "import torch\nmodel = torch.nn.DataParallel(model)\n"


SETTINGS = Settings()


# -- decoding ---------------------------------------------------------------------------


def test_decode_honours_bom_and_keeps_crlf():
    decoded = decode(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    assert decoded.text == "x = 1\r\ny = 2\r\n"
    assert decoded.encoding == "utf-8-sig"
    assert decoded.text.encode(decoded.encoding).startswith(b"\xef\xbb\xbf")


def test_decode_honours_coding_cookie():
    decoded = decode(b'# -*- coding: latin-1 -*-\nname = "caf\xe9"\n')
    assert decoded.encoding == "iso-8859-1"
    assert "café" in decoded.text


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x01\x02", "binary file"),
        (b'x = "\xe9"\n', "not valid utf-8 text: byte 0xe9 on line 1"),
        (b'x = 1\ny = 2\nz = "\xff"\n', "byte 0xff on line 3"),
        (b"# coding: no-such-codec\nx = 1\n", "unknown encoding"),
    ],
)
def test_undecodable_bytes_say_why(data, reason):
    with pytest.raises(Undecodable, match=reason):
        decode(data)


def test_undecodable_file_gives_tpf001_and_ignoring_tpf001_silences_it(tmp_path):
    path = tmp_path / "bin.py"
    path.write_bytes(b"\x00\x00\x00")
    result = process_file(path, SETTINGS)
    assert [(d.code, d.location.row) for d in result.diagnostics] == [("TPF001", 1)]
    assert "binary" in result.diagnostics[0].message and not result.errors
    quiet = process_file(path, dataclasses.replace(SETTINGS, ignore=("TPF001",)))
    assert quiet.diagnostics == () and not quiet.errors


def test_empty_file_is_fine(tmp_path):
    path = tmp_path / "empty.py"
    path.write_bytes(b"")
    assert process_file(path, SETTINGS) == runner.FileResult(path)


def test_source_is_carried_only_for_files_with_findings(tmp_path):
    (tmp_path / "a.py").write_text(FIRES)
    (tmp_path / "b.py").write_text("x = 1\n")
    a, b = (process_file(tmp_path / name, SETTINGS) for name in ("a.py", "b.py"))
    assert a.source == FIRES and [d.code for d in a.diagnostics] == ["TPF501"]
    assert b.source is None and b.diagnostics == ()


def test_unreadable_file_is_an_error_for_that_file(tmp_path):
    missing = tmp_path / "gone.py"
    result = process_file(missing, SETTINGS)
    assert result.errors and "gone.py: cannot read" in result.errors[0]


# -- a crash in one file does not stop the others --------------------------------------


def test_crash_while_linting_one_file_becomes_its_error(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(FIRES)
    (tmp_path / "boom.py").write_text(FIRES)
    real = engine.lint_source

    def lint_source(source, path, *args, **kwargs):
        if path.name == "boom.py":
            raise RuntimeError("kaboom")
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_source", lint_source)
    results, summary = run([tmp_path / "a.py", tmp_path / "boom.py"], SETTINGS, jobs=1)
    assert [d.code for d in results[0].diagnostics] == ["TPF501"]
    assert results[1].errors and "internal error: RuntimeError: kaboom" in results[1].errors[0]
    assert summary.errors == 1 and summary.remaining == 1


def test_broken_file_gives_tpf001_and_the_run_goes_on(tmp_path):
    files = [tmp_path / "a.py", tmp_path / "broken.py", tmp_path / "c.py"]
    files[0].write_text(FIRES)
    files[1].write_text("def f(:\n")
    files[2].write_text(FIRES)
    results, summary = run(files, SETTINGS, jobs=1)
    assert [[d.code for d in r.diagnostics] for r in results] == [["TPF501"], ["TPF001"], ["TPF501"]]
    assert summary.remaining == 3 and summary.errors == 0 and summary.files_checked == 3


# -- the process pool ------------------------------------------------------------------


def test_parallel_run_gives_the_same_results_as_serial(tmp_path):
    files = []
    for index in range(runner.PARALLEL_MIN_FILES + 4):
        path = tmp_path / f"m{index:02d}.py"
        if index % 3 == 0:
            path.write_text(FIRES)
        elif index % 3 == 1:
            path.write_text("x = (\n")
        else:
            path.write_text("x = 1\n")
        files.append(path)
    serial, serial_summary = run(files, SETTINGS, jobs=1)
    parallel, parallel_summary = run(files, SETTINGS, jobs=2)
    assert parallel == serial
    assert parallel_summary == serial_summary
    assert [r.path for r in parallel] == files
    assert serial_summary.remaining == len(files) // 3 * 2


# -- fixing ----------------------------------------------------------------------------


def _fix(path: Path, settings: Settings = SETTINGS, mode: Mode = Mode.FIX):
    (result,), _ = run([path], dataclasses.replace(settings, fix=True), mode=mode, jobs=1, rules=TEST_RULES)
    return result


def test_fix_writes_and_a_second_run_changes_nothing(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = slow(1)\nb = slow(2)\n")
    result = _fix(path)
    assert result.fixed == 2 and result.diagnostics == () and not result.fix_errors
    assert path.read_text() == "a = fast(1)\nb = fast(2)\n"
    again = _fix(path)
    assert again.fixed == 0 and path.read_text() == "a = fast(1)\nb = fast(2)\n"


def test_fix_keeps_crlf_bom_and_permissions(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbfimport os\r\nx = slow(1)\r\n")
    os.chmod(path, 0o750)
    result = _fix(path)
    assert result.fixed == 1
    assert path.read_bytes() == b"\xef\xbb\xbfimport os\r\nx = fast(1)\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temp file left behind


def test_fix_keeps_a_declared_encoding(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b'# -*- coding: latin-1 -*-\nname = "caf\xe9"\nx = slow(name)\n')
    assert _fix(path).fixed == 1
    assert path.read_bytes() == b'# -*- coding: latin-1 -*-\nname = "caf\xe9"\nx = fast(name)\n'


def test_fix_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("x = slow(1)\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert _fix(link).fixed == 1
    assert link.is_symlink() and real.read_text() == "x = fast(1)\n"


def test_unsafe_fix_needs_unsafe_fixes_and_counts(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = slow(1)\nb = risky(2)\n")
    checked, summary = run([path], SETTINGS, jobs=1, rules=TEST_RULES)
    assert (summary.remaining, summary.fixable_safe, summary.fixable_unsafe) == (2, 1, 1)
    result = _fix(path)
    assert result.fixed == 1 and [d.code for d in result.diagnostics] == ["TPF902"]
    assert path.read_text() == "a = fast(1)\nb = risky(2)\n"
    result = _fix(path, dataclasses.replace(SETTINGS, unsafe_fixes=True))
    assert result.fixed == 1 and path.read_text() == "a = fast(1)\nb = safe(2)\n"


@pytest.fixture
def registered(monkeypatch):
    """The test rules known to the registry, so selectors such as `unfixable` name them."""
    from pytorch_perflint import registry

    known = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: tuple(sorted((*known, *TEST_RULES), key=lambda r: r.code)))
    selection.enabled.cache_clear()
    yield
    selection.enabled.cache_clear()


def test_unfixable_rules_are_neither_fixed_nor_counted_fixable(tmp_path, registered):
    path = tmp_path / "m.py"
    path.write_text("a = slow(1)\n")
    _, summary = run([path], SETTINGS, jobs=1)
    assert (summary.remaining, summary.fixable_safe) == (1, 1)
    settings = dataclasses.replace(SETTINGS, unfixable=("TPF901",))
    _, summary = run([path], settings, jobs=1)
    assert (summary.remaining, summary.fixable_safe, summary.fixable_unsafe) == (1, 0, 0)
    (result,), summary = run([path], dataclasses.replace(settings, fix=True), mode=Mode.FIX, jobs=1)
    assert result.fixed == 0 and path.read_text() == "a = slow(1)\n"


def test_diff_mode_writes_nothing(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    result = _fix(path, mode=Mode.DIFF)
    assert path.read_text() == "x = slow(1)\n"
    assert result.fixed == 1
    assert "-x = slow(1)\n+x = fast(1)\n" in result.diff


def test_stdin_bytes_are_fixed_to_output_not_written(tmp_path):
    path = tmp_path / "never-written.py"
    processed = process_bytes(b"x = slow(1)\r\n", path, SETTINGS, Mode.FIX, write=False, rules=TEST_RULES)
    assert processed.output == b"x = fast(1)\r\n" and processed.result.fixed == 1
    assert not path.exists()


# -- the guarded write -----------------------------------------------------------------


def test_write_fixed_leaves_a_file_that_changed_on_disk_alone(tmp_path):
    path = tmp_path / "m.py"
    original = b"x = slow(1)\n"
    path.write_bytes(original)
    path.write_bytes(b"x = slow(1)  # edited meanwhile\n")
    problem = write_fixed(path, original, b"x = fast(1)\n")
    assert problem is not None and problem.error and "changed on disk" in problem.message
    assert path.read_bytes() == b"x = slow(1)  # edited meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_write_fixed_replaces_an_unchanged_file(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"old\n")
    assert write_fixed(path, b"old\n", b"new\n") is None
    assert path.read_bytes() == b"new\n"


def test_fix_of_a_file_changed_meanwhile_is_an_error_and_not_written(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    real = safe_write.write_fixed

    def edit_then_write(target, original, new, roots=None):
        Path(target).write_text("x = slow(1)\ny = 2\n")  # an editor saves in between
        return real(target, original, new, roots)

    monkeypatch.setattr(safe_write, "write_fixed", edit_then_write)
    result = _fix(path)
    assert result.fixed == 0 and any("changed on disk" in e for e in result.errors)
    assert [d.code for d in result.diagnostics] == ["TPF901"]
    assert path.read_text() == "x = slow(1)\ny = 2\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_fix_in_a_read_only_folder_is_an_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "m.py"
    path.write_text("x = slow(1)\n")
    folder.chmod(0o555)
    try:
        result = _fix(path)
    finally:
        folder.chmod(0o755)
    assert result.fixed == 0 and result.errors and "fix not written" in result.errors[0]
    assert path.read_text() == "x = slow(1)\n"


def test_fix_that_cannot_create_its_temp_file_is_an_error(tmp_path, monkeypatch):
    """Issue 11 item 11: a failed write was a warning (exit 0 under --fix-only)."""
    from pytorch_perflint import safe_write

    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(safe_write.tempfile, "mkstemp", refuse)
    result = _fix(path)
    assert result.fixed == 0 and result.errors == (f"{path}: fix not written: Permission denied",)
    assert result.fix_errors == ()
    assert [d.code for d in result.diagnostics] == ["TPF901"]
    assert path.read_text() == "x = slow(1)\n"


def test_a_read_only_file_is_not_rewritten(tmp_path):
    """Issue 15 defect 5: the atomic rename replaced a 0444 file regardless of its mode."""
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    path.chmod(0o444)
    result = _fix(path)
    assert result.fixed == 0 and result.errors == (f"{path}: fix not written: the file is read-only",)
    assert path.read_text() == "x = slow(1)\n" and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_a_symlink_out_of_the_roots_is_not_written_through(tmp_path):
    """Issue 11 item 8: tree/link.py -> ../outside/target.py was rewritten by `--fix tree`."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    target = outside / "target.py"
    target.write_text("x = slow(1)\n")
    (tree / "link.py").symlink_to(target)
    inner = tree / "inner.py"
    inner.write_text("x = slow(1)\n")
    (tree / "alias.py").symlink_to(inner)
    settings = dataclasses.replace(SETTINGS, fix=True)
    files = [tree / "alias.py", tree / "inner.py", tree / "link.py"]
    results, summary = run(files, settings, mode=Mode.FIX, jobs=1, rules=TEST_RULES, roots=[str(tree)])
    link = results[2]
    assert target.read_text() == "x = slow(1)\n"
    assert link.fixed == 0 and link.errors == () and [d.code for d in link.diagnostics] == ["TPF901"]
    assert link.fix_errors == (f"{tree / 'link.py'}: fix not written: it is a symlink to {target}, outside the paths being linted",)
    assert inner.read_text() == "x = fast(1)\n"  # a symlink inside the roots is written through
    # Named on its own it is refused as well (issue 21 item 7: pre-commit names every file,
    # and a link in the repository to a file elsewhere was rewritten).
    (named,), _ = run([tree / "link.py"], settings, mode=Mode.FIX, jobs=1, rules=TEST_RULES, roots=[str(tree / "link.py")])
    assert named.fixed == 0 and target.read_text() == "x = slow(1)\n"
    assert named.fix_errors == (f"{tree / 'link.py'}: fix not written: it is a symlink to {target}, outside the paths being linted",)


def test_a_file_with_hard_links_keeps_them_and_its_inode(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    other = tmp_path / "other-name.py"
    os.link(path, other)
    inode = path.stat().st_ino
    os.chmod(path, 0o640)
    assert _fix(path).fixed == 1
    assert path.read_text() == other.read_text() == "x = fast(1)\n"
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "other-name.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another user")
def test_the_owner_of_a_fixed_file_is_kept(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    os.chown(path, 12345, 23456)
    assert _fix(path).fixed == 1
    assert (path.stat().st_uid, path.stat().st_gid) == (12345, 23456)
    assert path.read_text() == "x = fast(1)\n"


def test_the_owner_is_kept_by_writing_in_place_when_a_new_file_cannot_take_it(tmp_path, monkeypatch):
    """As a user who may write the file but may not give a new file to its owner."""
    from pytorch_perflint import safe_write

    def chown(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(safe_write.os, "chown", chown)
    path = tmp_path / "m.py"
    path.write_text("x = slow(1)\n")
    info = path.stat()
    temp = tmp_path / "t"
    temp.write_text("")
    assert safe_write._give_owner(str(temp), os.stat_result((*info[:4], info.st_uid + 1, *info[5:])))  is False
    temp.unlink()
    monkeypatch.setattr(safe_write, "_give_owner", lambda temp, info: False)
    inode = path.stat().st_ino
    assert _fix(path).fixed == 1
    assert path.read_text() == "x = fast(1)\n" and path.stat().st_ino == inode
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


_PARENT = os.getpid()
_REAL_PROCESS_FILE = runner.process_file


def _dies_in_a_worker(path, *args, **kwargs):
    """Kills the worker process on one file (as a segfault would); fine in the parent."""
    if path.name == "die.py" and os.getpid() != _PARENT:
        os._exit(1)
    return _REAL_PROCESS_FILE(path, *args, **kwargs)


def test_a_worker_that_dies_does_not_lose_the_other_files(tmp_path, monkeypatch):
    """A file that kills its worker (twice: it is retried once) is that file's error; the
    other files' results all come out."""
    files = []
    for index in range(runner.PARALLEL_MIN_FILES + 4):
        path = tmp_path / ("die.py" if index == 3 else f"m{index:02d}.py")
        path.write_text(FIRES)
        files.append(path)
    files.sort()
    monkeypatch.setattr(runner, "process_file", _dies_in_a_worker)
    results, summary = run(files, SETTINGS, jobs=2)
    assert [r.path for r in results] == files
    died = next(r for r in results if r.path.name == "die.py")
    assert died.diagnostics == () and died.errors == (f"{died.path}: internal error: the worker process died while on it (exit code 1)",)
    assert all([d.code for d in r.diagnostics] == ["TPF501"] for r in results if r is not died)
    assert summary.remaining == len(files) - 1 and summary.errors == 1


# -- the time limit per file -------------------------------------------------------------


def _hangs_on(name: str):
    """A process_file that never returns on one file (as the scope bug of issue 11 did)."""

    def process_file(path, *args, **kwargs):
        if path.name == name:
            threading.Event().wait()
        return _REAL_PROCESS_FILE(path, *args, **kwargs)

    return process_file


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_past_the_time_limit_is_reported_and_the_rest_comes_out(tmp_path, monkeypatch, jobs):
    count = runner.PARALLEL_MIN_FILES + 2 if jobs > 1 else 3
    files = [tmp_path / f"m{index:02d}.py" for index in range(count)]
    for path in files:
        path.write_text(FIRES)
    monkeypatch.setattr(runner, "process_file", _hangs_on("m01.py"))
    settings = dataclasses.replace(SETTINGS, file_timeout=0.5)
    results, summary = run(files, settings, jobs=jobs)
    assert [r.path for r in results] == files
    stuck = results[1]
    assert stuck.diagnostics == () and len(stuck.errors) == 1
    assert stuck.errors[0].startswith(f"{stuck.path}: not linted: it took longer than 0.5 s, the time limit per file")
    assert all([d.code for d in r.diagnostics] == ["TPF501"] for r in results if r is not stuck)
    assert summary.errors == 1 and summary.remaining == count - 1


def test_the_time_limit_holds_for_stdin(monkeypatch):
    real = runner.process_bytes

    def process_bytes(data, path, *args, **kwargs):
        if b"hang" in data:
            threading.Event().wait()
        return real(data, path, *args, **kwargs)

    monkeypatch.setattr(runner, "process_bytes", process_bytes)
    settings = dataclasses.replace(SETTINGS, file_timeout=0.5)
    stuck = runner.process_stdin(b"hang = 1\n", Path("-"), settings, Mode.CHECK)
    assert stuck.result.errors and "not linted: it took longer than 0.5 s" in stuck.result.errors[0]
    assert stuck.output == b"hang = 1\n"
    fine = runner.process_stdin(FIRES.encode(), Path("-"), settings, Mode.CHECK)
    assert [d.code for d in fine.result.diagnostics] == ["TPF501"] and not fine.result.errors


def test_the_scope_loop_of_issue_11_now_finishes_under_a_limit(tmp_path):
    """The real file that hung every run: it lints (the bug is fixed), well inside a limit."""
    path = tmp_path / "min.py"
    path.write_text("from torch.utils.data import DataLoader\nglobal x\ndef f():\n    global x\n    x()\n")
    (result,), summary = run([path], dataclasses.replace(SETTINGS, file_timeout=60), jobs=1)
    assert result.errors == () and summary.errors == 0


# -- deep but valid code ---------------------------------------------------------------

LOADER = "from torch.utils.data import DataLoader\n{deep}\nloader = DataLoader(dataset)\n"
DEEP = {
    # Issue 11 item 2: implicit concatenation is a chain of nested nodes in LibCST
    # ("internal error: RecursionError" at 500 parts, "too deeply nested" from 1,000).
    "concat500.py": "s = (" + " ".join(["'a'"] * 500) + ")",
    "concat3000.py": "s = (" + " ".join(["'a'"] * 3000) + ")",
    # The deepest brackets CPython's parser accepts (200 levels is its limit).
    "list199.py": "x = " + "[" * 199 + "1" + "]" * 199,
    "call199.py": "x = " + "f(" * 199 + "1" + ")" * 199,
    "sum1000.py": "x = " + " + ".join(["1"] * 1000),
}


def test_deep_but_valid_code_is_linted_and_fixed(tmp_path):
    files = []
    for name, deep in DEEP.items():
        source = LOADER.format(deep=deep)
        compile(source, name, "exec")  # valid Python, as CPython sees it
        path = tmp_path / name
        path.write_text(source)
        files.append(path)
    results, summary = run(files, SETTINGS, jobs=1)
    assert [(r.path.name, [d.code for d in r.diagnostics], r.errors) for r in results] == [
        (path.name, ["TPF101"], ()) for path in files
    ]
    fixable = tmp_path / "fix.py"
    fixable.write_text(DEEP["concat3000.py"] + "\nimport torch\ny = torch.zeros(3).to('cuda')\n")
    (fixed,), _ = run([fixable], dataclasses.replace(SETTINGS, fix=True), mode=Mode.FIX, jobs=1)
    assert fixed.fixed == 1 and fixed.errors == () and "torch.zeros(3, device='cuda')" in fixable.read_text()
