"""The text edits the language server sends must be exact on the buffer it was given.

Editors count lines at ``\\n``, ``\\r\\n`` and ``\\r`` only (as LibCST does) and columns in
UTF-16 code units (by default); these tests pin both down without a client.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source
from pytorch_perflint.transform import apply_fixes, text_edits

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def apply_row_edits(source: str, edits) -> str:
    """Apply 1-based (row, column) edits as an editor would: lines end only at line breaks."""
    starts = [0, *(m.end() for m in LINE_BREAK.finditer(source))]

    def offset(location) -> int:
        if location.row - 1 >= len(starts):
            return len(source)
        return min(starts[location.row - 1] + location.column - 1, len(source))

    for edit in sorted(edits, key=lambda e: e.location, reverse=True):
        source = source[: offset(edit.location)] + edit.content + source[offset(edit.end_location) :]
    return source


ODD_LINES = (
    "import torch\nfrom torch.utils.data import DataLoader\n\x0c\ntorch.cuda.synchronize()\n"
    "loader = DataLoader(ds)  # caf\u00e9 \u2028 \x1c end\n"
)


@pytest.mark.parametrize("source", [ODD_LINES, ODD_LINES.replace("\n", "\r\n"), ODD_LINES.rstrip("\n")])
def test_fix_edits_are_exact_when_a_line_holds_characters_python_splitlines_breaks_at(source):
    lint = lint_source(source, Path("x.py"), Settings(), with_edits=True)
    fixed = [d for d in lint.diagnostics if d.fix and d.fix.edits]
    assert {d.code for d in fixed} == {"TPF101", "TPF102"}
    candidates = {id(candidate.diagnostic): candidate for candidate in lint.candidates}
    for diagnostic in fixed:
        assert lint.module is not None
        expected = apply_fixes(lint.module, [candidates[id(diagnostic)].fix]).code
        assert apply_row_edits(source, diagnostic.fix.edits) == expected
        assert diagnostic.fix.edits[0].location.row == diagnostic.location.row


def test_text_edits_of_a_whole_fix_round_trip():
    outcome = fix_source(ODD_LINES, Path("x.py"), Settings())
    assert outcome.source != ODD_LINES
    assert apply_row_edits(ODD_LINES, text_edits(ODD_LINES, outcome.source)) == outcome.source
