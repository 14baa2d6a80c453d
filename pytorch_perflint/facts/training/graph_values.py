"""Which values carry an autograd graph, and which accumulators outlive a loop (TPF205).

A value is known to carry a graph when it is a loss: a call of ``torch.nn.functional``'s
losses, of an ``nn.*Loss`` instance, of a callee named ``criterion`` / ``loss_fn``, or
arithmetic and reductions (``.mean()``, ``* n``) on one; a name counts when every binding
of it inside the loop is such a value, outside no-grad, or when the loop binds it once and
backpropagates it (``loss.backward()``). Anything else (``.item()``,
``.detach()``, ``.data``, ``float(...)``, an unknown call) is unknown, and unknown is silent.

An accumulator outlives the loop when its name is bound before the loop in the same
function (``total = 0``, ``losses = []``, ``meter = AverageMeter()``) and inside the loop
only by the accumulation itself (or by a reset under an ``if``).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import dotted_name, target_leaves
from ...analysis.walk import exclusive_branches
from ...context import FileContext
from ...project.autograd_values import KEEPS_GRAPH, LOSS_CLASS, is_loss_function
from ...project.kinds import GraphTensor
from .backward_helpers import BACKPROPAGATES, handed_to_backward
from .classifiers import is_backward_call, last_name
from .loops import walk
from .loss_parts import ARITHMETIC_ASSIGN, on_itself, part_of_backpropagated, summand_of_backpropagated
from .no_grad import under_no_grad
from .reaching import method_of, reaching_binding, runs_after_in_block

Path = Tuple[cst.CSTNode, ...]

_CRITERION = re.compile(
    r"^(?:criterion\w*|\w*_criterion|\w*loss_fn|\w*loss_func(?:tion)?|lossfn|cost_fn|cost_func(?:tion)?)$", re.IGNORECASE
)
_MAX_DEPTH = 4
_CONVERTS = frozenset({"item", "detach", "tolist", "numpy", "cpu", "size"})
_ACCUMULATOR_START = re.compile(r"^torch\.(?:zeros|tensor|zeros_like|as_tensor|scalar_tensor)$")


class GraphValues:
    """Answers "does this expression carry a graph?" for statements inside one loop."""

    def __init__(self, context: FileContext, loop: cst.CSTNode, loop_ancestors: Path) -> None:
        self.context = context
        self.loop = loop
        self.loop_ancestors = loop_ancestors
        self._bindings: Optional[dict] = None
        self._own: set = set()  # ids of the bindings that are arithmetic on the name itself
        self._backward_names: Optional[frozenset] = None
        self._backward_paths: dict = {}  # name -> paths of the calls that backpropagate it

    def carries(self, expr: cst.BaseExpression, scope_path: Path, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            return self._name(expr.value, scope_path, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self.carries(expr.left, scope_path, depth + 1) or self.carries(expr.right, scope_path, depth + 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self.carries(expr.expression, scope_path, depth + 1)
        if isinstance(expr, cst.Call):
            return self._call(expr, scope_path, depth)
        return False

    def _call(self, call: cst.Call, scope_path: Path, depth: int) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in KEEPS_GRAPH:
            if self.carries(func.value, scope_path, depth + 1):
                return True
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return False
        scope = self.context.scope_for(call, scope_path)
        name = self.context.qualname(func, scope)
        if name is not None:
            return is_loss_function(name)
        last = func.value if isinstance(func, cst.Name) else func.attr.value
        if isinstance(func, cst.Name):
            values = _bound_values(scope, last)
            calls = [v for v in values if isinstance(v, cst.Call) and isinstance(v.func, (cst.Name, cst.Attribute))]
            if calls and len(calls) == len(values):
                names = [self.context.qualname(c.func, self.context.module_scope) for c in calls]  # type: ignore[union-attr]
                if all(LOSS_CLASS.match(n or "") for n in names):
                    return True  # every binding is an nn.*Loss (a notebook rebinding it per cell)
                if any(n is not None for n in names):
                    return False  # some other library object
        elif func.attr.value in _CONVERTS:
            return False  # `loss.item()`: no graph, and no question for the engine
        elif not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            return self._returns_graph(call, scope_path)  # `model.train_model(x, y)`
        if _CRITERION.match(last) and not self._defined_here(last):
            return True
        return self._returns_graph(call, scope_path)

    def _returns_graph(self, call: cst.Call, scope_path: Path) -> bool:
        """The value engine knows what the call gives carries a graph: a project function or
        method whose every return is a loss made where autograd records (``return
        self.cost`` after ``self.cost = self.criterion(out, y)``), through attributes,
        methods and project functions of any module."""
        statement = scope_path[1] if len(scope_path) > 1 else None
        return type(self.context.value_of(call, statement)) is GraphTensor

    def _defined_here(self, name: str) -> bool:
        """A same-module function of that name: what it returns is its own business."""
        return re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", self.context.source, re.M) is not None

    def _name(self, name: str, scope_path: Path, depth: int) -> bool:
        """Every binding of ``name`` inside the loop carries a graph (and there is one); or
        the loop binds it once, with grad on, and calls ``name.backward()``: only a tensor
        with a graph can be backpropagated, whatever call or unpacking made it
        (``loss, parts = compute(batch)``)."""
        found = self.bindings().get(name)
        if not found:
            return False
        if len(found) > 1 and self._reached(name, found, scope_path, depth):
            return True  # `total_loss = 0` ... `total_loss = a + b` before the read
        if any(under_no_grad(self.context, path) for _, path in found):
            return False
        # `loss = loss + aux`, `loss += aux`, `loss = loss`: arithmetic on the name keeps
        # whatever graph its other binding gave it, so only that one is asked.
        others = [b for b in found if id(b) not in self._own]
        if (len(others) == 1 or len(found) == 1) and name in self._backpropagated():
            return True
        if len(others) > 1 and name in self._backpropagated() and _one_per_branch(others):
            return True  # `if a: loss = f(x) else: loss = g(x)`, then `loss.backward()`
        if len(found) == 1 and found[0][0] is None:
            if part_of_backpropagated(self.context, self.loop, name, self._backpropagated(), found[0][1]):
                return True  # a term of the backpropagated loss, returned beside it
        if len(others) == 1 and others[0][0] is not None and len(found) == 1:
            if summand_of_backpropagated(self.bindings(), self._own, name, others[0][0], self._backpropagated()):
                return True  # `bpr = -torch.sum(...)`, `loss = bpr + reg`, `loss.backward()`
        if not others:
            return False
        for value, path in others:
            if value is None or under_no_grad(self.context, path):
                return False
            if not self.carries(value, path, depth + 1):
                return False
        return True

    def _reached(self, name: str, found: list, scope_path: Path, depth: int) -> bool:
        """The one binding that reaches the read (``reaching``) carries a graph: its value
        does, or it is the loop's last binding of the name and a backward after it in its
        block backpropagates the name."""
        reached = reaching_binding(self.loop, scope_path, name)
        if reached is None or under_no_grad(self.context, reached[1]) or on_itself(reached[0], name) or method_of(reached[0], name):
            return False
        if self.carries(reached[0], reached[1], depth + 1):
            return True
        if found[-1][0] is not reached[0] or name not in self._backpropagated():
            return False
        return any(runs_after_in_block(reached[1], path) for path in self._backward_paths.get(name, ()))

    def _backpropagated(self) -> frozenset:
        """Names the loop body backpropagates: ``loss.backward()``, and the loss handed to a
        helper that does (``accelerator.backward(loss)``, ``self.manual_backward(loss)``,
        ``scaler.scale(loss).backward()``)."""
        if self._backward_names is None:
            names = set()

            def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
                if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                    return False
                name = backpropagated_name(node) if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value in _BACKWARDS else None
                if name is None and type(node) is cst.Call and _may_be_helper(node):  # `self.backward(loss)` of a project helper
                    statement = self.loop_ancestors[1] if len(self.loop_ancestors) > 1 else self.loop
                    handed = handed_to_backward(self.context, node, statement)
                else:
                    handed = () if name is None else (name,)
                for one in handed:
                    names.add(one)
                    self._backward_paths.setdefault(one, []).append(self.loop_ancestors + tuple(stack))
                return True

            walk(self.loop.body, enter)
            self._backward_names = frozenset(names)
        return self._backward_names

    def bindings(self) -> dict:
        """name -> [(value or None for a binding that is not ``name = value``, ancestors)]
        for every binding inside the loop (nested functions left out)."""
        if self._bindings is None:
            found: dict = {}
            base = self.loop_ancestors

            def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
                if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                    return False
                path = base + tuple(stack)
                if type(node) is cst.Assign:
                    for target in node.targets:
                        for name, direct in _target_names(target.target):
                            entry = (node.value if direct and len(node.targets) == 1 else None, path)
                            found.setdefault(name, []).append(entry)
                            if entry[0] is not None and on_itself(entry[0], name):
                                self._own.add(id(entry))
                elif type(node) in (cst.AugAssign, cst.AnnAssign):
                    for name, direct in _target_names(node.target):
                        own = type(node) is cst.AugAssign and direct and type(node.operator) in ARITHMETIC_ASSIGN
                        value = node.value if type(node) is cst.AnnAssign else None
                        if own and type(node.operator) in (cst.AddAssign, cst.SubtractAssign):
                            value = node.value  # `loss += aux`: kept as the term it adds
                        entry = (value, path)
                        found.setdefault(name, []).append(entry)
                        if own:
                            self._own.add(id(entry))
                elif type(node) in (cst.For, cst.CompFor):
                    for name, _ in _target_names(node.target):
                        found.setdefault(name, []).append((None, path))
                elif type(node) in (cst.AsName, cst.NamedExpr):
                    target = node.name if type(node) is cst.AsName else node.target
                    for name, _ in _target_names(target):
                        found.setdefault(name, []).append((None, path))
                return True

            walk(self.loop.body, enter)
            self._bindings = found
        return self._bindings


_BACKWARDS = frozenset({"backward", "manual_backward"})
_BUILTINS = frozenset({"print", "len", "float", "int", "str", "isinstance", "range", "enumerate", "zip", "list", "dict", "tuple", "min", "max", "sum", "abs"})


def _may_be_helper(call: cst.Call) -> bool:
    """A call that hands a name on to code that may be the project's (not a builtin)."""
    if not any(isinstance(a.value, cst.Name) and a.keyword is None for a in call.args):
        return False
    return not (isinstance(call.func, cst.Name) and call.func.value in _BUILTINS)


