"""Applying tree-form fixes to a parsed module, and turning them into text edits.

Fixes are applied on the tree, not as text, so LibCST keeps indentation, comments and
parentheses right (wrapping a loop in ``with torch.no_grad():`` re-indents its body).
"""

from __future__ import annotations

import difflib
import re
from typing import AbstractSet, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .rule import NodeFix, Replacement
from .types import Edit, Location

class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: Dict[int, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.replacements.get(id(original_node))
        if replacement is not None:
            return replacement
        return updated_node


def apply_fixes(module: cst.Module, fixes: Iterable[NodeFix]) -> cst.Module:
    """The module with every fix's replacements made and its imports added once.

    The fixes must not overlap (no replaced node inside another); the fixer ensures that.
    """
    replacements: Dict[int, Replacement] = {}
    imports: List[str] = []
    for fix in fixes:
        for old, new in fix.replacements:
            replacements[id(old)] = new
        imports.extend(name for name in fix.imports if name not in imports)
    updated = module.visit(_Replace(replacements)) if replacements else module
    if imports:
        context = CodemodContext()
        for name in imports:
            AddImportsVisitor.add_needed_import(context, name)
        updated = AddImportsVisitor(context).transform_module(updated)
    assert isinstance(updated, cst.Module)
    return updated


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines_of(text: str) -> List[str]:
    """The lines with their ends, broken where Python (and LibCST) break them: at ``\\r\\n``,
    ``\\r`` and ``\\n`` only. ``str.splitlines`` also breaks at form feeds and other
    separators, which would shift every row after them."""
    return _LINE.findall(text)


def _hunks(old: Sequence[str], new: Sequence[str]) -> Iterator[Tuple[int, int, int, int]]:
    """(i1, i2, j1, j2): ``old[i1:i2]`` becomes ``new[j1:j2]``; the common head and tail
    are skipped before difflib compares what is left (a fix touches few lines)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(a=old[head : len(old) - tail], b=new[head : len(new) - tail], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            yield head + i1, head + i2, head + j1, head + j2


def text_edits(before: str, after: str) -> Tuple[Edit, ...]:
    """Line-granular edits that turn ``before`` into ``after``."""
    old, new = lines_of(before), lines_of(after)
    return tuple(
        Edit(content="".join(new[j1:j2]), location=Location(i1 + 1, 1), end_location=Location(i2 + 1, 1))
        for i1, i2, j1, j2 in _hunks(old, new)
    )


def first_foreign_change(before: str, after: str, own_rows: AbstractSet[int], imports: bool) -> Optional[int]:
    """The first row of ``before`` that ``after`` changes although no fix edits it (None:
    every change is the fixes' own).

    A fix's own rows are those of the nodes it replaces (and the comments just above them);
    lines inserted next to them are its own too. A fix that adds imports may also insert
    lines anywhere and extend an existing import statement.
    """
    old = lines_of(before)
    for i1, i2, _, _ in _hunks(old, lines_of(after)):
        if i1 == i2:  # lines inserted between rows i1 and i1 + 1
            if imports or i1 in own_rows or i1 + 1 in own_rows:
                continue
            return i1 + 1
        if imports and old[i1].lstrip().startswith(("import ", "from ")):
            continue
        foreign = [row for row in range(i1 + 1, i2 + 1) if row not in own_rows]
        if foreign:
            return foreign[0]
    return None


def transplant(source: str, rendered: str, updated: str) -> Optional[str]:
    """``source`` with the line changes that turn ``rendered`` (LibCST's rendering of the
    unchanged tree) into ``updated`` (its rendering of the fixed tree).

    LibCST does not keep every byte: a form feed in a statement line's indentation (a block
    keeps one indent string; a module-level line none) and the last newline of a file whose
    lines end with a lone ``\\r`` are lost when it renders the tree, and so are the blank
    and comment lines after the last statement of a file whose last line is only
    indentation or an indented comment (LibCST folds them into that line). Taking only the changed lines from its
    rendering keeps them everywhere else. None when a changed line is one LibCST renders
    differently, or lies beyond the lines it renders as they are when the counts differ.
    """
    if source.endswith("\r") and not rendered.endswith(("\r", "\n")) and not updated.endswith(("\r", "\n")):
        rendered, updated = rendered + "\r", updated + "\r"  # the lone "\r" LibCST dropped
    old, new, original = lines_of(rendered), lines_of(updated), lines_of(source)
    aligned = None  # the number of first lines of ``old`` that stand for the source's own
    if len(old) != len(original):
        aligned = next((i for i, (a, b) in enumerate(zip(old, original)) if a != b), min(len(old), len(original)))
    out: List[str] = []
    at = 0
    for i1, i2, j1, j2 in _hunks(old, new):
        if aligned is not None and (i2 > aligned or i1 >= aligned):
            return None  # a change where LibCST's lines no longer match the source's
        replacement = new[j1:j2]
        if old[i1:i2] != original[i1:i2]:
            replacement = _with_page_breaks(original[i1:i2], old[i1:i2], replacement)
            if replacement is None:
                return None
        out.extend(original[at:i1])
        out.extend(replacement)
        at = i2
    out.extend(original[at:])
    return "".join(out)


def _with_page_breaks(original: Sequence[str], rendered: Sequence[str], new: Sequence[str]) -> Optional[List[str]]:
    """``new`` with the form feeds that started each ``original`` line put back, when the
    lines correspond one to one and the form feeds at their starts are all LibCST lost."""
    if len(original) != len(rendered) or len(rendered) != len(new):
        return None
    out = []
    for source_line, rendered_line, new_line in zip(original, rendered, new):
        breaks = source_line[: len(source_line) - len(source_line.lstrip("\x0c"))]
        if breaks + rendered_line != source_line:
            return None
        out.append(breaks + new_line)
    return out


def fix_edits(module: cst.Module, fix: NodeFix) -> Tuple[Edit, ...]:
    """The text edits of one fix on its own."""
    return text_edits(module.code, apply_fixes(module, [fix]).code)


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            lines_of(before),
            lines_of(after),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def overlaps(a: Sequence[Tuple[Tuple[int, int], Tuple[int, int]]], b: Sequence[Tuple[Tuple[int, int], Tuple[int, int]]]) -> bool:
    """Whether two sets of (start, end) ranges overlap anywhere."""
    for a_start, a_end in a:
        for b_start, b_end in b:
            if a_start < b_end and b_start < a_end:
                return True
    return False
