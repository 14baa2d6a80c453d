"""Editing a notebook's JSON text in place: where each cell's ``source`` value sits, and the
new value written in the document's own style.

Re-serialising the whole document (``json.dumps``) would rewrite every byte a writer other
than Jupyter laid out differently (compact JSON, CRLF, ``\\u00e9`` and ``\\/`` escapes, key
order, indent). Instead the values are located by a small scanner that walks the objects and
arrays on the way to them (``json.JSONDecoder.raw_decode`` reads every other value and
gives its end), and only the edited values are replaced. Unchanged lines keep their exact
bytes; new lines copy the separators and escapes of the document.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Deque, Dict, Iterator, List, Optional, Sequence, Tuple

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
# One escape or a run of plain characters in a JSON string's body.
_STRING_PIECE = re.compile(r"\\u[0-9a-fA-F]{4}|\\.|[^\\]+")
_NON_ASCII_ESCAPE = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")
_ESCAPED_SLASH = re.compile(r"(?<!\\)(?:\\\\)*\\/")


class JSONLayoutError(ValueError):
    """The text is not laid out as the parsed data says (cannot happen for valid JSON)."""


@dataclass(frozen=True)
class SourceSpan:
    """Where one cell's ``source`` value sits in the text, with what its layout needs."""

    start: int  # the value's first character ("[" or the opening quote)
    end: int  # one past its last
    elements: Tuple[Tuple[int, int], ...]  # each list element's span (empty for a string)
    key_start: int  # the "source" key's opening quote
    member_gap: str  # whitespace after a comma between the cell's members ("" if unknown)


@dataclass(frozen=True)
class Style:
    """How the document writes strings and breaks lines."""

    ensure_ascii: bool
    escape_slash: bool
    newline: str
    indent_unit: Optional[str]  # None: a document on one line

    @classmethod
    def of(cls, text: str) -> "Style":
        first = _WS.match(text, text.index("{") + 1 if "{" in text else 0).group(0)
        unit = first.rsplit("\n", 1)[1] if "\n" in first else None
        return cls(
            ensure_ascii=text.isascii() and _NON_ASCII_ESCAPE.search(text) is not None,
            escape_slash=_ESCAPED_SLASH.search(text) is not None,
            newline="\r\n" if "\r\n" in text else "\n",
            indent_unit=unit,
        )

    def encode(self, value: str) -> str:
        encoded = json.dumps(value, ensure_ascii=self.ensure_ascii)
        return encoded.replace("/", "\\/") if self.escape_slash else encoded


def _skip(text: str, at: int) -> int:
    return _WS.match(text, at).end()  # type: ignore[union-attr]


def _expect(text: str, at: int, char: str) -> None:
    if at >= len(text) or text[at] != char:
        raise JSONLayoutError(f"expected {char!r} at offset {at}")


