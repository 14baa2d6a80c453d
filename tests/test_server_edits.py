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


# --------------------------------------------------------------------------------------
# The server's conversions, without a client (the other client kinds' settings).


def _lsp():
    pytest.importorskip("lsprotocol", reason="the server extra is not installed")
    from lsprotocol import types

    from pytorch_perflint.lsp import actions, convert
    from pytorch_perflint.lsp.documents import Buffer, lint_buffer

    return types, actions, convert, Buffer, lint_buffer


@pytest.mark.parametrize(
    ("units", "start", "end"),
    [
        (lambda s: len(s.encode("utf-16-le")) // 2, 20, 34),
        (lambda s: len(s.encode("utf-8")), 23, 37),  # Neovim offers UTF-8 first
        (len, 19, 33),
    ],
)
def test_positions_in_each_encoding_a_client_may_choose(units, start, end):
    types, _, convert, _, _ = _lsp()
    from pytorch_perflint.types import Location

    text = 'x = 1\r\ns = "\U0001f600é"; loader = DataLoader(ds)\n'
    positions = convert.Positions(text, units)
    assert positions.range(Location(2, 20), Location(2, 34)) == types.Range(
        start=types.Position(line=1, character=start), end=types.Position(line=1, character=end)
    )
    assert positions.location(types.Position(line=1, character=start)) == Location(2, 20)
    # Past the last line: the end of the text, never a position the document lacks.
    assert positions.at(Location(9, 1)) == types.Position(line=2, character=0)
    assert convert.Positions("a\nbc", units).at(Location(3, 1)) == types.Position(line=1, character=2)


def test_a_client_without_versioned_edits_or_resolve_gets_plain_changes_and_eager_fix_all(tmp_path):
    types, actions, convert, Buffer, lint_buffer = _lsp()
    path = tmp_path / "train.py"
    text = 'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")\nloader = DataLoader(ds)\n'
    buffer = Buffer(path.as_uri(), path, text, 7)
    linted = lint_buffer(buffer, for_fixes=True)
    everything = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=4, character=0))
    request = actions.Request(buffer, linted, buffer.uri, everything, None, convert.utf16_units, versioned=False, resolves=False)
    found = {action.title: action for action in actions.code_actions(request)}
    fix_all = found[actions.FIX_ALL_TITLE]
    assert fix_all.edit is not None and fix_all.edit.document_changes is None
    (edit,) = fix_all.edit.changes[buffer.uri]
    assert edit.range == types.Range(start=types.Position(line=3, character=0), end=types.Position(line=4, character=0))
    assert edit.new_text == "loader = DataLoader(ds, pin_memory=True)\n"
    assert sorted(found) == sorted(
        [
            actions.FIX_ALL_TITLE,
            "Fix TPF101 (unsafe): Add `num_workers=4`",
            "Fix TPF102 (safe): Add `pin_memory=True`",
            "Disable TPF101 for this line",
            "Disable TPF102 for this line",
        ]
    )


def test_unfixable_rules_get_no_fix_action_but_can_still_be_disabled(tmp_path):
    types, actions, convert, Buffer, lint_buffer = _lsp()
    (tmp_path / "pyproject.toml").write_text('[tool.pytorch-perflint]\nunfixable = ["TPF101"]\n')
    path = tmp_path / "train.py"
    buffer = Buffer(path.as_uri(), path, "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n", 1)
    everything = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=2, character=0))
    request = actions.Request(buffer, lint_buffer(buffer, for_fixes=True), buffer.uri, everything, None, convert.utf16_units, True)
    assert [action.title for action in actions.code_actions(request)] == ["Disable TPF101 for this line"]


def test_a_quick_fix_keeps_a_form_feed_that_starts_a_line_as_fix_does(tmp_path):
    """LibCST's rendering drops a form feed at a line start; the quick fix's edits must
    apply to the buffer as it is and give the text ``--fix`` writes for that one fix."""
    types, actions, convert, Buffer, lint_buffer = _lsp()
    path = tmp_path / "train.py"
    text = 'import torch\nfrom torch.utils.data import DataLoader\n\x0cdevice = torch.device("cuda")\n\x0cloader = DataLoader(ds, num_workers=4)\n'
    buffer = Buffer(path.as_uri(), path, text, 3)
    linted = lint_buffer(buffer, for_fixes=True)
    everything = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=4, character=0))
    request = actions.Request(buffer, linted, buffer.uri, everything, None, convert.utf16_units, versioned=False, resolves=False)
    (action,) = [a for a in actions.code_actions(request) if a.title.startswith("Fix TPF102")]
    fixed = text
    for edit in sorted(action.edit.changes[buffer.uri], key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        starts = [0, *(m.end() for m in LINE_BREAK.finditer(fixed))]
        begin = starts[edit.range.start.line] + edit.range.start.character
        end = starts[edit.range.end.line] + edit.range.end.character if edit.range.end.line < len(starts) else len(fixed)
        fixed = fixed[:begin] + edit.new_text + fixed[end:]
    assert fixed == fix_source(text, path, Settings()).source
    assert fixed.count("\x0c") == 2 and "pin_memory=True" in fixed
