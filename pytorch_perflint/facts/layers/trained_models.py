"""The statements that bind a model a module trains, and what the value engine says it is
(TPF403, TPF603).

A rule knows which names its training loops use (``model``, ``self.net``); this finds the
assignments that bind them (``model = Net().cuda()``, ``self.model = model``, ``G, D =
build()``) and asks the engine whether the value bound is a convolutional model: the
engine follows factories, parameters, attributes and library builders (``project/
module_values.py``). Only the trained names are asked about, so the engine's work stays
proportional to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, Iterable, Iterator, List, Optional, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.walk import child_nodes
from ...context import FileContext
from ...project.call_values import trains
from ...project.kinds import Instance
from ...project.resolution import Definition

if TYPE_CHECKING:
    from ...project.index import ProjectIndex


@dataclass(frozen=True)
class ModelBuild:
    """A statement that binds a model (``model = Net().cuda()``) and whether it is
    convolutional."""

    line: cst.SimpleStatementLine
    assign: cst.BaseSmallStatement
    target: str  # dotted: ``model`` or ``self.net``
    conv: bool
    inside_model: bool = False  # in the body of an nn.Module class (a sub-network)
    trainer: bool = False  # an object of a project trainer class that is no nn.Module
    home: Optional[str] = None  # that class's module
    within: Optional[str] = None  # the module-level class whose body holds the statement


def _targets(small: cst.BaseSmallStatement) -> List[Tuple[str, int]]:
    """(dotted target, position in an unpacked tuple or -1) of an assignment."""
    targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]  # type: ignore[attr-defined]
    if len(targets) != 1:
        return []
    target = targets[0]
    if type(target) in (cst.Tuple, cst.List):
        out = []
        for position, element in enumerate(target.elements):  # type: ignore[attr-defined]
            if type(element) is cst.StarredElement:
                return []
            name = dotted_name(element.value) if type(element.value) in (cst.Name, cst.Attribute) else None
            if name is not None:
                out.append((name, position))
        return out
    name = dotted_name(target) if type(target) in (cst.Name, cst.Attribute) else None
    return [] if name is None else [(name, -1)]


def class_trains(project: "ProjectIndex", klass: Optional[Definition]) -> bool:
    """A project class (or a project base of it) with a method that runs backward or an
    optimizer step in its own body (the summaries' facts): a trainer."""
    seen = 0
    stack = [klass] if klass is not None and klass.kind == "class" else []
    while stack and seen < 16:
        current = stack.pop()
        seen += 1
        if current.klass is not None and any(trains(m) for m in current.klass.methods):
            return True
        stack.extend(project.resolution.project_bases(current))
    return False


def _a_trainer(context: FileContext, kind: object) -> bool:
    """An object of a project trainer class that is no ``nn.Module`` (``gan = UGATIT(args);
    gan.build_model(); gan.train()``): its ``train()`` runs training, it does not switch a
    model to training mode."""
    project = context.project
    if type(kind) is not Instance or project is None:
        return False
    klass = kind.klass  # type: ignore[attr-defined]
    return not project.is_nn_module(klass) and class_trains(project, klass)


def model_builds(context: FileContext, wanted: Iterable[str]) -> Tuple[ModelBuild, ...]:
    """The assignments of the module that bind one of the ``wanted`` names, in source
    order, each with the engine's answer. An assignment that only binds what a parameter
    holds (``self.model = model``, ``self.net = net.cuda()``) builds nothing: the model
    was built by a caller, where the finding belongs (RULES.md's anchor)."""
    names = set(wanted)
    models = context.models
    if not names or models is None:
        return ()
    out: List[ModelBuild] = []
    for statement, node, cls, params in _lines(context.module):
        for small in node.body:
            if type(small) not in (cst.Assign, cst.AnnAssign) or small.value is None:  # type: ignore[attr-defined]
                continue
            if _binds_a_parameter(small.value, params):  # type: ignore[attr-defined]
                continue
            for target, position in _targets(small):
                if target not in names:
                    continue
                kind = context.value_of(small.value, statement)  # type: ignore[attr-defined]
                if position >= 0:
                    items = getattr(kind, "items", None)
                    kind = items[position] if items is not None and position < len(items) else None
                conv = kind is not None and models.conv(kind)
                inside = cls is not None and _is_module_class(context, cls)
                trainer = _a_trainer(context, kind)
                within = statement.name.value if type(statement) is cst.ClassDef else None  # type: ignore[attr-defined]
                out.append(ModelBuild(node, small, target, conv, inside, trainer, kind.klass.path if trainer else None, within))  # type: ignore[union-attr]
    return tuple(out)


_KEEPS_MODULE = frozenset(("to", "cuda", "cpu", "train", "eval", "float", "half", "requires_grad_"))


def _binds_a_parameter(value: cst.BaseExpression, params: FrozenSet[str]) -> bool:
    """``model``, ``model.cuda()``, ``net.to(device).train()`` with ``model``/``net`` a
    parameter of the function around the assignment: a binding, not a build."""
    while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _KEEPS_MODULE:  # type: ignore[attr-defined]
        value = value.func.value  # type: ignore[attr-defined]
    return type(value) is cst.Name and value.value in params  # type: ignore[attr-defined]


def _parameters(function: cst.FunctionDef) -> FrozenSet[str]:
    p = function.params
    names = [a.name.value for a in (*p.posonly_params, *p.params, *p.kwonly_params)]
    names += [a.name.value for a in (p.star_arg, p.star_kwarg) if isinstance(a, cst.Param)]
    return frozenset(names)


_Line = Tuple[cst.CSTNode, cst.SimpleStatementLine, Optional[cst.ClassDef], FrozenSet[str]]


def _lines(module: cst.Module) -> Iterator[_Line]:
    """Each simple statement line with the module-level statement that holds it, its
    innermost class and the parameters of its innermost function, in source order."""
    for top in module.body:
        stack: List[Tuple[cst.CSTNode, Optional[cst.ClassDef], FrozenSet[str]]] = [(top, None, frozenset())]
        while stack:
            node, cls, params = stack.pop()
            if type(node) is cst.SimpleStatementLine:
                yield top, node, cls, params
                continue
            inner = node if type(node) is cst.ClassDef else cls
            inner_params = _parameters(node) if type(node) is cst.FunctionDef else frozenset() if type(node) is cst.ClassDef else params  # type: ignore[arg-type]
            stack.extend((child, inner, inner_params) for child in reversed(child_nodes(node)) if isinstance(child, (cst.BaseStatement, cst.BaseSuite, cst.BaseCompoundStatement, cst.Else, cst.ExceptHandler, cst.Finally)) or type(child).__name__ in ("MatchCase",))


def _is_module_class(context: FileContext, cls: cst.ClassDef) -> bool:
    """A class of the module that derives from ``nn.Module`` (its assignments build parts)."""
    scope = context.scope_of([context.module])
    for base in cls.bases:
        name = context.qualname(base.value, scope) or ""
        if name.startswith("torch.nn.") or name.startswith("torchvision.models."):
            return True
    return False
