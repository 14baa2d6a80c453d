"""Jupyter notebooks: lint and fix their code cells as one Python source.

The code cells are joined into one text, each preceded by a marker comment, so a fix that
adds or removes lines (an import, a ``with`` block) still splits back into the right cells.
IPython magics (``%time``, ``!pip``, ``out = !ls``, ``%%bash`` cells, ``x?``) are masked as
``pass`` statements that carry their index, and restored when the cells are written back;
only a line that starts a logical line can be one, as in IPython.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import jsontext
from .comments import comment_start
from .engine import compile_python
from .types import Diagnostic, Location

_MARKER = "# pytorch-perflint: cell {index}"
# Cell magics whose body is Python that IPython runs (timed, repeated or captured).
_PYTHON_BODY_RE = re.compile(r"^%%(?:time|timeit|capture)(?:\s|$)")
_MARKER_RE = re.compile(r"^# pytorch-perflint: cell (\d+)$")
# At the start of a logical line: a line or shell magic, ``?name`` help, or the result of a
# magic assigned (``out = !ls``, ``t = %time f()``; ``=`` then ``%``/``!`` is never Python).
_MAGIC_RE = re.compile(r"^[ \t]*(?:[%!]|\?+\S|[\w.\[\]'\", \t*]+=[ \t]*[%!](?!=))")
_MAGIC_CHARS = re.compile(r"[%!?]")
_INDENT_RE = re.compile(r"^[ \t]*")
_OPEN, _CLOSE = "([{", ")]}"
_MASK = "pass  # pytorch-perflint: magic {index}"
_MASK_RE = re.compile(r"^(?P<indent>[ \t]*)pass  # pytorch-perflint: magic (?P<index>\d+)$")
# Diagnostics about the whole file, kept (on the cell's first line) where they point at a marker.
_FILE_LEVEL = frozenset({"TPF001", "TPF003"})


class NotebookError(ValueError):
    """The file is not a notebook we can read; the message says why."""


@dataclass(frozen=True)
class Notebook:
    """A parsed notebook and where each code cell's lines stand in the joined source."""

    data: Dict[str, Any]
    # Index into data["cells"] of each code cell, in order.
    code_cells: Tuple[int, ...]
    # The original text of every masked magic line, by mask index.
    magics: Tuple[str, ...]
    source: str
    # For each row of ``source`` (1-based, index 0 unused): (cell number 1-based, row in cell).
    rows: Tuple[Tuple[int, int], ...]
    # The JSON text as read: a fix edits only the changed cells' source values in it.
    text: str


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _expect(value: Any, kind: type, where: str) -> None:
    """Raise NotebookError naming the JSON path when ``value`` is not of ``kind``."""
    if not isinstance(value, kind):
        wanted = {dict: "an object", list: "a list", str: "a string"}[kind]
        raise NotebookError(f"invalid notebook: {where} is {_kind(value)}, not {wanted}")


def _language(data: Dict[str, Any]) -> str:
    """The notebook's language (Python when it does not say)."""
    metadata = data.get("metadata", {})
    _expect(metadata, dict, "metadata")
    info = metadata.get("language_info", {})
    _expect(info, dict, "metadata.language_info")
    name = info.get("name", "python")
    _expect(name, str, "metadata.language_info.name")
    return name


def _cell_text(cell: Dict[str, Any], where: str) -> str:
    """A code cell's source, a string or a list of strings (nbformat 4)."""
    source = cell.get("source", "")
    if isinstance(source, list):
        for index, part in enumerate(source):
            _expect(part, str, f"{where}.source[{index}]")
        return "".join(source)
    if not isinstance(source, str):
        raise NotebookError(f"invalid notebook: {where}.source is {_kind(source)}, not a string or a list of strings")
    return source


def _is_magic(line: str) -> bool:
    """Whether a line that starts a logical line is IPython syntax (help: ``name?``, read
    without the line's comment, as IPython does)."""
    if not _MAGIC_CHARS.search(line):
        return False  # most lines, cheaply
    if _MAGIC_RE.match(line):
        return True
    if "?" not in line:
        return False
    comment = comment_start(line)
    if comment is None:
        return False
    code = (line[:comment] if comment >= 0 else line).rstrip()
    return code.endswith("?") and bool(code.strip("?").strip())


def _logical_end(lines: Sequence[str], start: int) -> int:
    """The index of the last physical line of the logical line that starts at ``start``, as
    Python's tokenizer sees it (brackets, backslashes and strings continue a line).

    A fresh tokenizer per logical line, stopped at its end, so no later line (a magic) is
    ever tokenized as Python. A line that leaves a bracket or string open to the end of the
    cell takes the rest of the cell; one the tokenizer rejects is taken alone.
    """
    feed = (line + "\n" for line in lines[start:])
    depth = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(feed, "")):
            if token.type == tokenize.OP and token.string in _OPEN:
                depth += 1
            elif token.type == tokenize.OP and token.string in _CLOSE:
                depth = max(0, depth - 1)
            elif token.type in (tokenize.NEWLINE, tokenize.NL) and depth == 0:
                return start + token.start[0] - 1
            elif token.type == tokenize.ENDMARKER:
                break
    except tokenize.TokenError:
        return len(lines) - 1
    except SyntaxError:  # IndentationError, or a character no Python token starts with
        pass
    return start


