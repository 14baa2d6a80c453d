"""Tensors that carry an autograd graph (``GraphTensor``): the value engine's producers.

A loss carries the graph that produced it: the result of a ``torch.nn.functional`` loss
(``F.cross_entropy``) or of calling an ``nn.*Loss`` module (``Module(loss=True)``), and
arithmetic and graph-keeping reductions of one (``loss / n``, ``loss.mean()``). The engine
follows it through names, attributes (``self.cost = self.criterion(out, y)``), returns and
method calls like any other kind, so ``cost = model.train_model(x, y)`` is a graph when
``train_model`` returns ``self.cost`` (TPF205 asks).

Only where autograd records: a call read where autograd is off (inside ``with
torch.no_grad():``, ``torch.inference_mode()``, ``set_grad_enabled`` of anything but
``True``, or in a function decorated with one of them, or anything named like them) makes
no graph, so it is not a ``GraphTensor`` there (``grad_off``). ``.detach()``, ``.item()``,
``.data`` and everything else are not known (silent).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Mapping, Optional

from .forms import Call, Form, Lit, Ref, dotted, qualify
from .kinds import DeviceTensor, GraphTensor, HostTensor, Kind, Module, Number, Unknown

if TYPE_CHECKING:
    from .index import ProjectIndex
    from .scopes import Scope
    from .values import Where

FUNCTIONAL = "torch.nn.functional."
FUNCTIONAL_LOSSES = frozenset(
    {
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
        "gaussian_nll_loss", "ctc_loss", "margin_ranking_loss", "hinge_embedding_loss",
        "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
        "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
        "triplet_margin_with_distance_loss",
    }
)
LOSS_CLASS = re.compile(r"^torch\.nn\.(?:modules\.loss\.)?\w+Loss$")
# Tensor methods whose result keeps the graph of the tensor they are called on.
KEEPS_GRAPH = frozenset({"mean", "sum", "float", "squeeze", "clone", "mul", "div", "add", "to", "reshape", "view"})
_ARITHMETIC = frozenset({"Add", "Sub", "Mult", "Div", "FloorDiv", "Pow", "Mod"})
_OPERANDS = (GraphTensor, Number, HostTensor, DeviceTensor)
_NO_GRAD_NAMES = frozenset({"torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled"})
NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode|set_grad_enabled", re.IGNORECASE)


def is_loss_function(qualname: str) -> bool:
    """``torch.nn.functional.cross_entropy`` and the other functional losses."""
    return qualname.startswith(FUNCTIONAL) and qualname[len(FUNCTIONAL):] in FUNCTIONAL_LOSSES


def call(qualname: str) -> Optional[Kind]:
    """A functional loss's result (None: not one)."""
    return GraphTensor() if is_loss_function(qualname) else None


def called(callee: Kind) -> Optional[Kind]:
    """What calling a module gives, when it is a loss module (None: not known here)."""
    return GraphTensor() if type(callee) is Module and callee.loss else None


# A project module named for what it computes: `DiceLoss`, `WeightedBCELoss`, `ContrastiveCriterion`.
_LOSS_MODULE = re.compile(r"(?:Loss|Criterion)$")
# What hands back a number or a tensor without its graph: `x.item()`, `x.detach()`, `float(x)`.
_LETS_GO = frozenset({"item", "detach", "tolist", "numpy", "cpu", "data"})


def named_loss(name: str) -> bool:
    """A project class named like a loss (``DiceLoss``, ``ContrastiveCriterion``)."""
    return _LOSS_MODULE.search(name) is not None


def loss_module(name: str, forward: Optional[ast.AST], found: Kind) -> Kind:
    """Calling a project ``nn.Module`` named like a loss (``class DiceLoss(nn.Module)``)
    gives its graph, as an ``nn.*Loss`` does, when the engine cannot tell what its
    ``forward`` returns from its own code (arithmetic on the tensors it is handed): every
    ``return`` of the ``forward`` is one expression (not a tuple, a dict or a constant)
    that does not let the graph go last (``.item()``, ``.detach()``, ``float(...)``, also
    through the names it returns: ``loss = d.mean().item(); return loss``). Else
    ``found``, what the engine read."""
    if type(found) is not Unknown or not _LOSS_MODULE.search(name) or not isinstance(forward, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return found
    nodes = list(ast.walk(forward))
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    if not returns or any(r.value is None or isinstance(r.value, (ast.Tuple, ast.Dict, ast.List, ast.Constant)) for r in returns):
        return found
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.FunctionDef, ast.Lambda)) and n is not forward for n in nodes):
        return found
    bound: dict = {}
    for n in nodes:
        if isinstance(n, ast.Assign):
            for target in n.targets:
                bound.setdefault(target.id if isinstance(target, ast.Name) else "", []).append(n.value)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name):
            bound.setdefault(n.target.id, []).append(n.value)
    if any(_lets_go(r.value, bound, 0) for r in returns):  # type: ignore[arg-type]
        return found
    return GraphTensor()


