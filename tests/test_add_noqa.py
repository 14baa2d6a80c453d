"""``check --add-noqa`` and the noqa edits it shares with the language server.

Every case is checked the way a user would: the comment is added, ``check`` then reports
nothing, and a second ``--add-noqa`` changes nothing.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from pytorch_perflint.cli import main
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.suppression import noqa_comments
from pytorch_perflint.noqa_edits import LineEdit, apply, line_edit, plan
from pytorch_perflint.types import Diagnostic, Location

DP = "import torch\nmodel = torch.nn.DataParallel(model)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str, input=None):
    return CliRunner().invoke(main, ["check", "--no-cache", *args], input=input, catch_exceptions=False)


def add_noqa_and_check(path: Path) -> str:
    """Run --add-noqa on ``path``; assert it then lints clean and a rerun changes nothing."""
    first = run("--add-noqa", str(path))
    assert first.exit_code == 0, first.output
    after = path.read_bytes()
    assert run(str(path)).exit_code == 0, run(str(path)).output
    again = run("--add-noqa", str(path))
    assert again.exit_code == 0 and "Added 0 noqa directives." in again.output
    assert path.read_bytes() == after
    return first.output


def test_adds_a_noqa_to_the_line_of_a_finding(project):
    path = project / "m.py"
    path.write_text(DP)
    assert run(str(path)).exit_code == 1
    output = add_noqa_and_check(path)
    assert "Added 1 noqa directive." in output
    assert path.read_text() == "import torch\nmodel = torch.nn.DataParallel(model)  # noqa: TPF501\n"


def test_several_findings_on_a_line_share_one_comment_with_sorted_codes(project):
    path = project / "m.py"
    path.write_text("import torch\nfrom torch.utils.data import DataLoader\ntorch.cuda.synchronize()\nloader = DataLoader(ds)\n")
    add_noqa_and_check(path)
    assert path.read_text().splitlines()[3] == "loader = DataLoader(ds)  # noqa: TPF101, TPF102"


def test_extends_an_existing_noqa_and_leaves_its_explanation(project):
    path = project / "m.py"
    path.write_text("import torch\nmodel = torch.nn.DataParallel(model)  # noqa: E501 long line\n")
    add_noqa_and_check(path)
    assert path.read_text().splitlines()[1] == "model = torch.nn.DataParallel(model)  # noqa: E501, TPF501 long line"


def test_a_line_with_another_comment_keeps_it(project):
    path = project / "m.py"
    path.write_text("import torch\nmodel = torch.nn.DataParallel(model)  # wrap it   \n")
    add_noqa_and_check(path)
    assert path.read_text().splitlines()[1] == "model = torch.nn.DataParallel(model)  # wrap it  # noqa: TPF501"


def test_a_hash_inside_a_string_is_not_a_comment(project):
    path = project / "m.py"
    path.write_text("import torch\nmodel = torch.nn.DataParallel(model, '# noqa: E501')\n")
    add_noqa_and_check(path)
    assert path.read_text().splitlines()[1] == "model = torch.nn.DataParallel(model, '# noqa: E501')  # noqa: TPF501"


def test_a_multiline_statement_gets_the_comment_on_its_first_line(project):
    path = project / "m.py"
    path.write_text("import torch\nmodel = torch.nn.DataParallel(\n    model,\n)\n")
    add_noqa_and_check(path)
    assert path.read_text() == "import torch\nmodel = torch.nn.DataParallel(  # noqa: TPF501\n    model,\n)\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # The first line ends inside a string: the comment goes on the last line.
        (
            'import torch\nmodel = torch.nn.DataParallel(model, """a\nb""")\n',
            'import torch\nmodel = torch.nn.DataParallel(model, """a\nb""")  # noqa: TPF501\n',
        ),
        # The first line continues with a backslash: a comment there is a syntax error.
        (
            "import torch\nmodel = torch.nn.DataParallel(model, \\\n    device_ids=None)\n",
            "import torch\nmodel = torch.nn.DataParallel(model, \\\n    device_ids=None)  # noqa: TPF501\n",
        ),
    ],
)
def test_when_the_first_line_cannot_end_in_a_comment_the_last_line_gets_it(project, source, expected):
    path = project / "m.py"
    path.write_text(source)
    add_noqa_and_check(path)
    assert path.read_text() == expected


def test_crlf_line_ends_and_the_encoding_are_kept(project):
    path = project / "m.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9'\r\nmodel = torch.nn.DataParallel(model)\r\n")
    add_noqa_and_check(path)
    assert path.read_bytes() == (
        b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9'\r\nmodel = torch.nn.DataParallel(model)  # noqa: TPF501\r\n"
    )


def test_a_last_line_without_newline(project):
    path = project / "m.py"
    path.write_text(DP.rstrip("\n"))
    add_noqa_and_check(path)
    assert path.read_text() == DP.rstrip("\n") + "  # noqa: TPF501"


def test_per_file_ignores_and_file_mode_are_respected(project):
    (project / "pyproject.toml").write_text('[tool.pytorch-perflint]\nper-file-ignores = { "skip_*.py" = ["TPF501"] }\n')
    skipped = project / "skip_me.py"
    skipped.write_text(DP)
    path = project / "m.py"
    path.write_text(DP)
    os.chmod(path, 0o640)
    result = run("--add-noqa")
    assert result.exit_code == 0 and "Added 1 noqa directive." in result.output
    assert skipped.read_text() == DP
    assert "# noqa: TPF501" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_notebook_gets_its_comment_in_the_cell(project):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["%matplotlib inline\n", "import torch"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["model = torch.nn.DataParallel(model)"]},
    ]
    book = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path = project / "nb.ipynb"
    path.write_text(json.dumps(book, indent=1) + "\n")
    add_noqa_and_check(path)
    written = json.loads(path.read_text())
    assert written["cells"][2]["source"] == ["model = torch.nn.DataParallel(model)  # noqa: TPF501"]
    assert written["cells"][1]["source"] == ["%matplotlib inline\n", "import torch"]
    assert written["cells"][0] == cells[0]


def test_a_file_that_does_not_parse_is_left_alone(project):
    path = project / "m.py"
    path.write_text("def f(:\n")
    result = run("--add-noqa", str(path))
    assert result.exit_code == 0 and "Added 0 noqa directives." in result.output
    assert path.read_text() == "def f(:\n"


@pytest.mark.parametrize("flag", ["--fix", "--diff", "--fix-only"])
def test_add_noqa_refuses_to_combine_with_fixing(project, flag):
    path = project / "m.py"
    path.write_text(DP)
    result = run("--add-noqa", flag, str(path))
    assert result.exit_code == 2 and "cannot be combined" in result.output
    assert path.read_text() == DP


def test_add_noqa_refuses_stdin(project):
    result = run("--add-noqa", "-", input=DP)
    assert result.exit_code == 2 and "stdin" in result.output


def test_a_file_that_cannot_be_written_is_an_error(project):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    folder = project / "ro"
    folder.mkdir()
    path = folder / "m.py"
    path.write_text(DP)
    os.chmod(folder, 0o555)
    try:
        result = run("--add-noqa", str(path))
    finally:
        os.chmod(folder, 0o755)
    assert result.exit_code == 2 and "noqa not written" in result.output
    assert path.read_text() == DP


# --------------------------------------------------------------------------------------
# The edits themselves (what the language server's "disable for this line" uses).


def _diagnostic(code: str, row: int, end_row: int = 0) -> Diagnostic:
    return Diagnostic(code, "x", "m", Path("x.py"), Location(row, 1), Location(end_row or row, 2), noqa_row=row)


def test_a_bare_noqa_is_left_alone():
    assert line_edit("x = f()  # noqa", 9, ["TPF101"], 1) is None
    assert plan("x = f()  # NOQA\n", [_diagnostic("TPF101", 1)]).edits == ()


def test_a_code_already_named_is_not_added_twice():
    assert line_edit("x = f()  # noqa: tpf101", 9, ["TPF101"], 1) is None
    assert line_edit("x = f()  # noqa:TPF101", 9, ["TPF101", "TPF102"], 1) == LineEdit(1, 22, 22, ", TPF102")


def test_syntax_errors_and_unused_noqa_are_never_given_a_comment():
    found = plan("x = 1  # noqa: TPF101\n", [_diagnostic("TPF001", 1), _diagnostic("TPF002", 1)])
    assert found.edits == () and found.skipped == ()


@pytest.mark.parametrize(
    "source",
    [
        "x = f()\n",
        "x = f()  # note\n",
        "x = f()  # noqa: E501\n",
        "x = '#' + f()\r\n",
        "x = f(\n  1)\n",
    ],
)
def test_what_is_written_is_what_the_engine_reads(source):
    edited = apply(source, plan(source, [_diagnostic("TPF101", 1)]).edits)
    assert "TPF101" in (noqa_comments(edited).get(1) or ())
    assert edited.count("\n") == source.count("\n") and edited.endswith(source[-2:] if source.endswith("\r\n") else "\n")


def test_the_engine_suppresses_a_finding_whose_comment_is_on_its_last_line():
    source = 'import torch\nmodel = torch.nn.DataParallel(model, """a\nb""")\n'
    (diagnostic,) = lint_source(source, Path("m.py"), Settings()).diagnostics
    edited = apply(source, plan(source, [diagnostic]).edits)
    assert edited.endswith('b""")  # noqa: TPF501\n')
    assert lint_source(edited, Path("m.py"), Settings()).diagnostics == []
