"""A fix keeps each line's own ending, in files that mix ``\\r\\n`` and ``\\n`` (issue 21,
item 4).

LibCST takes a module's newline from its first line and writes every line break it makes
(and, in a tree spliced from statements parsed on their own, some it read) with it: a file
whose first line ends ``\\r\\n`` and the rest ``\\n`` got ``\\r\\n`` on the fixed lines,
and with ``--preview`` a second fix round was refused ("would also change line 4").
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from pytorch_perflint.config import Settings
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.transform import keep_line_endings, lines_of

ALL_FIXES = dataclasses.replace(Settings(), unsafe_fixes=True, preview=True)
UNSAFE = dataclasses.replace(Settings(), unsafe_fixes=True)

# The issue's file: a blank first line ending "\r\n", every other line "\n".
CRLF_FIRST = (
    "\r\nimport torch\nfrom torch.utils.data import DataLoader\nopt = torch.optim.Adam(params)\n"
    "loader = DataLoader(ds)\nfor epoch in range(10):\n    for x in loader:\n        x.cuda()\n"
)


def _endings(text: str):
    return [line[len(line.rstrip("\r\n")) :] for line in lines_of(text)]


def test_crlf_first_line_every_fix_goes_in_with_preview():
    outcome = fix_source(CRLF_FIRST, Path("v.py"), ALL_FIXES)
    assert outcome.fix_errors == ()
    assert "persistent_workers=True" in outcome.source and "fused=True" in outcome.source
    assert _endings(outcome.source) == _endings(CRLF_FIRST)
    assert fix_source(outcome.source, Path("v.py"), ALL_FIXES).source == outcome.source


def test_crlf_first_line_the_fixed_line_keeps_its_lf():
    outcome = fix_source(CRLF_FIRST, Path("v.py"), UNSAFE)
    assert outcome.fix_errors == ()
    (loader,) = [line for line in lines_of(outcome.source) if line.startswith("loader =")]
    assert loader.endswith(")\n") and "persistent_workers=True" in loader
    assert _endings(outcome.source) == _endings(CRLF_FIRST)


def test_lines_a_fix_adds_end_like_the_lines_around_them():
    """A call laid out one argument per line, its lines ending "\\r\\n" in a file whose first
    line ends "\\n": the added arguments' lines end "\\r\\n" too, and the call's own lines
    keep theirs (the spliced tree rendered them with "\\n" in the next round)."""
    source = (
        "# header\nimport torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(\r\n    ds,\r\n    batch_size=8,\r\n)\r\n"
        "for epoch in range(10):\n    for x in loader:\n        x.cuda()\n"
    )
    outcome = fix_source(source, Path("v.py"), ALL_FIXES)
    assert outcome.fix_errors == ()
    lines = lines_of(outcome.source)
    start = lines.index("loader = DataLoader(\r\n")
    end = lines.index(")\r\n")
    assert [line.strip() for line in lines[start + 1 : end]] == [
        "ds,", "batch_size=8,", "num_workers=4,", "pin_memory=True,", "persistent_workers=True,"
    ]
    assert all(line.endswith("\r\n") for line in lines[start : end + 1])
    assert all(line.endswith("\n") and not line.endswith("\r\n") for line in lines[:start] + lines[end + 1 :])


def test_a_block_indented_unlike_the_module_is_fixed_after_a_spliced_round():
    """The same cause with indentation: a block indented by two spaces in a module that
    indents by four, rebuilt in one round, was rendered with four in the next, and that
    round's fix refused."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\ndef f():\n    pass\n"
        "opt = torch.optim.Adam(params)\nfor epoch in range(10):\n  loader = DataLoader(ds)\n"
        "  for x in loader:\n    x.cuda()\n"
    )
    outcome = fix_source(source, Path("v.py"), ALL_FIXES)
    assert outcome.fix_errors == ()
    assert "    x.cuda(non_blocking=True)\n" in outcome.source
    assert "  loader = DataLoader(ds, num_workers=4, pin_memory=True" in outcome.source


def test_keep_line_endings():
    source = "a = 1\r\nb = 2\nc = 3\r\nd = 4\n"
    # An unchanged line keeps its ending; a changed one the ending of the line it replaces;
    # an inserted one that of the line before it.
    assert keep_line_endings(source, "a = 1\r\nb = 20\r\nc = 3\nx = 0\nd = 4\n") == (
        "a = 1\r\nb = 20\nc = 3\r\nx = 0\r\nd = 4\n"
    )
    assert keep_line_endings(source, source) == source
    # Replacing lines that end in different ways: LibCST's endings stay.
    assert keep_line_endings("a\r\nb\nc\n", "x\r\ny\r\nz\r\nc\n") == "x\r\ny\r\nz\r\nc\n"
    # A last line without a line break stays without one.
    assert keep_line_endings("a\r\nb", "a\nb2") == "a\r\nb2"


def test_cli_fix_on_the_issue_file(tmp_path):
    path = tmp_path / "v.py"
    path.write_bytes(CRLF_FIRST.encode())
    result = subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", "check", "--no-cache", "--fix", "--unsafe-fixes", "--preview", "v.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not applied" not in result.stdout + result.stderr
    fixed = path.read_bytes().decode()
    assert fixed.count("\r\n") == 1 and fixed.startswith("\r\n")


def test_json_edits_keep_line_endings_as_fix_does(monkeypatch):
    """A fix's edits (JSON, SARIF, the language server) write the lines it adds with the
    endings ``--fix`` gives them, both ways the edits are made."""
    from pytorch_perflint import edits
    from pytorch_perflint.engine import lint_source

    source = (
        "# header\nimport torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(\r\n    ds,\r\n    batch_size=8,\r\n)\r\nmodel = Net().cuda()\n"
    )
    settings = dataclasses.replace(Settings(), select=("TPF102",))
    wanted = fix_source(source, Path("v.py"), settings).source
    assert "    pin_memory=True,\r\n" in wanted
    for whole in (False, True):
        if whole:
            monkeypatch.setattr(edits.FixEdits, "_local", lambda self, fix: None)
        (found,) = lint_source(source, Path("v.py"), settings, with_edits=True).diagnostics
        lines = lines_of(source)
        for edit in sorted(found.fix.edits, key=lambda e: e.location, reverse=True):
            lines[edit.location.row - 1 : edit.end_location.row - 1] = lines_of(edit.content)
        assert "".join(lines) == wanted, whole