def backpropagated_name(call: cst.Call) -> Optional[str]:
    """The name a backward call backpropagates: ``loss.backward()``,
    ``accelerator.backward(loss)``, ``self.manual_backward(loss)``,
    ``scaler.scale(loss).backward()``; None for anything else."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    receiver = func.value
    if func.attr.value == "backward" and isinstance(receiver, cst.Name) and not BACKPROPAGATES.search(receiver.value):
        return receiver.value if receiver.value != "self" else None  # `self.backward(loss)`: a method
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    if func.attr.value == "manual_backward" or (BACKPROPAGATES.search(last_name(receiver) or "") and func.attr.value == "backward"):
        return first.value if isinstance(first, cst.Name) else None
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
        scaled = receiver.args[0].value if len(receiver.args) == 1 else None
        if "scaler" in (last_name(receiver.func.value) or "").lower() and isinstance(scaled, cst.Name):
            return scaled.value
    return None


def _one_per_branch(bindings: Sequence[Tuple[Optional[cst.BaseExpression], Path]]) -> bool:
    """Each binding is ``name = value`` in its own arm of one ``if``/``elif``/``else`` chain:
    one of them runs per iteration, and the loop backpropagates whichever it was."""
    if any(value is None for value, _ in bindings):
        return False
    return all(exclusive_branches(a[1], b[1]) for i, a in enumerate(bindings) for b in bindings[i + 1:])


def _bound_values(scope, name: str) -> List[Optional[cst.BaseExpression]]:
    """The values of every binding of ``name`` in the scope that binds it (None for one
    that is not ``name = value``); empty when no visible scope binds it."""
    for current in scope.visible():
        if name in current.declared_outer or name in current.imports:
            return []
        if name in current.bindings:
            return list(current.bindings[name])
    return []


def _target_names(target: cst.BaseExpression) -> Iterator[Tuple[str, bool]]:
    """The plain names a target binds, and whether directly (not by unpacking)."""
    return ((leaf.value, direct) for leaf, direct in target_leaves(target) if isinstance(leaf, cst.Name))


# -- accumulators ------------------------------------------------------------------------
def initial_value(function: cst.CSTNode, loop: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """The value ``name`` is bound to before ``loop`` in ``function`` (the module or a def),
    outside the loop, by its last binding there, when that is ``name = value`` (or ``a, name
    = 0, value``); None when there is none or it is some other binding."""
    seen: List[Optional[cst.BaseExpression]] = []
    state = {"loop": False}

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if node is loop:
            state["loop"] = True
            return False
        if state["loop"]:
            return False
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda) and node is not function:
            return False
        if type(node) is cst.Assign:
            for target in node.targets:
                for bound, direct in _target_names(target.target):
                    if bound == name:
                        plain = node.value if direct else None  # `total = count = 0` binds both to 0
                        seen.append(plain if plain is not None else _unpacked(target.target, node.value, name))
        elif type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.AsName, cst.NamedExpr):
            target = getattr(node, "target", None) or getattr(node, "name", None)
            if target is not None and any(bound == name for bound, _ in _target_names(target)):
                seen.append(getattr(node, "value", None) if type(node) is cst.AnnAssign else None)
        return True

    walk(function, enter)
    if not state["loop"] or not seen or seen[-1] is None:
        return None
    return seen[-1]


def _unpacked(target: cst.BaseExpression, value: cst.BaseExpression, name: str) -> Optional[cst.BaseExpression]:
    """``b`` for ``name`` in ``a, name = 0, b`` (displays of the same length, no ``*``)."""
    kinds = (cst.Tuple, cst.List)
    if not isinstance(target, kinds) or not isinstance(value, kinds) or len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    for left, right in zip(target.elements, value.elements):
        if isinstance(left.value, cst.Name) and left.value.value == name:
            return right.value
    return None


def is_fresh_accumulator(context: FileContext, value: cst.BaseExpression, kind: str, scope_path: Path) -> bool:
    """``0``, ``0.0``, ``torch.zeros(())``, ``torch.tensor(0.)`` for a sum; ``[]`` or ``list()``
    for a list."""
    if kind == "list":
        if isinstance(value, cst.List) and not value.elements:
            return True
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "list" and not value.args
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute)):
        name = context.qualname(value.func, context.scope_for(value, scope_path)) or ""
        return bool(_ACCUMULATOR_START.match(name))
    return False


def rebound_in_loop(loop: cst.CSTNode, name: str, accumulations: Sequence[cst.CSTNode]) -> bool:
    """``name`` is bound in the loop by something other than the accumulations and resets
    under an ``if`` (``if step % 100 == 0: total = 0``): it may be re-created every time."""
    found = {"other": False}

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if any(node is a for a in accumulations):
            return False
        target = None
        if type(node) is cst.Assign:
            for t in node.targets:
                if any(bound == name for bound, _ in _target_names(t.target)):
                    reset = isinstance(node.value, (cst.Integer, cst.Float, cst.List)) and any(type(s) is cst.If for s in stack)
                    if not reset:
                        found["other"] = True
            return True
        if type(node) in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr):
            target = node.target
        elif type(node) is cst.AsName:
            target = node.name
        if target is not None and any(bound == name for bound, _ in _target_names(target)):
            found["other"] = True
        return True

    walk(loop.body, enter)  # type: ignore[attr-defined]
    return found["other"]


def backpropagated(context: FileContext, function: cst.CSTNode, name: str) -> bool:
    """Some backward (``x.backward()``, ``accelerator.backward(x)``, ``torch.autograd.grad``)
    in ``function`` reads ``name`` or a name computed from it: gradient accumulation on
    purpose."""
    derived = {name}
    assigns: List[Tuple[List[str], str]] = []
    backward_texts: List[str] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.ClassDef, cst.Lambda) or (type(node) is cst.FunctionDef and node is not function):
            return False
        if type(node) is cst.Assign:
            targets = [n for t in node.targets for n, _ in _target_names(t.target)]
            assigns.append((targets, context.code_for(node.value)))
        elif type(node) is cst.Call:
            func = node.func
            last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if last in ("backward", "manual_backward", "grad") or is_backward_call(node, lambda e: context.qualname(e)):
                backward_texts.append(context.code_for(node))
        return True

    walk(function, enter)
    changed = True
    while changed:
        changed = False
        for targets, text in assigns:
            if any(_mentions(text, d) for d in derived):
                for target in targets:
                    if target not in derived:
                        derived.add(target)
                        changed = True
    return any(_mentions(text, d) for text in backward_texts for d in derived)


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


# -- project meters ------------------------------------------------------------------------
def meter_stores(tree: ast.Module, class_name: str, method: str = "update") -> bool:
    """Class ``class_name`` of ``tree`` has a ``method`` that keeps its first argument (or
    arithmetic on it) in ``self``: ``self.sum += val * n``, ``self.values.append(val)``.
    A method that converts it first (``val.item()``, ``float(val)``, rebinding ``val``)
    does not; neither does one that cannot be read."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return _stores_argument(item)
    return False


