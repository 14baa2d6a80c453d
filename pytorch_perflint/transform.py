"""Applying tree-form fixes to a parsed module, and turning them into text edits.

Fixes are applied on the tree, not as text, so LibCST keeps indentation, comments and
parentheses right (wrapping a loop in ``with torch.no_grad():`` re-indents its body).
"""

from __future__ import annotations

import difflib
import re
from typing import Dict, Iterable, List, Sequence, Tuple

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .rule import NodeFix, Replacement
from .types import Edit, Location

# A line ends at \r\n, \r or \n, as LibCST and editors count (str.splitlines also breaks at
# form feeds, \x1c and \u2028, which would shift every row after them).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


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


def text_edits(before: str, after: str) -> Tuple[Edit, ...]:
    """Line-granular edits that turn ``before`` into ``after``."""
    old = _LINE.findall(before)
    new = _LINE.findall(after)
    edits: List[Edit] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            Edit(
                content="".join(new[j1:j2]),
                location=Location(i1 + 1, 1),
                end_location=Location(i2 + 1, 1),
            )
        )
    return tuple(edits)


def fix_edits(module: cst.Module, fix: NodeFix) -> Tuple[Edit, ...]:
    """The text edits of one fix on its own."""
    return text_edits(module.code, apply_fixes(module, [fix]).code)


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
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