def _mask_cell(cell_lines: Sequence[str], magics: List[str]) -> List[str]:
    """The cell's lines with each magic replaced by ``pass`` and a comment carrying its index.

    Only a line that starts a logical line can be a magic (IPython reads them the same way):
    ``% 3)`` inside brackets or after a backslash is Python. The lines after a magic that
    ends with a backslash belong to it, and a ``%%`` cell is a magic throughout, except
    the cell magics whose body IPython runs as Python (``%%time``, ``%%timeit``,
    ``%%capture``): only their first line is masked, the body is linted and fixed.
    """
    if cell_lines and cell_lines[0].startswith("%%"):
        if _PYTHON_BODY_RE.match(cell_lines[0]):
            kept = len(magics)
            body = _mask_cell(cell_lines[1:], magics)
            if _compiles("\n".join(body)):
                return [_masked(cell_lines[0], "", magics), *body]
            del magics[kept:]  # not Python after all: the whole cell stays a magic
        return [_masked(line, "", magics) for line in cell_lines]
    candidates = [index for index, line in enumerate(cell_lines) if _is_magic(line)]
    if not candidates:
        return list(cell_lines)  # most cells: nothing to tokenize
    out: List[str] = []
    index = 0
    while index <= candidates[-1]:  # after the last candidate there is nothing to decide
        line = cell_lines[index]
        if not _is_magic(line):
            end = _logical_end(cell_lines, index)
            out.extend(cell_lines[index : end + 1])
            index = end + 1
            continue
        indent = _INDENT_RE.match(line).group(0)  # type: ignore[union-attr]
        out.append(_masked(line, indent, magics))
        index += 1
        while line.rstrip().endswith("\\") and index < len(cell_lines):
            line = cell_lines[index]
            out.append(_masked(line, indent, magics))
            index += 1
    out.extend(cell_lines[index:])
    return out


