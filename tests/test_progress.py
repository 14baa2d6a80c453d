"""Progress on one long file: on a terminal the runner shows the file it waits for, its
size and the time, as the tree's bar does for many files."""

from __future__ import annotations

import io

from pytorch_perflint import progress, runner
from pytorch_perflint.testing import settings_with

SOURCE = "import torch\nfrom torch.utils.data import DataLoader\nmodel.cuda()\nloader = DataLoader(ds, batch_size=8)\n"
SETTINGS = settings_with({}, fix=True, unsafe_fixes=True)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_file_gets_a_status_line_on_a_terminal(tmp_path, monkeypatch):
    path = tmp_path / "big.py"
    path.write_text(SOURCE)
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setattr(progress, "LONG_FILE_BYTES", 10)
    results, summary = runner.run([path], SETTINGS, mode=runner.Mode.FIX, jobs=1, progress=True)
    assert summary.fixed == 2
    assert f"Fixing {path} (0.0 MB)" in err.getvalue()


def test_no_status_line_for_short_files_or_without_a_terminal(tmp_path, monkeypatch):
    path = tmp_path / "small.py"
    path.write_text(SOURCE)
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    runner.run([path], SETTINGS, mode=runner.Mode.CHECK, jobs=1, progress=True)
    assert "Checking" not in err.getvalue()
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    monkeypatch.setattr(progress, "LONG_FILE_BYTES", 10)
    runner.run([path], SETTINGS, mode=runner.Mode.CHECK, jobs=1, progress=True)
    assert plain.getvalue() == ""
