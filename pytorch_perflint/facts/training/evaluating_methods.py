"""Methods of a project class that put its models in eval mode and train nothing (TPF203).

``art.restore(path)`` then ``art.sweep(4)``, where ``restore`` runs ``self.gen.eval()``
(or ``self.eval()``) unconditionally and never runs backward or an optimizer step: for the
caller, ``art.restore(...)`` is ``art.eval()`` for those models, so a later method of the
same object that loops over them is evaluating (``eval_callers``). A method that also
trains (a backward, a step, a ``.train()`` call), or switches a mode only on a branch, is
not one. Read on ``ast`` through the index, for methods of the class itself.
"""

from __future__ import annotations

import ast
from typing import AbstractSet, FrozenSet, Optional, Set

from ...project import ProjectIndex
from ...project.bodies import locate
from ...project.resolution import Definition


def evaluating_methods(index: ProjectIndex, method: Definition, layers: Optional[AbstractSet[str]]) -> FrozenSet[str]:
    """The names of the other methods of ``method``'s class that put every one of
    ``layers`` (``self.gen``; None: any one) in eval mode, ``self.eval()`` counting for all
    of them, and never train."""
    klass = method.klass
    text = index.text(method.path) if klass is not None and method.path is not None else None
    if klass is None or text is None:
        return frozenset()
    own = method.name.rpartition(".")[2]
    found: Set[str] = set()
    for summary in klass.methods:
        if summary.name == own or summary.name.startswith("__") or summary.backward or summary.steps or summary.is_async:
            continue
        node = locate(text, summary.line, summary.end_line, summary.name, False)
        modes = _modes(node) if node is not None else None
        if modes and (("self" in modes) or (modes >= set(layers) if layers is not None else True)):
            found.add(summary.name)
    return frozenset(found)


def _modes(function: ast.AST) -> Optional[FrozenSet[str]]:
    """What the function's own top-level statements put in eval mode (``self``,
    ``self.gen``), or None when it calls ``.train(...)`` or ``.backward(...)`` anywhere."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("train", "backward", "step", "requires_grad_"):
            return None
    out: Set[str] = set()
    for statement in getattr(function, "body", ()):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "eval" and not call.args and not call.keywords:
            owner = _self_dotted(call.func.value)
            if owner is not None:
                out.add(owner)
    return frozenset(out)


def _self_dotted(node: ast.AST) -> Optional[str]:
    """``self`` or ``self.gen`` (one attribute deep), else None."""
    if isinstance(node, ast.Name) and node.id == "self":
        return "self"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None