def _stores_argument(function: ast.FunctionDef) -> bool:
    params = [a.arg for a in function.args.args]
    if len(params) < 2:
        return False
    value = params[1]
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == value for t in targets):
                return False  # `val = val.item()`: what is stored is not the argument
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_on_self(t) for t in targets) and node.value is not None and _keeps(node.value, value):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend"):
            if _on_self(node.func.value) and any(_keeps(arg, value) for arg in node.args):
                return True
    return False


def _on_self(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
        if isinstance(node, ast.Name):
            return node.id == "self"
    return False


def _keeps(expr: ast.AST, name: str) -> bool:
    """``expr`` is the argument or arithmetic on it, not a conversion of it."""
    if isinstance(expr, ast.Name):
        return expr.id == name
    if isinstance(expr, ast.BinOp):
        return _keeps(expr.left, name) or _keeps(expr.right, name)
    if isinstance(expr, ast.UnaryOp):
        return _keeps(expr.operand, name)
    return False


def class_of_instance(context: FileContext, value: cst.BaseExpression, scope_path: Path) -> Optional[Tuple[str, Optional[str]]]:
    """``AverageMeter()`` -> (the class name, the path of the project module defining it, or
    None for this module). None when the callee is not a project class by name."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
        return None
    dotted = dotted_name(value.func)
    if dotted is None:
        return None
    last = dotted.rpartition(".")[2]
    if not last[:1].isupper():
        return None
    if "." not in dotted and re.search(rf"^class\s+{re.escape(last)}\b", context.source, re.M):
        return last, None
    project = context.project
    if project is None:
        return None
    try:
        definition = project.resolve(str(context.path), dotted)
    except Exception:  # noqa: BLE001 - unresolvable is unknown
        return None
    if definition is None or definition.kind != "class" or definition.path is None:
        return None
    return definition.name.rpartition(".")[2] or last, definition.path


def meter_keeps_values(context: FileContext, cls: Tuple[str, Optional[str]], parse: Callable[[str], Optional[ast.Module]]) -> bool:
    name, path = cls
    text = context.source if path is None else (context.project.text(path) if context.project is not None else None)
    if text is None:
        return False
    tree = parse(text)
    return tree is not None and meter_stores(tree, name)
