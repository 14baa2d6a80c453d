"""Whether a module is an entry script, and global settings inserted at its top (TPF403, TPF603).

Settings such as `torch.backends.cudnn.benchmark` or the float32 matmul precision are global:
they belong at the start of the script that runs the training, after its imports, never in
a library module or a constructor. This module says whether a file is such a script, where
the setting goes, and builds the inserted statement.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.values import literal_value
from ...analysis.walk import child_nodes, descendants
from ...context import FileContext
from ...finding import Replacement
from ..training.loops import training_facts


def training_receivers(context: FileContext) -> Optional[Set[str]]:
    """Names called inside training loops; None when the module has no training loop."""
    facts = context.fact(training_facts)
    if not facts.has_training_loop:
        return None
    called: Set[str] = set()
    for loop in facts.training_loops:
        for node in descendants(loop.node):
            if isinstance(node, cst.Call):
                name = dotted_name(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
                if name is not None:
                    called.add(name)
    return called




def is_entry_script(context: FileContext, build_at_module_level: bool) -> bool:
    """A script, not a library module: it has an ``if __name__ == "__main__":`` block, or
    builds the model, trains or calls one of its own functions at module level."""
    if build_at_module_level:
        return True
    if any(loop.function is None for loop in context.fact(training_facts).training_loops):
        return True
    defined = {s.name.value for s in context.module.body if type(s) is cst.FunctionDef}
    for statement in context.module.body:
        if type(statement) is cst.If and _is_main_guard(statement.test):
            return True
        if type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                call = small.value if type(small) is cst.Expr else None
                if type(call) is cst.Call and type(call.func) is cst.Name and call.func.value in defined:
                    return True  # `main()` run bare at the bottom of a script
    return False


def insert_after_imports(
    context: FileContext, template: str
) -> Optional[Tuple[List[Tuple[cst.CSTNode, Replacement]], Tuple[str, ...]]]:
    """The replacements that put ``template`` (a statement with ``{torch}`` for the name
    torch goes by) at the top of the module, after its docstring and leading imports, and
    the imports that needs; None when ``torch`` cannot be named at module level."""
    point = _insertion_point(context)
    if point is None:
        return None
    index, torch, imports = point
    module = context.module
    statement = cst.parse_statement(template.format(torch=torch))
    assert isinstance(statement, cst.SimpleStatementLine)
    if index == 0:
        first = module.body[0]
        replacement = cst.FlattenSentinel(
            [statement.with_changes(leading_lines=first.leading_lines), first.with_changes(leading_lines=(cst.EmptyLine(),))]
        )
        return [(first, replacement)], imports
    anchor = module.body[index - 1]
    return [(anchor, cst.FlattenSentinel([anchor, statement.with_changes(leading_lines=(cst.EmptyLine(),))]))], imports


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if type(target.operator) is not cst.Equal:
        return False
    sides = {type(test.left), type(target.comparator)}
    values = {literal_value(test.left), literal_value(target.comparator)}
    names = {n.value for n in (test.left, target.comparator) if type(n) is cst.Name}
    return sides == {cst.Name, cst.SimpleString} and "__main__" in values and names == {"__name__"}


def _insertion_point(context: FileContext) -> Optional[Tuple[int, str, Tuple[str, ...]]]:
    """Where the setting goes (an index into the module body: after the docstring, the
    leading imports and the statement that imports the ``torch`` name it uses), that name,
    and the imports to add. None when ``torch`` cannot be named at module level."""
    body = context.module.body
    start = 1 if body and _is_docstring(body[0]) else 0
    module_scope = context.module_scope
    for name, target in module_scope.imports.items():
        if target != "torch" or module_scope.lookup_import(name) != "torch":
            continue
        for position, statement in enumerate(body):
            if _binds_import(statement, name):
                return _after_imports(body, max(start, position + 1)), name, ()
    if "torch" in module_scope.bindings or "torch" in module_scope.imports or "torch" in module_scope.declared_outer:
        return None
    return _after_imports(body, start), "torch", ("torch",)


def _after_imports(body: Sequence[cst.BaseStatement], index: int) -> int:
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    return index


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return type(statement) is cst.SimpleStatementLine and all(
        type(small) in (cst.Import, cst.ImportFrom) for small in statement.body
    )


def _binds_import(statement: cst.BaseStatement, name: str) -> bool:
    """Whether a module-level statement (or a block in it that is not a def or class)
    imports ``name`` (``import torch``, ``import torch as th``, inside ``try:`` too)."""
    stack: List[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        stack.extend(child_nodes(node))
        if type(node) is cst.Import:
            for alias in node.names:
                bound = alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name else dotted_name(alias.name)
                if bound is not None and bound.split(".")[0] == name:
                    return True
    return False
