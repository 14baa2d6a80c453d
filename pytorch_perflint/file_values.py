"""``FileContext.value_of``: what a LibCST expression of the linted file holds, asked of the
project's value engine (``project/values.py``).

The engine reads ``ast``, for the linted file as for every other module, so that each
mechanism has one implementation. A LibCST node is mapped to its ``ast`` counterpart by
position: only the top-level statement that holds it is generated (``positions``), its
``ast`` twin is found on the same lines, and the scopes around the node (module, classes,
functions, comprehensions) are built from the ``ast`` tree. A node that cannot be mapped
(a lambda's body: it runs later) is unknown.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from .analysis.ast_index import ast_children
from .analysis.scope import dotted_name
from .analysis.walk import descendants
from .context import FileContext
from .positions import StatementPositions, line_starts, member_positions, paired_statements, statement_lines
from .project.forms import dotted
from .project.index import ProjectIndex
from .project.kinds import UNKNOWN, Kind
from .project.resolution import Definition
from .project.scopes import expression_form
from .project.tree_wheres import TreeWheres
from .project.values import Answer, Where, engine_for

_LINE_ENDS = re.compile(r"\r\n|\r|\n")


class FileValues:
    """The value engine's answers about one linted file (``text``: what LibCST parsed, the
    whole file or its narrowed copy; ``tree``: its ``ast`` tree when the run has it)."""

    def __init__(self, context: FileContext, text: str, tree: Optional[ast.Module] = None) -> None:
        self.context = context
        self.text = text
        self._tree = tree
        self._lines: Optional[List[str]] = None
        self._starts: Optional[Sequence[int]] = None
        self._body_lines: Optional[List[int]] = None  # the line of each statement of ``tree``
        self._statement_index: Dict[int, int] = {}
        self._positions: Dict[int, StatementPositions] = {}  # by statement index
        self._members: Dict[int, Optional[StatementPositions]] = {}  # by id of a class's statement
        self._line_starts: Optional[List[int]] = None
        self._top: Optional[List[Tuple[int, ast.stmt]]] = None  # each top-level statement's first line and ast twin
        self._wheres: Optional[TreeWheres] = None
        self._calls: Dict[int, Dict[int, Optional[Tuple[ast.AST, List[ast.AST]]]]] = {}
        self._callees: Dict[Tuple[int, bool], Optional[Tuple[Definition, ...]]] = {}
        self._path = os.path.abspath(context.path)
        self.engine = engine_for(context.project if context.project is not None else self._lone_index())
        if context.project is not None and self._path.endswith(".ipynb"):  # the index would read its JSON
            context.project.summary(self._path, source=context.source, tree=tree if text == context.source else None)

    def _lone_index(self) -> Optional[ProjectIndex]:
        """A file linted as a project of its own: an index of that one module (its text as
        given), so that its functions' returns and its callers' arguments are followed all the
        same. It is ``lone``: with no caller in the file a parameter is not known (callers
        elsewhere may pass anything), rather than its default."""
        assert self._path is not None
        index = ProjectIndex(os.path.dirname(self._path), files=[self._path])
        index.lone = True
        index.summary(self._path, source=self.context.source, tree=self._tree if self.text == self.context.source else None)
        return index

    @property
    def tree(self) -> Optional[ast.Module]:
        if self._tree is None:
            try:
                self._tree = ast.parse(self.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        return self._tree

    def kind_of(self, node: cst.BaseExpression, statement: Optional[cst.CSTNode] = None) -> Kind:
        return self.answer(node, statement).kind

    def answer(self, node: cst.BaseExpression, statement: Optional[cst.CSTNode] = None) -> Answer:
        """The engine's answer for an expression under the current node of the pass, or
        (``statement``: the top-level statement that holds it) anywhere in the module."""
        placed = self._placed(node, statement)
        if placed is None:
            return Answer(UNKNOWN)
        expression, where, _ = placed
        assert where.scope is not None
        return self.engine.answer(expression_form(expression, where.scope), where)

    def passed(self, node: cst.Name) -> Optional[Tuple[Tuple[str, int, object, Kind], ...]]:
        """What every project caller passes for the parameter ``node`` names where it is read
        (under the current node of the pass): (module, line, argument form, kind) for each
        caller (``ParameterFlow.passed``); None when it is no parameter there, or its callers
        are not all known."""
        placed = self._placed(node)
        scope = None if placed is None else placed[1].scope
        if scope is None or scope.value_at(node.value, placed[2])[0] != "param":  # type: ignore[index]
            return None
        engine = self.engine
        return engine._question(lambda: engine.passed(scope, node.value), scope)

    def import_reaches(self, node: cst.Name, statement: Optional[cst.CSTNode] = None) -> bool:
        """Whether the name ``node`` (under the current node of the pass) still holds the
        import of its scope where it is read, though the scope rebinds it later
        (``Scope.imported_at``); a function may rebind a module's name when it runs
        (``global``), so a read at module level is not answered when one does.
        ``statement``: the top-level statement holding it, when not under the pass's node."""
        placed = self._placed(node, statement)
        scope = None if placed is None else placed[1].scope
        if scope is None or not scope.imported_at(node.value, placed[2]):  # type: ignore[index]
            return False
        return not (scope.module and re.search(rf"\bglobal\b[^\n]*\b{re.escape(node.value)}\b", self.text))

    def callees(self, call: cst.Call, statement: cst.CSTNode, objects: bool = True) -> Optional[Tuple[Definition, ...]]:
        """What ``call`` (under the top-level ``statement``) runs in the project:
        ``call_values.dispatch``'s definitions, None when not known. The first question
        about a statement locates all of its calls at once. ``objects``: as ``dispatch``."""
        if (id(call), objects) in self._callees:
            return self._callees[(id(call), objects)]
        located = self._calls.get(id(statement))
        if located is None:
            calls = [node for node in descendants(statement) if type(node) is cst.Call]
            spans = self._ast_calls(statement)
            located = self._calls[id(statement)] = _paired(calls, spans) or self._locate_all(calls, statement, spans)
        found = located.get(id(call))
        result = None
        if found is not None and isinstance(found[0], ast.Call):
            result = self._wheres_of(found[1][0]).callees(found[0], found[1], objects)  # type: ignore[arg-type]
        self._callees[(id(call), objects)] = result
        return result

    # -- from LibCST to ast ----------------------------------------------------------------
    def _locate(self, node: cst.CSTNode, statement: Optional[cst.CSTNode] = None) -> Optional[Tuple[ast.AST, List[ast.AST]]]:
        """The ``ast`` node at the LibCST node's position, and its ancestors."""
        tree = self.tree
        ancestors = self.context.ancestors
        if statement is None:
            if tree is None or len(ancestors) < 2 and node not in self.context.module.body:
                return None
            statement = ancestors[1] if len(ancestors) > 1 else node
            if len(ancestors) > 3 and type(statement) is cst.ClassDef and ancestors[2] is statement.body:
                positions = self._member_positions_of(statement, ancestors[3])  # a method, not the class
                span = None if positions is None else positions.get(node)
                if span is not None:
                    return self._find(tree, (span.start.line, span.start.column), (span.end.line, span.end.column))
        elif tree is None:
            return None
        positions = self._positions_of(statement)
        span = None if positions is None else positions.get(node)
        if span is None:
            return None
        start = (span.start.line, span.start.column)
        end = (span.end.line, span.end.column)
        return self._find(tree, start, end)

    def _ast_calls(self, statement: cst.CSTNode) -> Dict[Tuple[int, int, int, int], Tuple[ast.AST, List[ast.AST]]]:
        """Every ``ast`` call of the top-level statement by its span (line, character
        column), with its ancestors: one walk for all the statement's calls."""
        tree = self.tree
        index = self._statement_index_of(statement)
        if tree is None or index is None:
            return {}
        first = self._starts[index] + 1  # type: ignore[index]
        last = self._starts[index + 1] if index + 1 < len(self._starts) else float("inf")  # type: ignore[index, arg-type]
        out: Dict[Tuple[int, int, int, int], Tuple[ast.AST, List[ast.AST]]] = {}
        if self._body_lines is None:
            self._body_lines = [s.lineno for s in tree.body]  # in order: a module's statements
        lines = self._body_lines
        body = tree.body[bisect.bisect_left(lines, first) : bisect.bisect_right(lines, last)]
        # One path to the node, copied only for a call (not a list per node walked).
        path: List[ast.AST] = [tree]
        todo: List[Optional[ast.AST]] = list(body)
        while todo:
            node = todo.pop()
            if node is None:
                path.pop()
                continue
            if type(node) is ast.Call:
                key = (node.lineno, self._column(node.lineno, node.col_offset), node.end_lineno, self._column(node.end_lineno, node.end_col_offset))  # type: ignore[arg-type]
                out[key] = (node, path.copy())  # type: ignore[index]
            children = ast_children(node)
            if children:
                path.append(node)
                todo.append(None)
                todo.extend(children)
        return out

    def _locate_all(
        self, nodes: Sequence[cst.CSTNode], statement: cst.CSTNode, spans: Optional[Dict[Tuple[int, int, int, int], Tuple[ast.AST, List[ast.AST]]]] = None
    ) -> Dict[int, Optional[Tuple[ast.AST, List[ast.AST]]]]:
        tree = self.tree
        out: Dict[int, Optional[Tuple[ast.AST, List[ast.AST]]]] = {id(node): None for node in nodes}
        positions = self._positions_of(statement)
        if tree is None or positions is None:
            return out
        for node in nodes:
            span = positions.get(node)
            if span is not None:
                exact = (spans or {}).get((span.start.line, span.start.column, span.end.line, span.end.column))
                out[id(node)] = exact or self._find(tree, (span.start.line, span.start.column), (span.end.line, span.end.column))
        return out

    def _statement_index_of(self, statement: cst.CSTNode) -> Optional[int]:
        """The index of a top-level statement whose first line is known (``_starts``)."""
        tree = self.tree
        index = None if tree is None else self._index_of(statement)
        if self._starts is None and tree is not None:
            self._starts = statement_lines(self.context.module, tree) or ()
        return None if index is None or index >= len(self._starts or ()) else index

    def _positions_of(self, statement: cst.CSTNode) -> Optional[StatementPositions]:
        """The node ranges of a top-level statement, generated once for every question."""
        index = self._statement_index_of(statement)
        if index is None:
            return None
        positions = self._positions.get(index)
        if positions is None:
            positions = self._positions[index] = StatementPositions(self.context.module, index, self._starts[index])  # type: ignore[index]
        return positions

    def _member_positions_of(self, klass: cst.ClassDef, member: cst.CSTNode) -> Optional[StatementPositions]:
        """The node ranges of one statement of a top-level class's body, generated alone
        (``positions.member_positions``); None when it cannot be placed with certainty."""
        if id(member) not in self._members:
            index = self._statement_index_of(klass)
            found = None
            tree = self.tree
            if index is not None and tree is not None:
                if self._line_starts is None:
                    self._top = paired_statements(self.context.module.body, tree.body)
                    self._line_starts = line_starts(self.text)
                if self._top is not None:
                    found = member_positions(self.context.module, self.text, self._line_starts, klass, self._top[index][1], member)
            self._members[id(member)] = found
        return self._members[id(member)]

    def _index_of(self, statement: cst.CSTNode) -> Optional[int]:
        if not self._statement_index:
            self._statement_index = {id(s): i for i, s in enumerate(self.context.module.body)}
        return self._statement_index.get(id(statement))

    def _column(self, line: int, offset: int) -> int:
        """A character column from ``ast``'s byte offset, as LibCST counts it. Lines end at
        line feeds and carriage returns only (``str.splitlines`` also splits at a form
        feed), and LibCST does not count form feeds that stand right before a line's code."""
        if self._lines is None:
            self._lines = _LINE_ENDS.split(self.text)
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        column = offset if text.isascii() else len(text.encode("utf-8")[:offset].decode("utf-8", "ignore"))
        if text.startswith("\x0c"):
            feeds = len(text) - len(text.lstrip("\x0c"))
            if text[feeds : feeds + 1] not in (" ", "\t") and column >= feeds:
                column -= feeds  # LibCST does not count form feeds right before code
        return column

    def _find(self, tree: ast.Module, start: Tuple[int, int], end: Tuple[int, int]) -> Optional[Tuple[ast.AST, List[ast.AST]]]:
        body = tree.body
        firsts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) for s in body]
        position = bisect.bisect_right(firsts, start[0]) - 1
        if position < 0:
            return None
        best: Optional[Tuple[ast.AST, List[ast.AST]]] = None
        stack: List[Tuple[ast.AST, List[ast.AST]]] = [(s, [tree]) for s, first in zip(body[position:], firsts[position:]) if first <= end[0]]
        while stack:
            node, chain = stack.pop()
            if not isinstance(node, ast.expr) or not hasattr(node, "end_lineno"):
                inner = [*chain, node]
                stack.extend((child, inner) for child in ast.iter_child_nodes(node))
                continue
            first = (node.lineno, self._column(node.lineno, node.col_offset))
            last = (node.end_lineno, self._column(node.end_lineno, node.end_col_offset))  # type: ignore[arg-type]
            if first == start and last == end:
                return node, chain
            if start <= first and last <= end and (best is None or _span(best[0]) < _span(node)):
                best = (node, chain)  # inside parentheses LibCST counts
            if first <= start and end <= last:
                inner = [*chain, node]
                stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        return best

    # -- scopes ----------------------------------------------------------------------------
    def _placed(self, node: cst.CSTNode, statement: Optional[cst.CSTNode] = None) -> Optional[Tuple[ast.AST, Where, int]]:
        """The ``ast`` expression at the LibCST node, the scopes around it and the line it is
        read at: its statement's first line (a name in `z = (\n z.cuda())` is the one bound
        before). None when it cannot be placed."""
        found = self._locate(node, statement)
        if found is None:
            return None
        expression, chain = found
        line = next((n.lineno for n in reversed(chain) if isinstance(n, ast.stmt)), getattr(expression, "lineno", 0))
        where = self._where([*chain, expression], line)
        return None if where is None else (expression, where, line)

    def _where(self, chain: List[ast.AST], line: int) -> Optional[Where]:
        """The scopes around an expression (``tree_wheres.TreeWheres``, one per tree)."""
        return self._wheres_of(chain[0]).where(chain, line)

    def _wheres_of(self, tree: ast.AST) -> TreeWheres:
        if self._wheres is None or self._wheres.tree is not tree:
            self._wheres = TreeWheres.of(self._path, tree, self.engine)  # type: ignore[arg-type]
        return self._wheres


def _paired(calls: Sequence[cst.Call], spans: Dict[Tuple[int, int, int, int], Tuple[ast.AST, List[ast.AST]]]) -> Optional[Dict[int, Optional[Tuple[ast.AST, List[ast.AST]]]]]:
    """The statement's LibCST calls (in source order) paired with its ``ast`` calls sorted by
    position (outer before inner), without generating code; None when the two do not
    agree call for call (then positions decide)."""
    ordered = [spans[key] for key in sorted(spans, key=lambda k: (k[0], k[1], -k[2], -k[3]))]
    if len(ordered) != len(calls):
        return None
    out: Dict[int, Optional[Tuple[ast.AST, List[ast.AST]]]] = {}
    for call, found in zip(calls, ordered):
        spelled = dotted_name(call.func) if isinstance(call.func, (cst.Name, cst.Attribute)) else None
        if spelled != dotted(found[0].func):  # type: ignore[attr-defined]
            return None
        out[id(call)] = found
    return out


def _span(node: ast.AST) -> Tuple[int, int]:
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)  # type: ignore[operator]