def _members(text: str, at: int) -> Iterator[Tuple[str, int, int, int, str]]:
    """(key, key start, value start, value end, whitespace after the comma before the key)
    of the object whose ``{`` is at ``at``."""
    _expect(text, at, "{")
    at = _skip(text, at + 1)
    gap = ""
    if text.startswith("}", at):
        return
    while True:
        key, after = _DECODER.raw_decode(text, at)
        colon = _skip(text, after)
        _expect(text, colon, ":")
        start = _skip(text, colon + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, at, start, end, gap
        at = _skip(text, end)
        if text.startswith("}", at):
            return
        _expect(text, at, ",")
        following = _skip(text, at + 1)
        gap = text[at + 1 : following]
        at = following


def _elements(text: str, at: int) -> List[Tuple[int, int]]:
    """The spans of the elements of the array whose ``[`` is at ``at``."""
    _expect(text, at, "[")
    spans: List[Tuple[int, int]] = []
    at = _skip(text, at + 1)
    if text.startswith("]", at):
        return spans
    while True:
        _, end = _DECODER.raw_decode(text, at)
        spans.append((at, end))
        at = _skip(text, end)
        if text.startswith("]", at):
            return spans
        _expect(text, at, ",")
        at = _skip(text, at + 1)


def _last(members: Iterator[Tuple[str, int, int, int, str]], name: str) -> Optional[Tuple[int, int, int, str]]:
    """The last member called ``name`` (JSON readers keep the last of duplicate keys)."""
    found = None
    gap = ""
    for key, key_start, start, end, member_gap in members:
        gap = gap or (member_gap if "\n" not in member_gap else "")
        if key == name:
            found = (key_start, start, end)
    return None if found is None else (*found, gap)


def source_spans(text: str) -> Dict[int, SourceSpan]:
    """Cell index -> where that cell's ``source`` value is, for every cell that has one."""
    top = _skip(text, 0)
    cells = _last(_members(text, top), "cells")
    if cells is None:
        raise JSONLayoutError("no cells")
    spans: Dict[int, SourceSpan] = {}
    for index, (start, _) in enumerate(_elements(text, cells[1])):
        found = _last(_members(text, start), "source")
        if found is None:
            continue
        key_start, value_start, value_end, gap = found
        elements = tuple(_elements(text, value_start)) if text[value_start] == "[" else ()
        spans[index] = SourceSpan(value_start, value_end, elements, key_start, gap)
    return spans


def _pool(raws: Sequence[str], decoded: Sequence[str]) -> Dict[str, Deque[str]]:
    pool: Dict[str, Deque[str]] = defaultdict(deque)
    for raw, value in zip(raws, decoded):
        pool[value].append(raw)
    return pool


def _reuse(pool: Dict[str, Deque[str]], value: str, fresh: str) -> str:
    """The original bytes of an unchanged line (in order), else ``fresh``."""
    return pool[value].popleft() if pool.get(value) else fresh


def split_lines(value: str) -> List[str]:
    """``value`` split after each newline, as Jupyter stores a source list."""
    parts = value.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _line_start(text: str, at: int) -> Optional[str]:
    """The whitespace before ``at`` on its line, or None when something else is before it."""
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    before = text[start:at]
    return before if not before.strip() and start > 0 else None


def render_list(text: str, span: SourceSpan, value: str, style: Style) -> str:
    """A source list holding ``value``, laid out as the list it replaces (or its document)."""
    raws = [text[a:b] for a, b in span.elements]
    pool = _pool(raws, [json.loads(raw) for raw in raws])
    items = [_reuse(pool, line, style.encode(line)) for line in split_lines(value)]
    if not items:
        return "[]"
    if span.elements:
        opening = text[span.start + 1 : span.elements[0][0]]
        closing = text[span.elements[-1][1] : span.end - 1]
    else:
        indent = _line_start(text, span.key_start)
        if indent is None or style.indent_unit is None:
            opening = closing = ""
        else:
            opening = style.newline + indent + style.indent_unit
            closing = style.newline + indent
    if len(span.elements) > 1:
        separator = text[span.elements[0][1] : span.elements[1][0]]
    elif "\n" in opening:
        separator = "," + opening
    else:
        separator = "," + span.member_gap
    return "[" + opening + separator.join(items) + closing + "]"


def render_string(text: str, span: SourceSpan, value: str, style: Style) -> str:
    """A source string holding ``value``, its unchanged lines' escapes kept."""
    body = text[span.start + 1 : span.end - 1]
    raws: List[str] = []
    current = ""
    for piece in _STRING_PIECE.findall(body):
        current += piece
        if piece in ("\\n", "\\u000a", "\\u000A"):
            raws.append(current)
            current = ""
    if current:
        raws.append(current)
    pool = _pool(raws, [json.loads(f'"{raw}"') for raw in raws])
    return '"' + "".join(_reuse(pool, line, style.encode(line)[1:-1]) for line in split_lines(value)) + '"'


def replace_sources(text: str, new_sources: Dict[int, str], spans: Dict[int, SourceSpan]) -> str:
    """``text`` with the source of each cell in ``new_sources`` replaced, nothing else."""
    style = Style.of(text)
    edits = []
    for index, value in new_sources.items():
        span = spans[index]
        render = render_list if text[span.start] == "[" else render_string
        edits.append((span.start, span.end, render(text, span, value, style)))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text
