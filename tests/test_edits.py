"""Fix edits for JSON and SARIF: the same edits as applying the fix to the whole module,
without rendering the whole module once per fix (issue 11 item 10: quadratic output)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

import libcst as cst
import pytest

from pytorch_perflint import edits
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.transform import lines_of
from pytorch_perflint.types import Edit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EVERYTHING = dataclasses.replace(Settings(), select=("ALL",), preview=True)


def apply_edits(source: str, found: Sequence[Edit]) -> str:
    """Apply line edits (whole lines, 1-based rows, end exclusive) from the bottom up."""
    lines = lines_of(source)
    for edit in sorted(found, key=lambda e: e.location, reverse=True):
        lines[edit.location.row - 1 : edit.end_location.row - 1] = lines_of(edit.content)
    return "".join(lines)


def _with_edits(source: str, path: Path, settings: Settings = EVERYTHING):
    return lint_source(source, path, settings, with_edits=True).diagnostics


def _fixture_sources():
    for path in sorted(FIXTURES.glob("*/*.py")):
        yield pytest.param(path, id=f"{path.parent.name}/{path.name}")


@pytest.mark.parametrize("path", list(_fixture_sources()))
def test_spliced_edits_equal_whole_module_edits_on_every_fixture(path, monkeypatch):
    source = path.read_text()
    settings = dataclasses.replace(EVERYTHING, select=(path.parent.name,))  # the fixture's rule
    fast = _with_edits(source, path, settings)
    monkeypatch.setattr(edits.FixEdits, "_local", lambda self, fix: None)  # the whole-module way
    slow = _with_edits(source, path, settings)
    assert [d.code for d in fast] == [d.code for d in slow]
    for quick, whole in zip(fast, slow):
        if whole.fix is None:
            continue
        assert apply_edits(source, quick.fix.edits) == apply_edits(source, whole.fix.edits), (quick.code, quick.location)


def test_edits_do_not_render_the_whole_module_per_fix(monkeypatch):
    findings = 40
    body = "".join(f"def f{i}(n):\n    # a comment\n    return torch.zeros(n).to('cuda')\n\n\n" for i in range(findings))
    source = "import torch\n\n\n" + body + "class Big:\n" + "".join(f"    def m{i}(self):\n        return torch.ones(3).cuda()\n" for i in range(findings))
    renders = []
    real = cst.Module._codegen_impl

    def counted(self, state):
        renders.append(1)
        return real(self, state)

    monkeypatch.setattr(cst.Module, "_codegen_impl", counted)
    found = _with_edits(source, Path("big.py"))
    assert len([d for d in found if d.fix and d.fix.edits]) == 2 * findings
    assert len(renders) <= 2  # not one (or two) per fix
    fixed = source
    for diagnostic in sorted(found, key=lambda d: d.location, reverse=True):
        fixed = apply_edits(fixed, diagnostic.fix.edits)
    assert "torch.zeros(n, device='cuda')" in fixed and ".to('cuda')" not in fixed and ".cuda()" not in fixed
    compile(fixed, "big.py", "exec")


def test_a_form_feed_does_not_shift_the_rows_of_edits():
    source = "import torch\n\x0c\nx = torch.zeros(3).to('cuda')\n"
    (diagnostic,) = _with_edits(source, Path("ff.py"))
    (edit,) = diagnostic.fix.edits
    assert (edit.location.row, edit.end_location.row) == (3, 4)
    assert apply_edits(source, diagnostic.fix.edits) == "import torch\n\x0c\nx = torch.zeros(3, device='cuda')\n"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("import torch\n\x0cx = torch.zeros(3).to('cuda')\ny = 1\n", id="form-feed-starts-the-fixed-line"),
        pytest.param("import torch\nx = torch.zeros(3).to('cuda')\n\x0cy = 1\n", id="form-feed-starts-the-next-line"),
        pytest.param("import torch\n\x0cdef f():\n    return torch.zeros(3).to('cuda')\n", id="form-feed-before-the-def"),
        pytest.param("import torch\nif x:\n\x0c    y = torch.zeros(3).to('cuda')\n", id="form-feed-before-an-indentation"),
        pytest.param("\x0cimport torch\r\n\x0cx = torch.zeros(3).to('cuda')\r\n", id="crlf"),
    ],
)
def test_edits_for_a_line_starting_with_a_form_feed_give_what_fix_writes(source):
    """JSON and SARIF edits apply to the file as it is: they must give ``--fix``'s text."""
    from pytorch_perflint.fixer import fix_source

    settings = dataclasses.replace(EVERYTHING, select=("TPF402",))
    (diagnostic,) = _with_edits(source, Path("ff.py"), settings)
    expected = fix_source(source, Path("ff.py"), dataclasses.replace(settings, unsafe_fixes=True)).source
    assert "\x0c" in expected and expected != source
    assert apply_edits(source, diagnostic.fix.edits) == expected


def _filler(count: int = 150) -> str:
    """Functions no rule reads: the part of a large file that is parsed in part."""
    body = "".join(f"    value = value * {k} + 1\n" for k in range(6))
    return "".join(f"def helper_{i}(value):\n{body}    return value\n\n\n" for i in range(count))


def _large_source() -> str:
    filler = _filler()
    return (
        "from __future__ import annotations\n\nimport os\nimport torch\n\n\n"
        + filler
        + "def make(n):\n    return torch.zeros(n).to('cuda')\n\n\n"
        + "def make_too(n):\n    return torch.ones(n, n).cuda()\n"
    )


def test_json_edits_on_a_large_file_parsed_in_part_are_the_whole_files_edits(monkeypatch):
    """JSON and SARIF may parse a large file in part, as concise does (``narrowing``): the
    edits must be those of the whole file."""
    from pytorch_perflint import narrowing

    source = _large_source()
    assert source.count("\n") > narrowing.MIN_LINES
    narrowed = []
    real = narrowing.narrowed_source

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        narrowed.append(result is not None)
        return result

    monkeypatch.setattr(narrowing, "narrowed_source", spy)
    settings = dataclasses.replace(Settings(), select=("TPF402",))
    parts = lint_source(source, Path("big.py"), settings, with_edits=True, keep_module=False).diagnostics
    assert narrowed == [True]
    whole = lint_source(source, Path("big.py"), settings, with_edits=True, keep_module=True).diagnostics
    assert [(d.code, d.location, d.fix.edits) for d in parts] == [(d.code, d.location, d.fix.edits) for d in whole]
    assert len(parts) == 2 and all(d.fix.edits for d in parts)


def test_a_fix_that_adds_an_import_gets_the_whole_files_placement():
    """An import goes after the file's own imports: parsed in part, some are blanked
    (``import os`` here), so such a file is parsed whole."""
    filler = _filler()
    source = (
        "from __future__ import annotations\n\nfrom torch import tensor\nimport numpy as np\nimport os\n\n\n"
        + filler
        + "array = np.zeros(3)\nfrom_np = tensor(array)\n"
    )
    settings = dataclasses.replace(Settings(), select=("TPF401",))
    parts = lint_source(source, Path("big.py"), settings, with_edits=True, keep_module=False).diagnostics
    whole = lint_source(source, Path("big.py"), settings, with_edits=True, keep_module=True).diagnostics
    assert [d.code for d in whole] == ["TPF401"] and any(e.content == "import torch\n" for e in whole[0].fix.edits)
    assert [(d.code, d.fix.edits) for d in parts] == [(d.code, d.fix.edits) for d in whole]
