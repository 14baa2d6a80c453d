"""Adding a rule's code to a line's ``# noqa`` comment, as small text edits.

Used by ``check --add-noqa`` (every finding of every file) and by the language server's
"disable TPFxxx for this line" action (one finding), so both write the same comment.

What is written is what the engine reads back: the ``noqa`` pattern is the engine's own,
and the comment goes on a row ``suppression.suppressed`` looks at (the reported row, else the
row the finding ends on). A comment can only end a row whose end lies outside any string
and that does not continue with a backslash; the tokenizer says which rows those are, so a
``#`` inside a string is never taken for a comment.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .config import Settings
from .suppression import NOQA as NOQA_PATTERN  # the pattern the engine honours
from .types import Diagnostic

# Findings a `noqa` cannot silence: a file that does not parse, and unused-noqa itself.
UNSUPPRESSIBLE = frozenset({"TPF001", "TPF002"})


@dataclass(frozen=True)
class LineEdit:
    """Replace columns ``start:end`` (0-based, in characters) of row ``row`` (1-based)."""

    row: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class NoqaPlan:
    """The edits that add the codes, and the findings no comment can be put beside."""

    edits: Tuple[LineEdit, ...]
    skipped: Tuple[Diagnostic, ...] = ()


def _line_ends(source: str) -> Optional[Dict[int, Optional[int]]]:
    """Row -> the column of its comment's ``#`` (None: no comment), for every row a
    comment may end; None when the source does not tokenize."""
    rows: Dict[int, Optional[int]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                rows[token.start[0]] = token.start[1]
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                rows.setdefault(token.start[0], None)
    except (tokenize.TokenError, SyntaxError):
        return None
    return rows


def _lines(source: str) -> List[str]:
    """The rows as the tokenizer reads them (split at ``\\n`` only), without line ends."""
    return [line.rstrip("\n").rstrip("\r") for line in io.StringIO(source).readlines()]


def line_edit(line: str, comment: Optional[int], codes: Sequence[str], row: int) -> Optional[LineEdit]:
    """The edit that makes ``line``'s comment suppress ``codes``; None when it already
    does (a bare ``# noqa``, or every code named)."""
    if comment is not None:
        match = NOQA_PATTERN.search(line, comment)
        if match is not None:
            named = match.group("codes")
            if named is None:
                return None  # a bare noqa suppresses everything
            present = {code.upper() for code in re.split(r"[,\s]+", named) if code}
            missing = [code for code in codes if code not in present]
            if not missing:
                return None
            at = match.end("codes")
            return LineEdit(row, at, at, ", " + ", ".join(missing))
    end = len(line.rstrip(" \t"))
    return LineEdit(row, end, len(line), "  # noqa: " + ", ".join(codes))


def _row_for(diagnostic: Diagnostic, ends: Dict[int, Optional[int]]) -> Optional[int]:
    """The row the comment goes on: where the engine looks, and a comment may stand."""
    first = diagnostic.noqa_row or diagnostic.location.row
    for row in (first, diagnostic.location.row, diagnostic.end_location.row):
        if row in ends:
            return row
    return None


def plan(source: str, diagnostics: Iterable[Diagnostic]) -> NoqaPlan:
    """The edits that suppress each of ``diagnostics`` (rows of ``source``), one per row."""
    wanted = [d for d in diagnostics if d.code not in UNSUPPRESSIBLE]
    if not wanted:
        return NoqaPlan(())
    ends = _line_ends(source)
    if ends is None:
        return NoqaPlan((), tuple(wanted))
    by_row: Dict[int, List[str]] = {}
    skipped: List[Diagnostic] = []
    for diagnostic in wanted:
        row = _row_for(diagnostic, ends)
        if row is None:
            skipped.append(diagnostic)
            continue
        codes = by_row.setdefault(row, [])
        if diagnostic.code not in codes:
            codes.append(diagnostic.code)
    lines = _lines(source)
    edits = []
    for row, codes in sorted(by_row.items()):
        if row > len(lines):
            continue
        edit = line_edit(lines[row - 1], ends[row], sorted(codes), row)
        if edit is not None:
            edits.append(edit)
    return NoqaPlan(tuple(edits), tuple(skipped))


def apply(source: str, edits: Sequence[LineEdit]) -> str:
    """``source`` with the edits made (at most one per row); line ends are kept."""
    by_row = {edit.row: edit for edit in edits}
    out = []
    for row, line in enumerate(io.StringIO(source).readlines(), start=1):
        edit = by_row.get(row)
        if edit is not None:
            body = line.rstrip("\n").rstrip("\r")
            line = body[: edit.start] + edit.text + body[edit.end :] + line[len(body) :]
        out.append(line)
    return "".join(out)


# --------------------------------------------------------------------------------------
# --add-noqa: every finding of a file.


@dataclass(frozen=True)
class FileNoqa:
    """What ``--add-noqa`` did to one file: lines changed, findings left, and why not."""

    path: Path
    added: int = 0
    skipped: int = 0
    error: Optional[str] = None


def _suppress_all(source: str, path: Path, settings: Settings, rows: Optional[Sequence[Tuple[int, int]]] = None) -> Tuple[str, int, int]:
    """(new source, lines changed, findings left) for one source text. ``rows``: a
    notebook's row map (no comment goes on the cell markers)."""
    from . import engine

    lint = engine.lint_source(source, path, settings, with_edits=False, keep_module=False)
    if lint.errors:
        raise ValueError("; ".join(lint.errors))
    diagnostics = lint.diagnostics
    if rows is not None:
        diagnostics = [d for d in diagnostics if d.location.row < len(rows) and rows[d.location.row][1] != 0]
    found = plan(source, diagnostics)
    return apply(source, found.edits), len(found.edits), len(found.skipped)


def add_noqa_to_file(path: Path, settings: Settings) -> FileNoqa:
    """Add the ``noqa`` codes to one file, written atomically (as ``--fix`` writes)."""
    from . import decoding, notebook
    from .safe_write import write_fixed

    try:
        data = path.read_bytes()
    except OSError as error:
        return FileNoqa(path, error=f"{path}: cannot read: {error.strerror or error}")
    try:
        if path.suffix == ".ipynb":
            book = notebook.load(data.decode("utf-8-sig"))
            new_source, added, skipped = _suppress_all(book.source, path, settings, book.rows)
            if not added:
                return FileNoqa(path, skipped=skipped)
            bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
            encoded = bom + notebook.dump(book, new_source).encode("utf-8")
        else:
            decoded = decoding.decode(data)
            new_source, added, skipped = _suppress_all(decoded.text, path, settings)
            if not added:
                return FileNoqa(path, skipped=skipped)
            compile(new_source, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            encoded = new_source.encode(decoded.encoding)
    except (decoding.Undecodable, notebook.NotebookError, UnicodeDecodeError):
        return FileNoqa(path)  # not source text: TPF001, which no noqa silences
    except (SyntaxError, ValueError) as error:  # a rule crashed, or (never) a broken edit
        return FileNoqa(path, error=f"{path}: not changed: {error}")
    problem = write_fixed(path, data, encoded)
    if problem is not None:
        return FileNoqa(path, error=problem.message.replace("fix not written", "noqa not written"))
    return FileNoqa(path, added=added, skipped=skipped)


def add_noqa(files: Sequence[Path], settings: Settings) -> List[FileNoqa]:
    """``--add-noqa`` over files (one at a time: it is run once, by hand)."""
    return [add_noqa_to_file(path, settings) for path in files]
