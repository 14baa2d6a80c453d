"""Could a loop call a step function of another module? The name screens of the training
rules (TPF202, TPF205, TPF403): a call, in a loop, of a function or method named like a
training step whose receiver may be a trainer object (built here, or handed in as a
parameter: ``fit_one_epoch(model, train_util, ...)`` calling ``train_util.train_step(x)``).
Only the project index (``loop_training.loops_may_train``, the value engine's dispatch)
says whether it trains; these spare it the files where nothing can."""

from __future__ import annotations

import ast
import re
from typing import FrozenSet, Set, Tuple

from ...analysis.ast_index import ast_dotted, per_tree, tree_index
from .trainer_calls import handed_data

STEP_WORDS = re.compile(r"(?:^|_|train)step(?:$|_)|^update$|^learn$|^optimi[sz]e(?:$|_)|_batch$", re.IGNORECASE)
# Classes whose ``.update()`` fills a container, not a model (``OrderedSet()``, ``Counter()``).
_CONTAINERS = re.compile(r"(?:Set|Dict|Counter|Map|List|Cache|Queue|Stack|Tuple)$")


@per_tree  # asked by several rules' screens and questions of one file
def loop_calls_step_by_name(tree: ast.Module) -> bool:
    """Some loop calls a function named like a training step (``train_step(...)``), or such
    a method of an object built here from a class (``agent.update(...)`` with ``agent =
    Agent(...)``, ``engine.train(x, y)``; not ``self``'s) or handed to a function here as
    a parameter (``train_util.train_step(x)``): it may be a step function of another
    module, which only the project index can tell."""
    built = None
    for call in tree_index(tree).calls_in_loops:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id not in ("update", "step") and STEP_WORDS.search(func.id):
                return True
        elif isinstance(func, ast.Attribute) and func.attr != "step" and (STEP_WORDS.search(func.attr) or handed_data(call)):
            if built is None:
                built = _built_objects(tree)
            receiver = ast_dotted(func.value)
            if receiver in built[0] or (receiver in built[1] and func.attr not in ("update", "learn")):
                return True
            if receiver in _parameters(tree):  # a trainer handed in: the project says what it is
                return True
    return False


@per_tree
def _built_objects(tree: ast.Module) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """Dotted targets assigned a call of a capitalised name that is not a container, and
    those assigned any other call (``model = create_model(opt)``: a factory's object,
    whose ``optimize_parameters()`` may train)."""
    targets: Set[str] = set()
    made: Set[str] = set()
    for node in tree_index(tree).assignments:
        value = node.value
        if isinstance(value, ast.Call):
            name = last_name(value.func)
            found = node.targets if isinstance(node, ast.Assign) else [node.target]
            into = targets if name[:1].isupper() and not _CONTAINERS.search(name) else made
            into.update(filter(None, map(ast_dotted, found)))
    return frozenset(targets), frozenset(made)


@per_tree
def _parameters(tree: ast.Module) -> FrozenSet[str]:
    """The parameter names of every function of the tree (not ``self``/``cls``), and the
    attributes a parameter is kept in (``self.trainer = trainer`` in ``__init__``)."""
    names: Set[str] = set()
    for function in tree_index(tree).functions:
        arguments = function.args
        names.update(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))
    names -= {"self", "cls"}
    kept = (
        ast_dotted(target)
        for node in tree_index(tree).assignments
        if type(node) is ast.Assign and type(node.value) is ast.Name and node.value.id in names
        for target in node.targets
    )
    return frozenset(names.union(k for k in kept if k.startswith("self.")))


def last_name(node: ast.AST) -> str:
    """``c`` for ``a.b.c``, ``a[0].c`` or ``c``; else an empty string (``training.last_name``)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
