"""Could a step function of this module be a loop body that syncs (TPF202)? Its project
screen's second half, on the ``ast`` tree before LibCST parses the file.

TPF202 reports a sync in a loop of the module only when some loop of it trains
(``loop_training.loops_may_train``), and a sync in a function only when that function is a
step function of ``training_facts`` (a module-level function or a method of a module-level
class), holds the sync in its own lines, and is a loop body (``loop_bodies``: the project calls
it from loops, none of those calls plainly once per iteration, or a step function that is
one calls it on every call). Here each such function is
over-approximated: some call in its body looks like a sync (a method of
``host_syncs.is_sync_call``'s names, ``float``/``int``/``bool``/``print``/
``synchronize``, text formatted with ``%`` or an f-string, a function of this module
that calls such a method); its body may train as ``training_facts`` sees it (the same
walk as ``loops_may_train``, started from the function); and its loop call sites are the
rule's own question, asked the same way. Without such a function and without a loop that
may train, TPF202 cannot report the file, whose LibCST parse is then spared.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Iterator, List, Set, Tuple, Union

from ...analysis.ast_index import ast_children, per_tree
from ...project.values import ValueEngine
from .loop_bodies import is_loop_body
from .loop_training import frames_may_train

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# ``_sync_kind``'s methods (``host_syncs.is_sync_call`` and ``.numpy(force=True)``).
_SYNC_METHODS = frozenset({"item", "cpu", "tolist", "numpy", "to", "synchronize"})
# ``_sync_kind``'s plain calls: ``synchronize()``, conversions of a tensor, ``print``.
_SYNC_NAMES = frozenset({"synchronize", "float", "int", "bool", "print"})


def step_bodies_may_sync(engine: ValueEngine, path: str, tree: ast.Module) -> bool:
    """Some step function here may hold a sync that TPF202 reports in it (see the module's
    docstring): False only when none can."""
    index = engine.index
    if index is None:
        return True
    for name, function, chain in _candidates(tree):
        if not _may_sync(function, tree):
            continue
        if not frames_may_train(engine, path, tree, [(function, chain)]):
            continue
        definition = index.resolve(path, name)
        if definition is None or definition.kind not in ("function", "method"):
            continue
        if is_loop_body(engine, definition):
            return True
    return False


def _candidates(tree: ast.Module) -> Iterator[Tuple[str, Function, List[ast.AST]]]:
    """Module-level functions and the methods of module-level classes (the functions
    TPF202's ``_owner`` names), each with its dotted name and ancestors."""
    for statement in tree.body:
        if isinstance(statement, _DEFS):
            yield statement.name, statement, [tree]
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, _DEFS):
                    yield f"{statement.name}.{member.name}", member, [tree, statement]


@per_tree
def _syncing_helpers(tree: ast.Module) -> FrozenSet[str]:
    """Names of the functions here (any depth) with a sync method in their body, nested
    functions' included: what ``training_facts.sync_helpers`` may hold, by name (one walk)."""
    out: Set[str] = set()
    todo: List[Tuple[ast.AST, Tuple[str, ...]]] = [(tree, ())]
    while todo:
        node, around = todo.pop()
        if isinstance(node, _DEFS):
            around = (*around, node.name)
        elif type(node) is ast.Call and around and _sync_method(node):  # type: ignore[arg-type]
            out.update(around)
        todo.extend((child, around) for child in ast_children(node))
    return frozenset(out)


def _may_sync(function: Function, tree: ast.Module) -> bool:
    """A call that may be a sync TPF202 reports in the function itself: in its own frame
    (no loop, nested function, lambda or class around it), under no guard
    (``guards.guarded_between`` without loop names), and not after a compound statement
    that may return or raise (``_exits_early``)."""
    for node in (*function.decorator_list, function.args, *([function.returns] if function.returns else [])):
        if any(_sync_like(call, tree) for call in _unguarded_calls(node)):
            return True
    for statement in function.body:
        if any(_sync_like(call, tree) for call in _unguarded_calls(statement)):
            return True
        if isinstance(statement, _COMPOUND) and _returns_or_raises(statement):
            return False  # what follows runs only when the function did not leave early
    return False


_COMPOUND = tuple(
    getattr(ast, name)
    for name in ("If", "For", "AsyncFor", "While", "Try", "TryStar", "With", "AsyncWith", "Match")
    if hasattr(ast, name)
)
_FRAMES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NOT_OWN = (*_FRAMES, ast.For, ast.AsyncFor, ast.While)


def _returns_or_raises(statement: ast.AST) -> bool:
    todo = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Return, ast.Raise)):
            return True
        todo.extend(child for child in ast_children(node) if not isinstance(child, _FRAMES))
    return False


def _unguarded_calls(root: ast.AST) -> Iterator[ast.Call]:
    """The calls under ``root`` that ``_check_step_body`` may report: not inside a loop, a
    nested frame, or a branch ``guarded_between`` calls conditional."""
    todo: List[ast.AST] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, _NOT_OWN):
            continue
        if type(node) is ast.Call:
            yield node  # type: ignore[misc]
        if isinstance(node, ast.If) and not _is_main_guard(node):
            todo.append(node.test)
        elif isinstance(node, ast.IfExp):
            todo.append(node.test)
        elif isinstance(node, ast.BoolOp):
            todo.append(node.values[0])
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            todo.extend([*node.body, *node.orelse, *node.finalbody])  # type: ignore[attr-defined]
        elif type(node).__name__ == "Match":
            todo.append(node.subject)  # type: ignore[attr-defined]
        else:
            todo.extend(ast_children(node))


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _sync_like(call: ast.Call, tree: ast.Module) -> bool:
    """``_sync_kind`` may name the call (wider: any receiver, any helper spelled so)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr in _SYNC_METHODS or func.attr in _syncing_helpers(tree):
            return True
    elif isinstance(func, ast.Name) and (func.id in _SYNC_NAMES or func.id in _syncing_helpers(tree)):
        return True
    return any(_formats(value) for value in (*call.args, *(k.value for k in call.keywords)))


def _sync_method(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in _SYNC_METHODS) or (
        isinstance(func, ast.Name) and func.id == "synchronize"
    )


def _formats(value: ast.AST) -> bool:
    """``sync_forms.formats`` on ``ast``, wider: any f-string, ``%`` or ``.format(...)``."""
    return isinstance(value, ast.JoinedStr) or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod)) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format"
    )


def _calls(root: ast.AST) -> Iterator[ast.Call]:
    todo: List[ast.AST] = [root]
    while todo:
        node = todo.pop()
        if type(node) is ast.Call:
            yield node  # type: ignore[misc]
        todo.extend(ast_children(node))

