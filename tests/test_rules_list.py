"""`pytorch-perflint rules` reads well at any width: a table when wide, a list when narrow,
a line per rule in a pipe, and never a word split across lines."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from rich.console import Console

from pytorch_perflint.cli import main
from pytorch_perflint.rules_list import brief, rule_infos, show

INFOS = rule_infos()
BOX = re.compile(r"^[\u2500-\u257f]+$")


def _render(width: int, terminal: bool) -> str:
    stream = io.StringIO()
    show(INFOS, Console(file=stream, width=width, force_terminal=terminal, color_system=None, highlight=False))
    return stream.getvalue()


def _words(text: str) -> list:
    return [w for w in re.split(r"[\s\u2500-\u257f]+", text) if w]


def _allowed_words() -> set:
    words = {"fix:", "none", "(off", "by", "default)", "(preview)", "[off", "default]", "[preview]", "Code", "Name", "Fix", "Notes", "Summary", "preview", "off", "by", "default", "-", ","}
    for info in INFOS:
        words.update((info["code"], info["name"], info["fix"] or "none"))
        words.update(brief(info["summary"]).split())
    return words


@pytest.mark.parametrize(("width", "terminal"), [(60, True), (80, True), (120, True), (200, False)])
def test_every_rule_once_and_no_word_split(width, terminal):
    text = _render(width, terminal)
    allowed = _allowed_words()
    stray = [w for w in _words(text) if w not in allowed]
    assert not stray, f"words split or invented at width {width}: {stray[:10]}"
    for info in INFOS:
        assert len(re.findall(rf"\b{info['code']}\b", text)) == 1, info["code"]
    if terminal:
        longest_word = max(len(w) for w in _words(text))
        assert all(len(line) <= max(width, longest_word + 8) for line in text.splitlines()), width


def test_narrow_terminal_is_a_short_list_not_a_squeezed_table():
    text = _render(80, True)
    assert "┃" not in text and "│" not in text
    assert len(text.splitlines()) < 4 * len(INFOS)  # was 959 lines as a table
    assert "TPF402  tensor-created-then-moved  fix: safe/unsafe" in text


def test_wide_terminal_gets_the_table():
    # 132 columns: with TPF105's 37-character name the table leaves the summary too little
    # room at 120 for `torch.backends.cudnn.benchmark`, and 120 gets the list instead.
    text = _render(132, True)
    assert "┃ Code" in text and "Summary" in text and "│ unsafe/display-only │" in text
    assert all(len(line) <= 132 for line in text.splitlines())


def test_a_pipe_gets_one_line_per_rule():
    result = CliRunner().invoke(main, ["rules"])
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and len(lines) == len(INFOS)
    assert [line.split()[0] for line in lines] == [info["code"] for info in INFOS]
    tpf601 = next(line for line in lines if line.startswith("TPF601"))
    assert tpf601.split()[1:3] == ["training-without-autocast", "display-only"] and "[preview]" in tpf601


def test_the_real_command_on_a_pipe_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "pytorch_perflint", "rules"], capture_output=True, text=True, check=True)
    assert len(proc.stdout.splitlines()) == len(INFOS) and "\x1b[" not in proc.stdout


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("Flags a `DataLoader` that loads batches (`num_workers` is 0) in the main process: a, b.", "Flags a `DataLoader` that loads batches in the main process."),
        ("Flags `.to(device)` calls. More text.", "Flags `.to(device)` calls."),
        ("Flags (nested (asides)) things.", "Flags things."),
    ],
)
def test_brief_is_the_first_sentence_without_asides(summary, expected):
    assert brief(summary) == expected
