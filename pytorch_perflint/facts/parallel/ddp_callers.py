"""A DDP model handed to a training function of another module (TPF502).

The vision recipes of timm's lineage (DeiT, ConvNeXt, MAE...) wrap the model in
``DistributedDataParallel`` in ``main.py`` and train it in ``engine.py``'s
``train_one_epoch(model, ...)``. The parameter is the DDP model when every project call of
the function passes, for it, a name that the calling function binds to a
``DistributedDataParallel(...)`` call (under a condition too: the wrapped model is what a
distributed run trains). Anything that cannot be read (a caller that passes an attribute
or an expression, ``*args``, a function that escapes as a value) is not known, and the rule
stays silent.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Sequence

import libcst as cst

from ...analysis.ast_index import ast_dotted
from ...context import FileContext
from ...project.forms import Ref
from ...project.call_values import own_path

_DDP = "DistributedDataParallel"


def passed_ddp_model(context: FileContext, names: FrozenSet[str], function: Optional[cst.FunctionDef]) -> Optional[str]:
    """The parameter of ``function`` (a module-level function of this module), among
    ``names`` (the names a loop in it uses), that every project caller passes a DDP model
    for; None when there is none or it cannot be known."""
    index = context.project
    if index is None or function is None:
        return None
    if not any(statement is function for statement in context.module.body):
        return None
    params = [p.name.value for p in function.params.params]
    candidates = [p for p in params if p in names]
    if not candidates:
        return None
    definition = index.resolve(own_path(context), function.name.value)
    if definition is None or definition.kind != "function":
        return None
    sites = index.callers(definition)
    if not sites:
        return None
    trees: Dict[str, Optional[ast.Module]] = {}
    for parameter in candidates:
        if all(_passes_ddp(index, trees, path, site, parameter, params) for path, site in sites):
            return parameter
    return None


def _passes_ddp(index, trees: Dict[str, Optional[ast.Module]], path: str, site, parameter: str, params: Sequence[str]) -> bool:
    call = site.arguments
    if call is None or call.star:
        return False
    form = dict(call.kwargs).get(parameter)
    position = params.index(parameter)
    if form is None and position < len(call.args):
        form = call.args[position]
    if not isinstance(form, Ref) or "." in form.name:
        return False
    if path not in trees:
        text = index.text(path)
        try:
            trees[path] = ast.parse(text) if text is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            trees[path] = None
    tree = trees[path]
    caller = _function(tree, site.caller) if tree is not None else None
    return caller is not None and _binds_ddp(tree, caller, form.name)  # type: ignore[arg-type]


def _function(tree: ast.Module, caller: str) -> Optional[ast.AST]:
    """The caller's node: ``main``, ``Trainer.fit``, or the module for ``""``."""
    if not caller:
        return tree
    node: ast.AST = tree
    for part in caller.split("."):
        found = [
            s for s in getattr(node, "body", [])
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == part
        ]
        if len(found) != 1:
            return None
        node = found[0]
    return node


def _binds_ddp(tree: ast.Module, caller: ast.AST, name: str) -> bool:
    """The caller binds ``name`` to ``DistributedDataParallel(...)`` (or an alias of it, or
    ``DDP(...) if ... else ...``) somewhere in its body."""
    aliases = {_DDP}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases.update(a.asname for a in node.names if a.name == _DDP and a.asname)
    for node in ast.walk(caller):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            for value in values:
                if isinstance(value, ast.Call) and ast_dotted(value.func).rsplit(".", 1)[-1] in aliases:
                    return True
    return False
