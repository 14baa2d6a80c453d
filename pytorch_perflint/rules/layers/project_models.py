"""Convolutional models defined in other modules of the project (TPF403).

A training script usually imports its network (``from model import Net``) or a factory
(``from models import build_model``). Whether that builds a convolutional model is read
from the defining module's ``ast`` through the project index: a class is convolutional when
a call in its body builds a convolution layer, a torchvision convolutional network or
another convolutional project class, or when it inherits from one; a factory when every
``return`` gives such a model. Anything that cannot be resolved counts as not
convolutional, so the rule stays silent.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, Iterator, Optional, Tuple

from ...project.forms import dotted
from .conv_names import CONV_LAYERS, TORCHVISION_CONV

if TYPE_CHECKING:
    from ...project.index import ProjectIndex
    from ...project.resolution import Definition

MAX_DEPTH = 4  # modules followed from the training script (model -> blocks -> layers...)


class ProjectModels:
    """Answers "does this name, as written in ``path``, build a convolutional model?"."""

    def __init__(self, project: "ProjectIndex") -> None:
        self.project = project
        self._trees: Dict[str, Optional[ast.Module]] = {}
        self._answers: Dict[Tuple[str, str, str], bool] = {}

    def builds_conv(self, path: str, written: str, depth: int = 0) -> bool:
        """Whether calling ``written`` (``Net``, ``models.build_model``) from module level of
        ``path`` gives a convolutional model."""
        definition = self.project.resolve(path, written)
        return definition is not None and self._conv(definition, depth)

    def _conv(self, definition: "Definition", depth: int) -> bool:
        if definition.kind == "external":
            return _external_conv(definition.qualname)
        if depth > MAX_DEPTH or definition.path is None or definition.kind not in ("class", "function"):
            return False
        key = (definition.kind, definition.path, definition.name)
        if key not in self._answers:
            self._answers[key] = False  # a cycle (a class that builds itself) is not evidence
            tree = self._tree(definition.path)
            node = _top_level(tree, definition.name) if tree is not None else None
            if isinstance(node, ast.ClassDef) and definition.kind == "class":
                self._answers[key] = self._conv_class(definition.path, node, depth)
            elif isinstance(node, ast.FunctionDef) and definition.kind == "function":
                self._answers[key] = self._conv_factory(definition.path, node, depth)
        return self._answers[key]

    def _conv_class(self, path: str, node: ast.ClassDef, depth: int) -> bool:
        for base in node.bases:
            written = dotted(base)
            if written is not None and self.builds_conv(path, written, depth + 1):
                return True
        for call in _calls(node):
            written = dotted(call.func)
            if written is not None and self.builds_conv(path, written, depth + 1):
                return True
        return False

    def _conv_factory(self, path: str, node: ast.FunctionDef, depth: int) -> bool:
        """Every ``return`` gives a call that builds a convolutional model (directly, moved
        with ``.to``/``.cuda``, or through a local name bound once to such a call)."""
        bound: Dict[str, ast.expr] = {}
        counts: Dict[str, int] = {}
        for statement in ast.walk(node):
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        bound[target.id] = statement.value
                        counts[target.id] = counts.get(target.id, 0) + 1
        returns = [s.value for s in ast.walk(node) if isinstance(s, ast.Return)]
        if not returns:
            return False
        for value in returns:
            if isinstance(value, ast.Name) and counts.get(value.id) == 1:
                value = bound[value.id]
            call = _unmoved(value)
            written = dotted(call.func) if call is not None else None
            if written is None or not self.builds_conv(path, written, depth + 1):
                return False
        return True

    def _tree(self, path: str) -> Optional[ast.Module]:
        if path not in self._trees:
            text = self.project.text(path)
            try:
                self._trees[path] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]


def _external_conv(qualname: Optional[str]) -> bool:
    if qualname is None:
        return False
    if qualname in CONV_LAYERS:
        return True
    last = qualname.rsplit(".", 1)[-1]
    return (
        qualname.startswith("torchvision.models.")
        and "_Weights" not in last
        and last.lower().startswith(TORCHVISION_CONV)
    )


def _top_level(tree: ast.Module, name: str) -> Optional[ast.stmt]:
    found = [s for s in tree.body if isinstance(s, (ast.ClassDef, ast.FunctionDef)) and s.name == name]
    return found[0] if len(found) == 1 else None


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            yield child


def _unmoved(value: Optional[ast.expr]) -> Optional[ast.Call]:
    """The building call under ``.to(...)``/``.cuda()``/``.eval()`` chains."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("to", "cuda", "eval", "train", "float", "half")
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value if isinstance(value, ast.Call) else None