def _compiles(text: str) -> bool:
    """Python (not run, only compiled) accepts the text."""
    try:
        compile(text, "<cell>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _masked(line: str, indent: str, magics: List[str]) -> str:
    magics.append(line)
    return indent + _MASK.format(index=len(magics) - 1)


def load(text: str) -> Notebook:
    """Read a notebook's JSON text; raise NotebookError with a clear reason if it is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"invalid notebook JSON: {error}") from error
    if not isinstance(data, dict):
        raise NotebookError(f"invalid notebook: the file is {_kind(data)}, not a JSON object")
    if "cells" not in data:
        raise NotebookError("invalid notebook: no list of cells (nbformat 4 is needed)")
    _expect(data["cells"], list, "cells")
    language = _language(data)
    if language not in ("python", "ipython", "python3"):
        raise NotebookError(f"not a Python notebook (language {language!r})")
    code_cells: List[int] = []
    magics: List[str] = []
    lines: List[str] = []
    rows: List[Tuple[int, int]] = [(0, 0)]
    for index, cell in enumerate(data["cells"]):
        where = f"cells[{index}]"
        _expect(cell, dict, where)
        kind = cell.get("cell_type")
        if kind is not None:
            _expect(kind, str, f"{where}.cell_type")
        if kind != "code":
            continue
        cell_source = _cell_text(cell, where)
        code_cells.append(index)
        number = len(code_cells)
        lines.append(_MARKER.format(index=number))
        rows.append((number, 0))
        for row, line in enumerate(_mask_cell(cell_source.split("\n"), magics), start=1):
            lines.append(line)
            rows.append((number, row))
    source = "\n".join(lines) + "\n"
    return Notebook(data, tuple(code_cells), tuple(magics), source, tuple(rows), text)


def cell_sources(notebook: Notebook) -> Tuple[str, ...]:
    """The text of each code cell, in order: a diagnostic's ``cell`` (1-based) indexes it
    and its rows count from the cell's first line (for code frames)."""
    return tuple(_cell_text(notebook.data["cells"][index], f"cells[{index}]") for index in notebook.code_cells)


def compile_cells(source: str, path: Path) -> None:
    """Compile the joined source as IPython runs the cells; raise SyntaxError where it would.

    IPython compiles each top-level statement of a cell on its own, so ``await`` may stand
    at the top level and a top-level ``from __future__`` import may come after other
    statements (a second cell that starts with one is common). Those imports are moved to
    the front before compiling, which keeps every other check of the compiler: an unknown
    feature, ``braces``, or a future import inside a block is still an error.
    """
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile_python(source, path, flags=ast.PyCF_ONLY_AST | flags)
    futures = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    if futures:
        tree.body = futures + [node for node in tree.body if node not in futures]
    compile_python(tree, path, flags=flags)


def map_diagnostic(notebook: Notebook, diagnostic: Diagnostic) -> Optional[Diagnostic]:
    """The diagnostic with its rows relative to its cell (None if it points at a marker)."""
    start = notebook.rows[diagnostic.location.row] if diagnostic.location.row < len(notebook.rows) else None
    if start is None or start[1] == 0:
        if diagnostic.code not in _FILE_LEVEL:
            return None
        start = (start or (1, 1))[0], 1
    end_row = diagnostic.end_location.row
    end = notebook.rows[end_row] if end_row < len(notebook.rows) else start
    if end[0] != start[0]:
        end = start
    return dataclasses.replace(
        diagnostic,
        cell=start[0],
        location=Location(start[1], diagnostic.location.column),
        end_location=Location(max(end[1], start[1]), diagnostic.end_location.column),
        noqa_row=start[1] if diagnostic.noqa_row is not None else None,
    )


def cell_diagnostics(notebook: Notebook, diagnostics: Sequence[Diagnostic], fixed: Optional[str] = None) -> Tuple[Diagnostic, ...]:
    """The diagnostics of the joined source (of ``fixed``, the fixed one, when given) in
    the cells' rows, without their edits (they are relative to the joined source).

    A fix that adds lines to a cell moves every later cell down the joined source: mapped
    with the rows the notebook was read with, a later cell's findings were reported rows
    too low, in the wrong cell, or (on a marker) not at all."""
    if fixed is not None:
        notebook = dataclasses.replace(notebook, rows=_rows_after_fix(fixed))
    mapped = (map_diagnostic(notebook, d) for d in diagnostics)
    return tuple(dataclasses.replace(d, fix=dataclasses.replace(d.fix, edits=())) if d.fix else d for d in mapped if d is not None)


def _rows_after_fix(source: str) -> Tuple[Tuple[int, int], ...]:
    """``Notebook.rows`` for a fixed joined source, split into cells as ``dump`` splits it:
    the non-blank lines a fix put above the first marker (an import) open cell 1."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if _MARKER_RE.match(line)), len(lines))
    rows: List[Tuple[int, int]] = [(0, 0)]
    kept = 0
    for line in lines[:first]:
        kept += bool(line.strip())
        rows.append((1, kept if line.strip() else 0))
    cell, row = 0, 0
    for line in lines[first:]:
        marker = _MARKER_RE.match(line)
        if marker:
            cell = int(marker.group(1))
            row = kept if cell == 1 else 0
            rows.append((cell, 0))
            continue
        row += 1
        rows.append((cell, row))
    return tuple(rows)


def _unmask(line: str, magics: Sequence[str]) -> str:
    match = _MASK_RE.match(line)
    if match is None:
        return line
    return magics[int(match.group("index"))]


def dump(notebook: Notebook, source: str) -> str:
    """The notebook's JSON text with its code cells replaced by those in ``source``."""
    cells: Dict[int, List[str]] = {}
    current: Optional[int] = None
    preamble: List[str] = []
    for line in source.split("\n"):
        marker = _MARKER_RE.match(line)
        if marker:
            current = int(marker.group(1))
            cells[current] = []
            continue
        if current is None:
            preamble.append(line)  # e.g. an import a fix added above the first marker
        else:
            cells[current].append(_unmask(line, notebook.magics))
    if set(cells) != set(range(1, len(notebook.code_cells) + 1)):
        raise NotebookError("the fixed source lost a cell marker; not written")
    preamble = [line for line in preamble if line.strip()]
    new_sources: Dict[int, str] = {}
    for number, index in enumerate(notebook.code_cells, start=1):
        lines = cells[number]
        if number == 1 and preamble:
            lines = preamble + lines
        if number == len(notebook.code_cells) and lines and lines[-1] == "":
            lines = lines[:-1]  # the newline the joined source ends with
        text = "\n".join(lines)
        if text != _cell_text(notebook.data["cells"][index], ""):
            new_sources[index] = text
    if not new_sources:
        return notebook.text
    return _edited(notebook, new_sources)


def _edited(notebook: Notebook, new_sources: Dict[int, str]) -> str:
    """The JSON text with only those cells' source values rewritten, checked by reading it
    back: every value must be the original or the new source."""
    try:
        spans = jsontext.source_spans(notebook.text)
    except (jsontext.JSONLayoutError, ValueError, IndexError) as error:
        raise NotebookError(f"the notebook's JSON could not be edited in place ({error}); not written") from None
    missing = sorted(set(new_sources) - set(spans))
    if missing:
        raise NotebookError(f"cell {missing[0]} has no source to edit; not written")
    out = jsontext.replace_sources(notebook.text, new_sources, spans)
    expected = copy.deepcopy(notebook.data)
    for index, text in new_sources.items():
        cell = expected["cells"][index]
        cell["source"] = jsontext.split_lines(text) if isinstance(cell["source"], list) else text
    if json.dumps(json.loads(out), sort_keys=True) != json.dumps(expected, sort_keys=True):  # NaN != NaN
        raise NotebookError("the edited notebook does not read back as intended; not written")
    return out
