"""``--statistics``: one row per code (count, code, fixable marker, name) instead of findings.

ruff's layout: count right-aligned, tab, code, tab, ``[*]`` when every finding of the code
is fixable by ``--fix``, ``[~]`` when some are, ``[ ]`` when none, then the rule name. The
marker column appears only when anything is fixable. ``[~]`` is this tool's own (ruff has
no partly fixable code), so a line after the rows says what it means when one is shown.
JSON gives the same rows as objects.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, TextIO

from ..types import FileResult
from .common import entries, is_applicable


@dataclass(frozen=True)
class Stat:
    """How often one code fired, and how many of those ``--fix`` would fix."""

    code: str
    name: str
    count: int
    fixable_count: int

    @property
    def marker(self) -> str:
        if self.fixable_count == 0:
            return "[ ]"
        return "[*]" if self.fixable_count == self.count else "[~]"

    def as_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "name": self.name, "count": self.count, "fixable_count": self.fixable_count}


def compute(results: Sequence[FileResult], *, unsafe_fixes: bool = False) -> List[Stat]:
    """Rows sorted by count (most frequent first), then code."""
    counts: Counter = Counter()
    fixable: Counter = Counter()
    names: Dict[str, str] = {}
    for entry in entries(results):
        d = entry.diagnostic
        counts[d.code] += 1
        names.setdefault(d.code, d.name)
        if is_applicable(d.fix, unsafe_fixes):
            fixable[d.code] += 1
    rows = [Stat(code, names[code], count, fixable[code]) for code, count in counts.items()]
    rows.sort(key=lambda s: (-s.count, s.code))
    return rows


def text_rows(stats: Sequence[Stat]) -> List[List[str]]:
    """The cells of each row, padded for alignment: [count, code, marker or '', name]."""
    if not stats:
        return []
    count_width = max(len(str(s.count)) for s in stats)
    code_width = max(len(s.code) for s in stats)
    any_fixable = any(s.fixable_count for s in stats)
    return [
        [
            str(s.count).rjust(count_width),
            s.code.ljust(code_width),
            f"{s.marker} " if any_fixable else "",
            s.name,
        ]
        for s in stats
    ]


PARTLY = "[~] some, not all, of that code's findings are fixable ([*]: all of them)"


def legend(stats: Sequence[Stat]) -> Optional[str]:
    """The line that explains ``[~]``, when a row shows it."""
    return PARTLY if any(s.marker == "[~]" for s in stats) else None


def write_text(stats: Sequence[Stat], stream: TextIO) -> None:
    for count, code, marker, name in text_rows(stats):
        stream.write(f"{count}\t{code}\t{marker}{name}\n")
    if legend(stats):
        stream.write(f"{legend(stats)}\n")


def write_rich(stats: Sequence[Stat], console: Any) -> None:
    """The same rows, coloured like ruff's (count bold, code red, marker cyan)."""
    from rich.text import Text

    for count, code, marker, name in text_rows(stats):
        line = Text()
        line.append(count, style="bold")
        line.append("\t")
        line.append(code, style="bold red")
        line.append("\t")
        if marker:
            line.append(marker[0])
            line.append(marker[1], style="cyan")
            line.append(marker[2:])
        line.append(name)
        console.print(line)
    if legend(stats):
        console.print(Text(legend(stats) or ""))


def objects(stats: Sequence[Stat]) -> List[Dict[str, Any]]:
    return [s.as_dict() for s in stats]
