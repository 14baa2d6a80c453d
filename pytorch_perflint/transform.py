"""Applying tree-form fixes to a parsed module, and turning them into text edits.

Fixes are applied on the tree, not as text, so LibCST keeps indentation, comments and
parentheses right (wrapping a loop in ``with torch.no_grad():`` re-indents its body).
"""

from __future__ import annotations

import ast
import bisect
import difflib
import re
from dataclasses import dataclass
from typing import AbstractSet, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from .analysis.walk import child_nodes
from .positions import statement_lines
from .finding import NodeFix, Replacement
from .types import Edit, Location

_NEWLINE = re.compile(r"\r\n?|\n")  # what LibCST (and Python) count as a line break


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
        # Imported here: ``libcst.codemod`` pulls in ``libcst.matchers``, a third of a
        # second of start-up for every run, and only a fix that adds an import needs it.
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

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


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def mixed_line_endings(source: str) -> bool:
    """Whether the text ends its lines in more than one way (``\r\n`` and ``\n``, say)."""
    return "\r" in source and len({match.group() for match in _NEWLINE.finditer(source)}) > 1


def keep_line_endings(source: str, updated: str) -> str:
    """``updated`` with each line ending as its own line in ``source`` did.

    LibCST writes the line breaks it makes (and, in a tree spliced from separately parsed
    statements, some it read) with the module's newline, which it takes from the first
    line: in a file that mixes ``\r\n`` and ``\n`` a fix would turn the endings of its
    lines into the first line's. Lines compared by their text alone: an unchanged line
    keeps its ending, the lines that replace a run of lines ending alike end like them,
    and inserted lines end like the line before them. (Python reads ``\r\n`` inside a
    string literal as ``\n``, so no value changes.)
    """
    old, new = lines_of(source), lines_of(updated)
    old_text = [line.rstrip("\r\n") for line in old]
    new_text = [line.rstrip("\r\n") for line in new]
    out = list(new)

    def put(j: int, ending: str) -> None:
        if ending and _ending(new[j]):  # a last line without a line break stays without
            out[j] = new_text[j] + ending

    matcher = difflib.SequenceMatcher(a=old_text, b=new_text, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                put(j1 + k, _ending(old[i1 + k]))
            continue
        if i1 == i2:
            endings = {_ending(old[i1 - 1])} if i1 else {_ending(old[0])} if old else set()
        else:
            endings = {_ending(line) for line in old[i1:i2]} - {""}
        if len(endings) == 1:
            (ending,) = endings
            for j in range(j1, j2):
                put(j, ending)
    return "".join(out)


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


# ----------------------------------------------------------------------------------------
# Fixing a large file fast: only the statements the fixes touch are rebuilt and rendered.


class _PathReplace(cst.CSTTransformer):
    """``_Replace`` that descends only along the paths to the replaced nodes: LibCST's
    ``visit`` rebuilds every node it enters, which on a whole module costs more than
    parsing it."""

    def __init__(self, replacements: Dict[int, Replacement], on_path: Set[int]) -> None:
        super().__init__()
        self.replacements = replacements
        self.on_path = on_path
        self.done = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.on_path

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.replacements.get(id(original_node))
        if replacement is None:
            return updated_node
        self.done += 1
        return replacement


def _paths(statement: cst.CSTNode, targets: Set[int]) -> Optional[Set[int]]:
    """The ids of the nodes from ``statement`` down to each target (targets excluded), or
    None if a target is not under ``statement``."""
    parent: Dict[int, int] = {}
    found: List[int] = []
    stack = [statement]
    while stack:
        node = stack.pop()
        if id(node) in targets:
            found.append(id(node))
            continue  # replaced whole: nothing under it matters
        for child in child_nodes(node):
            parent[id(child)] = id(node)
            stack.append(child)
    if len(found) != len(targets):
        return None
    on_path: Set[int] = set()
    for target in found:
        current = parent.get(target)
        while current is not None and current not in on_path:
            on_path.add(current)
            current = parent.get(current)
    return on_path


@dataclass(frozen=True)
class Spliced:
    """The fixed text, and each statement it rebuilt: (its first row in the old text, its
    old text, its new text), so that a check of what changed can look at those alone."""

    text: str
    pieces: Tuple[Tuple[int, str, str], ...]
    # The LibCST tree of ``text``: the old module with the rebuilt statements as LibCST
    # parsed them (None when that cannot be had with certainty: parse ``text``).
    module: Optional[cst.Module] = None


def splice_fixes(
    module: cst.Module,
    source: str,
    tree: ast.Module,
    fixes: Sequence[Tuple[NodeFix, Sequence[int]]],
) -> Optional[Spliced]:
    """``apply_fixes(module, ...).code`` made without rebuilding or rendering the module:
    each top-level statement holding a replaced node is rebuilt along the paths to those
    nodes, rendered, checked to parse on its own, and put in place of its text in
    ``source``. ``fixes`` pairs each fix with the 1-based lines its replaced nodes start on.

    None when this cannot be done with certainty (an import to add, a statement whose text
    is not where Python's ``ast`` says, a node not found): the caller then applies the fixes
    to the whole module.
    """
    if any(fix.imports for fix, _ in fixes) or not module.body:
        return None
    mixed = mixed_line_endings(source)
    starts = statement_lines(module, tree)
    if starts is None:
        return None
    line_offsets = [0, *(match.end() for match in _NEWLINE.finditer(source))]
    targets: Dict[int, Set[int]] = {}
    replacements: Dict[int, Replacement] = {}
    for fix, lines in fixes:
        for (old, new), line in zip(fix.replacements, lines):
            index = bisect.bisect_right(starts, line - 1) - 1
            if index < 0:
                return None
            targets.setdefault(index, set()).add(id(old))
            replacements[id(old)] = new
    pieces: List[str] = []
    rebuilt: List[Tuple[int, str, str]] = []
    replaced: Dict[int, Sequence[cst.BaseStatement]] = {}
    try:
        config: Optional[cst.PartialParserConfig] = module.config_for_parsing
    except ValueError:  # an indentation LibCST's config refuses (form feeds): no reuse
        config = None
    reusable = config is not None
    at = 0
    for index in sorted(targets):
        statement = module.body[index]
        original = module.code_for_node(statement)
        start = line_offsets[starts[index]]
        end = line_offsets[starts[index + 1]] if index + 1 < len(starts) else start + len(original)
        if source[start:end] != original:
            return None  # e.g. the last statement of a file without a final newline
        if id(statement) in targets[index]:
            new_nodes = _as_nodes(replacements[id(statement)])
        else:
            on_path = _paths(statement, targets[index])
            if on_path is None:
                return None
            visitor = _PathReplace(replacements, on_path)
            new_nodes = _as_nodes(statement.visit(visitor))
            if visitor.done != len(targets[index]):
                return None
        text = "".join(module.code_for_node(node) for node in new_nodes)
        if mixed and keep_line_endings(original, text) != text:
            return None  # a line break LibCST wrote as the module's: the whole text decides
        try:
            # The rebuilt statements re-parse on their own, as the module would parse them.
            reparsed = cst.parse_module(text, config) if config is not None else cst.parse_module(text)
        except Exception:  # noqa: BLE001 - any failure: let the whole-module path decide
            return None
        statements = list(reparsed.body)
        if reparsed.header and statements:
            # Alone, the statement's leading blank and comment lines parse as the module's
            # header; in the module they are the statement's own.
            first = statements[0]
            statements[0] = first.with_changes(leading_lines=[*reparsed.header, *first.leading_lines])
        elif reparsed.header:
            reusable = False
        if reparsed.footer:
            reusable = False  # trailing lines: where they belong, only the whole parse says
        if (reparsed.default_newline, reparsed.default_indent) != (module.default_newline, module.default_indent):
            # A line break or indentation written as "the default" means another one in
            # the module (LibCST detects both from the text it parses, not the config).
            reusable = False
        replaced[index] = statements
        pieces += [source[at:start], text]
        rebuilt.append((starts[index] + 1, original, text))
        at = end
    pieces.append(source[at:])
    new_module = None
    if reusable:
        body = [new for index, old in enumerate(module.body) for new in replaced.get(index, (old,))]
        new_module = module.with_changes(body=body)
    return Spliced("".join(pieces), tuple(rebuilt), new_module)


def _as_nodes(result) -> List[cst.CSTNode]:
    if isinstance(result, cst.RemovalSentinel):
        return []
    if isinstance(result, cst.FlattenSentinel):
        return list(result.nodes)
    return [result]


def merge_keyword_additions(old: cst.CSTNode, first: Replacement, second: Replacement) -> Optional[cst.Call]:
    """One call with both fixes' keyword arguments, when two fixes each only add keyword
    arguments (with different names) to the same call, as ``with_keywords`` writes them:
    ``DataLoader(ds)`` -> ``num_workers=4`` (TPF101) and ``pin_memory=True`` (TPF102).
    The result is what applying them one after the other gives, without the second lint
    and render that would take on a large file. None when they do anything else."""
    from .analysis.call_edits import with_keywords

    if not (type(old) is cst.Call and type(first) is cst.Call and type(second) is cst.Call):
        return None
    added: List[cst.Arg] = []
    names = {arg.keyword.value for arg in old.args if arg.keyword is not None}
    for new in (first, second):
        if len(new.args) <= len(old.args) or not new.with_changes(args=old.args).deep_equals(old):
            return None
        for before, after in zip(old.args, new.args):
            if not (after.value.deep_equals(before.value) and _same_keyword(before, after) and after.star == before.star):
                return None
        for arg in new.args[len(old.args) :]:
            if arg.keyword is None or arg.star or arg.keyword.value in names:
                return None
            names.add(arg.keyword.value)
            added.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")))
    return with_keywords(old, added)


def _same_keyword(a: cst.Arg, b: cst.Arg) -> bool:
    if a.keyword is None or b.keyword is None:
        return a.keyword is None and b.keyword is None
    return a.keyword.value == b.keyword.value