def _lets_go(expr: Optional[ast.AST], bound: Mapping[str, list], depth: int) -> bool:
    """The value of ``expr`` is last made by something that drops the graph (or cannot be
    told: too deep, a name bound some other way)."""
    if expr is None or depth > 8:
        return True
    if isinstance(expr, ast.Name):
        values = bound.get(expr.id)
        return values is not None and any(_lets_go(v, bound, depth + 1) for v in values)
    if isinstance(expr, ast.Attribute) and expr.attr in _LETS_GO:
        return True
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name) and func.id in ("float", "int", "bool"):
            return True
        if isinstance(func, ast.Attribute):
            return func.attr in _LETS_GO or (func.attr in KEEPS_GRAPH and _lets_go(func.value, bound, depth + 1))
    return False


def method(receiver: Kind, name: str) -> Optional[Kind]:
    """``loss.mean()``: still the graph (None: not known here)."""
    return GraphTensor() if type(receiver) is GraphTensor and name in KEEPS_GRAPH else None


def arithmetic(op: str, left: Kind, right: Kind) -> Optional[Kind]:
    """``loss / n``, ``loss + other_loss``: a graph (None: not known here)."""
    if op in _ARITHMETIC and GraphTensor in (type(left), type(right)):
        return GraphTensor() if type(left) in _OPERANDS and type(right) in _OPERANDS else None
    return None


def grad_off(where: "Where", index: Optional["ProjectIndex"] = None) -> bool:
    """Autograd may be off at ``where``: a no-grad ``with`` around its line, or a no-grad
    decorator on its function (or on a function around an inline scope; the scope's own
    lines start at its ``def``, so its decorators are read from the project summary); a
    place whose code is not known counts as off (precision first)."""
    current: Optional["Where"] = where
    line = where.line
    while current is not None:
        scope = current.scope
        if scope is None or scope.node is None:
            return True
        node = scope.node
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not scope.inline:
            return True
        aliases = scope.aliases
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _decorated(scope, node, index):
            return True
        if _in_no_grad_with(node, line, aliases):
            return True
        if not scope.inline:
            return False
        current, line = current.parent, current.parent.line if current.parent is not None else 0
    return False


def _decorated(scope: "Scope", node: ast.AST, index: Optional["ProjectIndex"]) -> bool:
    """The function is decorated no-grad (``@torch.no_grad()``)."""
    if any(no_grad_expr(d, scope.aliases) for d in getattr(node, "decorator_list", ())):
        return True
    definition = index.resolve(scope.path, scope.owner) if index is not None and scope.path and scope.owner else None
    function = None if definition is None else definition.function
    return function is not None and any(no_grad_form(d) for d in function.decorators)


def _in_no_grad_with(root: ast.AST, line: int, aliases: Mapping[str, str]) -> bool:
    """A ``with`` of the scope's own statements (nested defs left out) that turns autograd
    off and holds ``line`` in its body."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if not isinstance(node, ast.stmt):
            continue
        end = getattr(node, "end_lineno", None) or node.lineno
        if not node.lineno <= line <= end:
            continue
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(no_grad_expr(item.context_expr, aliases) for item in node.items):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def no_grad_expr(expr: ast.AST, aliases: Mapping[str, str]) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()`` (not ``inference_mode(False)``),
    ``torch.set_grad_enabled(x)`` with ``x`` not ``True``, or a name that says so."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    spelled = dotted(target)
    if spelled is None:
        return False
    name = qualify(spelled, aliases) or spelled
    first = expr.args[0] if isinstance(expr, ast.Call) and expr.args else None
    constant = first.value if isinstance(first, ast.Constant) else None
    if name == "torch.inference_mode" and first is not None:
        return constant is not False
    if name == "torch.set_grad_enabled":
        return constant is not True
    return name in _NO_GRAD_NAMES or bool(NO_GRAD_WORDS.search(spelled))


def no_grad_form(decorator: Form) -> bool:
    """A decorator (as the summary keeps it) that turns autograd off: ``@torch.no_grad()``."""
    target = decorator.func if type(decorator) is Call else decorator  # type: ignore[union-attr]
    if type(target) is not Ref:
        return False
    args = decorator.args if type(decorator) is Call else ()  # type: ignore[union-attr]
    if args and type(args[0]) is Lit and args[0].value is False:
        return False  # `inference_mode(False)`
    return bool(NO_GRAD_WORDS.search(target.qualname or target.name))
