"""Find the few ``ast`` nodes worth looking at without walking the whole tree.

A full ``ast.walk`` costs about half of what ``ast.parse`` does, far over the project
layer's budget. The facts a summary needs sit on lines that spell a known word (``cuda``,
``backward``, a project function's name), so ``str.find`` (C speed) names the lines, and the
descent enters only the nodes whose line range holds one of them. Words in comments or
strings only cost a useless descent: the node checks decide.
"""

from __future__ import annotations

import ast
import bisect
from typing import Iterable, Iterator, List, Sequence, Tuple

# Leaf nodes without positions (``Load()``, ``Add()``): never worth a visit.
_LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def line_text(source: str) -> str:
    """``source`` with ``\\r\\n`` and lone ``\\r`` as ``\\n``, so that counting ``\\n`` gives
    the line numbers ``ast`` uses."""
    if "\r" not in source:
        return source
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _lines_of(text: str, offsets: List[int]) -> List[int]:
    """1-based line numbers of sorted character offsets."""
    lines = []
    line, last = 1, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        last = offset
        lines.append(line)
    return lines


def lines_with(text: str, needles: Iterable[str], whole_word: bool = False, first_word: bool = False) -> List[int]:
    """Sorted, distinct line numbers where any needle occurs (``text`` from ``line_text``).
    ``whole_word``: the needle must not be part of a longer identifier, nor follow a dot;
    ``first_word``: only blanks may come before it on its line (``import`` statements)."""
    offsets = []
    for needle in needles:
        if not needle:
            continue
        start = text.find(needle)
        while start != -1:
            end = start + len(needle)
            if (
                not whole_word
                or (
                    (start == 0 or (text[start - 1] not in _IDENT_CHARS and text[start - 1] != "."))
                    and (end == len(text) or text[end] not in _IDENT_CHARS)
                )
            ) and (not first_word or not text[text.rfind("\n", 0, start) + 1 : start].strip()):
                offsets.append(start)
            start = text.find(needle, end)
    offsets.sort()
    return sorted(set(_lines_of(text, offsets)))


def spans_line(node: ast.AST, lines: Sequence[int]) -> bool:
    """Whether one of the sorted ``lines`` falls in ``node``'s line range (nodes without
    positions always pass)."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    last = getattr(node, "end_lineno", None) or first
    index = bisect.bisect_left(lines, first)
    return index < len(lines) and lines[index] <= last


def _statements_on(body: Sequence[ast.stmt], lines: Sequence[int], first: int, last: int) -> List[ast.stmt]:
    """The statements of a body (sorted by line) that hold one of ``lines[first:last]``:
    a binary search per line instead of a look at every statement."""
    found: List[ast.stmt] = []
    for line in lines[first:last]:
        low, high = 0, len(body)
        while low < high:  # the last statement starting at or before ``line``
            middle = (low + high) // 2
            if body[middle].lineno <= line:
                low = middle + 1
            else:
                high = middle
        if low:
            stmt = body[low - 1]
            if (stmt.end_lineno or stmt.lineno) >= line and (not found or found[-1] is not stmt):
                found.append(stmt)
    return found


def nodes_on_lines(root: ast.AST, lines: Sequence[int]) -> Iterator[Tuple[ast.AST, Tuple[ast.AST, ...]]]:
    """Every node under ``root`` whose range holds one of ``lines``, with its ancestors
    (outermost first, ``root`` included), in source order. Iterative: deep trees are fine."""
    if not lines:
        return
    bisect_left = bisect.bisect_left
    bisect_right = bisect.bisect_right
    count = len(lines)
    stack: List[Tuple[ast.AST, Tuple[ast.AST, ...]]] = [(root, ())]
    while stack:
        node, ancestors = stack.pop()
        if node is not root:
            yield node, ancestors
        chain = (*ancestors, node)
        children: List[Tuple[ast.AST, Tuple[ast.AST, ...]]] = []
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                if value and isinstance(value[0], ast.stmt):
                    start = getattr(node, "lineno", 0)
                    end = getattr(node, "end_lineno", None) or lines[-1]
                    first, last = bisect_left(lines, start), bisect_right(lines, end)
                    children.extend((stmt, chain) for stmt in _statements_on(value, lines, first, last))
                    continue
                items = value
            elif isinstance(value, ast.AST):
                items = [value]
            else:
                continue
            for child in items:
                if not isinstance(child, ast.AST) or isinstance(child, _LEAVES):
                    continue
                begin = getattr(child, "lineno", None)
                if begin is not None:
                    index = bisect_left(lines, begin)
                    if index == count or lines[index] > (child.end_lineno or begin):  # type: ignore[attr-defined]
                        continue
                children.append((child, chain))
        children.reverse()
        stack.extend(children)
