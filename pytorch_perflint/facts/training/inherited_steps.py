"""A training step whose loop is in a base class (TPF206).

A trainer subclass overrides the step method (``_train_step(self, batch)``) that a project
base class calls on every batch of its own epoch loop (``for batch in self.loader:
loss = self._train_step(batch)``). A statement of the override that runs on every call
runs on every iteration of the inherited loop, which this module never shows. The call in
the base's loop dispatches to every override, most of which do not empty the cache, so
the statement is the place to report.

``inherited_step(context, ancestors)``: the node stands in a method's own statements on
every call (nothing but ``with`` blocks between them, no ``return`` before it), the method
trains (a backward call in its own statements, none inside a loop of its own: a method
that backpropagates per item of a loop trains many steps per call), and a project base of its class (not
the class itself) calls ``self.<method>(...)`` on every iteration of a loop in one of its
methods. Read with ``ast`` from the base's module (``index.text_naming``: only modules that
spell the method's name are read).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from ...analysis.walk import own_returns, child_nodes
from ...project.bodies import locate
from .classifiers import is_backward_call

if TYPE_CHECKING:
    from ...context import FileContext

_PASS_THROUGH = (cst.Expr, cst.SimpleStatementLine, cst.IndentedBlock, cst.With, cst.Call, cst.Attribute, cst.Arg)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def inherited_step(context: "FileContext", ancestors: Sequence[cst.CSTNode]) -> bool:
    """The node (whose ancestors are given) runs on every step of a loop that a project
    base class of its method's class runs."""
    method = _method(ancestors)
    if method is None:
        return False
    function, klass, statement = method
    if not _before_any_return(function, statement) or not _trains_without_loops(context, function):
        return False
    index = context.project
    if index is None:
        return False
    owner = index.resolve(str(context.path), klass.name.value)
    if owner is None or owner.kind != "class":
        return False
    name = function.name.value
    return any(_loops_call(index, base, name) for base in index.resolution.lineage(owner)[1:])


def _method(ancestors: Sequence[cst.CSTNode]):
    """(the method, its class, the method's own statement holding the node) when only
    statements that run on every call stand between them (``with`` blocks)."""
    statement: Optional[cst.CSTNode] = None
    for index in range(len(ancestors) - 1, 0, -1):
        node = ancestors[index]
        if isinstance(node, cst.FunctionDef):
            parent = ancestors[index - 2] if index >= 2 else None  # FunctionDef <- IndentedBlock <- ClassDef
            if statement is None or not isinstance(parent, cst.ClassDef) or node.asynchronous is not None:
                return None
            return node, parent, statement
        if not isinstance(node, _PASS_THROUGH):
            return None
        if isinstance(node, (cst.SimpleStatementLine, cst.With)):
            statement = node
    return None


def _before_any_return(function: cst.FunctionDef, statement: cst.CSTNode) -> bool:
    """No ``return`` in the method's statements before the one holding the node."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for each in body.body:
        if each is statement:
            return True
        if any(own_returns(each)):
            return False
    return False


def _trains_without_loops(context: "FileContext", function: cst.FunctionDef) -> bool:
    """A backward call in the method's own statements outside its loops, and none inside
    one (a method that backpropagates per item of a loop trains many steps per call)."""
    found = False
    stack: list = [(function.body, False)]
    while stack:
        node, looped = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        looped = looped or isinstance(node, (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
        if isinstance(node, cst.Call) and is_backward_call(node, context.qualname):
            if looped:
                return False
            found = True
        stack.extend((child, looped) for child in child_nodes(node))
    return found


def _loops_call(index, base, name: str) -> bool:
    """A method of ``base`` calls ``self.<name>(...)`` on every iteration of one of its loops."""
    if base.klass is None or base.path is None:
        return False
    text = index.text_naming(base.path, name)
    if text is None:
        return False
    for method in base.klass.methods:
        node = locate(text, method.line, method.end_line, method.name, False)
        for loop in ast.walk(node) if node is not None else ():
            if isinstance(loop, _LOOPS) and any(_calls_every_time(s, name) for s in loop.body):
                return True
    return False


def _calls_every_time(statement: ast.stmt, name: str) -> bool:
    """The statement (or a ``with`` block of it) calls ``self.<name>(...)``."""
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return any(_calls_every_time(s, name) for s in statement.body)
    if isinstance(statement, (*_SCOPES, *_LOOPS, ast.If, ast.Try)):
        return False
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
        for node in ast.walk(statement)
    )

