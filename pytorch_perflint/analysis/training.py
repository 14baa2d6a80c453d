"""Training loops, evaluation loops and no-grad regions: facts the TPF2xx/TPF6xx rules share.

Public API (each fact is computed once per file; call it through ``context.fact``)::

    facts = context.fact(training_facts)       # TrainingFacts
    facts.has_training_loop                    # any loop that trains in this module?
    facts.training_loops                       # LoopFacts of every training loop
    facts.loop(node)                           # LoopFacts for a For/While node, or None
        .backward / .step / .is_training / .is_step_loop / .function
    facts.step_functions, facts.loop_functions # same-module helpers, as (class, name) keys
    facts.sync_helpers                         # helpers that sync with the device unconditionally
    context.fact(evaluation_loops)             # EvalLoop: eval loops outside no-grad (TPF203)

    step_loop_around(context, ancestors)       # the innermost *step loop* around a node
    guarded_between(path, loop_names)          # is the last node of ``path`` conditional?
    under_no_grad(context, ancestors)          # inside no_grad / inference_mode / ...?
    is_backward_call / is_optimizer_step / is_sync_call / is_no_grad_expr   # classifiers
    in_test_code(ancestors, path)              # inside a unit test (rules stay quiet there)

A **training loop** is a ``for``/``while`` whose body runs ``.backward()`` (also
``accelerator.backward``, ``torch.autograd.backward``) or an optimizer ``.step()`` (a receiver
named like an optimizer, bound to a ``torch.optim`` constructor, or ``scaler.step(opt)``),
directly or through a same-module helper (``train_step(...)``, ``self.train_step(...)``).
A **step loop** is a training loop that runs once per optimisation step: no loop nested in it
runs the optimizer steps and it calls no helper that itself loops over training steps (so an
epoch loop around ``train_one_epoch(...)`` is a training loop but not a step loop). A loop that
steps the optimizer around an inner micro-batch loop that only runs backward (gradient
accumulation) is a step loop, and so is the inner loop.

Helpers are resolved by name only: ``f(...)`` to a function ``f`` defined in the module
(outside classes), ``self.f(...)`` / ``cls.f(...)`` to a method of the enclosing class. This
is cheap and precise enough; anything else is not followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ..testfiles import is_test_file
from .scope import dotted_name
from .values import literal_value
from .walk import child_nodes

if TYPE_CHECKING:  # rule.py imports the analysis package: no runtime import here
    from ..rule import FileContext

Loop = Union[cst.For, cst.While]
FuncKey = Tuple[Optional[str], str]  # (class name or None, function name)

_SCHEDULER = re.compile(r"sched", re.IGNORECASE)
# opt, opts, optG, opt_d, opt1, g_opt, genOpt (``optim`` anywhere is checked separately).
_OPTIMIZER = re.compile(r"^opts?(?:$|_|\d|[A-Z])|_opts?(?:$|_|\d)|[a-z]Opts?(?:$|_|\d|[A-Z])")
BACKWARD_ATTRS = frozenset({"backward", "manual_backward"})
_SYNC_METHODS = frozenset({"item", "cpu", "tolist"})
_NO_GRAD_NAMES = frozenset({"torch.no_grad", "torch.inference_mode"})
_NO_GRAD_WORDS = re.compile(r"no_?grad|inference_mode", re.IGNORECASE)


# ---------------------------------------------------------------------------------------
# Small classifiers of calls and names
# ---------------------------------------------------------------------------------------
def last_name(expr: cst.BaseExpression) -> Optional[str]:
    """The last identifier of ``a.b.c`` / ``a[0].c`` / ``c``, else None."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def is_optimizer_name(name: str) -> bool:
    """``optimizer``, ``opt``, ``optG``, ``g_optim``, ``self.opt_d``; never a scheduler."""
    if _SCHEDULER.search(name):
        return False
    return bool(_OPTIMIZER.search(name)) or "optim" in name.lower()


def method_name(call: cst.Call) -> Optional[str]:
    """``m`` for a call ``x.m(...)``, else None."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else None


def call_receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    func = call.func
    return func.value if isinstance(func, cst.Attribute) else None


def is_backward_call(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``loss.backward()``, ``accelerator.backward(loss)``, ``torch.autograd.backward(t)``."""
    if method_name(call) in BACKWARD_ATTRS:
        return True
    if isinstance(call.func, cst.Name) and call.func.value == "backward":
        return qualname(call.func) == "torch.autograd.backward"
    return False


def is_optimizer_step(call: cst.Call, optimizer_names: FrozenSet[str] = frozenset()) -> bool:
    """``optimizer.step()``, ``opt_g.step(closure)``, ``scaler.step(optimizer)``."""
    if method_name(call) != "step":
        return False
    receiver = call_receiver(call)
    assert receiver is not None
    name = last_name(receiver)
    if name is None:
        return False
    dotted = dotted_name(receiver)
    if dotted is not None and dotted in optimizer_names:
        return True
    if "scaler" in name.lower():
        return bool(call.args)
    return is_optimizer_name(name)


def is_autograd_grad(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    return isinstance(call.func, (cst.Name, cst.Attribute)) and last_name(call.func) == "grad" and (
        qualname(call.func) == "torch.autograd.grad"
    )


def is_no_grad_expr(expr: cst.BaseExpression, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """A context manager or decorator that turns autograd recording off.

    ``torch.no_grad()``, ``torch.inference_mode()`` (not ``inference_mode(False)``),
    ``torch.set_grad_enabled(False)``; also ``set_grad_enabled(x)`` with a value that is not
    known (``phase == "val"``), and any name that says ``no_grad``/``inference_mode``
    (``smart_inference_mode()``): precision first, these may well turn grad off.
    """
    target = expr.func if isinstance(expr, cst.Call) else expr
    if not isinstance(target, (cst.Name, cst.Attribute)):
        return False
    name = qualname(target)
    if name in _NO_GRAD_NAMES:
        if isinstance(expr, cst.Call) and name == "torch.inference_mode" and expr.args:
            return literal_value(expr.args[0].value) is not False
        return True
    if name == "torch.set_grad_enabled":
        if isinstance(expr, cst.Call) and expr.args:
            return literal_value(expr.args[0].value) is not True
        return False
    dotted = dotted_name(target) or ""
    return bool(_NO_GRAD_WORDS.search(dotted))


def callee_key(call: cst.Call, class_name: Optional[str]) -> Optional[FuncKey]:
    """The same-module function a call may run: ``f(...)`` or ``self.f(...)``."""
    func = call.func
    if isinstance(func, cst.Name):
        return (None, func.value)
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value in ("self", "cls")
        and class_name is not None
    ):
        return (class_name, func.attr.value)
    return None


# ---------------------------------------------------------------------------------------
# Guards: is a node run on every iteration of the loop around it?
# ---------------------------------------------------------------------------------------
def _is_main_guard(node: cst.If) -> bool:
    test = node.test
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )


def guarded_between(path: Sequence[cst.CSTNode], loop_names: Optional[FrozenSet[str]] = None) -> bool:
    """Whether the last node of ``path`` (a chain of nodes, each the parent of the next)
    runs only under a condition relative to the first: inside an ``if``/``elif``/``else``
    branch (not its test), a conditional expression's branches, the right operand of
    ``and``/``or``, an ``except`` handler or a ``match`` case.

    With ``loop_names`` (the names a loop binds, see ``loop_bound_names``), an ``if`` whose
    test cannot change from one iteration to the next (``if not args.distributed:``,
    ``if writer is not None:``, ``if rank == 0:``) is no guard: whatever it selects runs on
    every iteration. A test that uses a name the loop binds, ``%``, an ordering comparison
    or any call is taken as a per-iteration guard (``if step % 10 == 0``, ``if i == 0``,
    ``if torch.isnan(loss)``).
    """
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, cst.If):
            if child is not parent.test and not _is_main_guard(parent):
                if loop_names is None or not loop_invariant(parent.test, loop_names):
                    return True
        elif isinstance(parent, cst.IfExp):
            if child is not parent.test:
                if loop_names is None or not loop_invariant(parent.test, loop_names):
                    return True
        elif isinstance(parent, cst.BooleanOperation):
            if child is parent.right:
                return True
        elif isinstance(parent, cst.ExceptHandler):
            return True
        elif type(parent).__name__ in ("MatchCase", "ExceptStarHandler"):
            return True
    return False


_INVARIANT_COMPARISONS = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual, cst.In, cst.NotIn)


def loop_invariant(test: cst.BaseExpression, loop_names: FrozenSet[str]) -> bool:
    """Whether a condition is a flag that stays the same on every iteration: names the
    loop does not bind, their attributes, literals, ``not``/``and``/``or``, and
    ``is``/``==``/``in`` comparisons of those."""
    if isinstance(test, cst.Name):
        return test.value not in loop_names
    if isinstance(test, cst.Attribute):
        return loop_invariant(test.value, loop_names)
    if isinstance(test, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return loop_invariant(test.expression, loop_names)
    if isinstance(test, cst.BooleanOperation):
        return loop_invariant(test.left, loop_names) and loop_invariant(test.right, loop_names)
    if isinstance(test, cst.Comparison):
        return (
            all(isinstance(c.operator, _INVARIANT_COMPARISONS) for c in test.comparisons)
            and loop_invariant(test.left, loop_names)
            and all(loop_invariant(c.comparator, loop_names) for c in test.comparisons)
        )
    if isinstance(test, (cst.List, cst.Tuple, cst.Set)):
        return all(loop_invariant(e.value, loop_names) for e in test.elements)
    return False


def loop_bound_names(loop: Loop) -> FrozenSet[str]:
    """Every name a loop (re)binds: its targets and whatever its body assigns."""
    names: Set[str] = set()

    def bind(target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                bind(element.value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value)

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(node) is cst.For:
            bind(node.target)
        elif type(node) is cst.Assign:
            for target in node.targets:
                bind(target.target)
        elif type(node) in (cst.AugAssign, cst.AnnAssign):
            bind(node.target)
        elif type(node) is cst.NamedExpr:
            bind(node.target)
        elif type(node) is cst.AsName:
            bind(node.name)
        return True

    walk(loop, enter)
    return frozenset(names)


# ---------------------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoopFacts:
    """What one ``for``/``while`` does, counting same-module helpers it calls."""

    node: Loop
    function: Optional[cst.FunctionDef]
    backward: bool  # runs .backward() (itself or through a helper)
    step: bool  # runs an optimizer step (itself or through a helper)
    is_step_loop: bool  # a training loop with no training loop inside it

    @property
    def is_training(self) -> bool:
        return self.backward or self.step


@dataclass(frozen=True)
class TrainingFacts:
    """Every loop of the module and the same-module helpers that matter."""

    loops: Dict[int, LoopFacts]
    step_functions: FrozenSet[FuncKey]  # run .backward()/.step(), maybe through helpers
    loop_functions: FrozenSet[FuncKey]  # contain a training loop (a train-one-epoch helper)
    grad_functions: FrozenSet[FuncKey]  # need autograd: backward, step, autograd.grad
    sync_helpers: FrozenSet[FuncKey]  # sync with the device unconditionally when called
    optimizer_names: FrozenSet[str]  # dotted names bound to torch.optim constructors

    def loop(self, node: cst.CSTNode) -> Optional[LoopFacts]:
        return self.loops.get(id(node))

    @property
    def training_loops(self) -> Tuple[LoopFacts, ...]:
        return tuple(f for f in self.loops.values() if f.is_training)

    @property
    def has_training_loop(self) -> bool:
        return any(f.is_training for f in self.loops.values())


@dataclass
class _Func:
    key: Optional[FuncKey]
    node: Optional[cst.FunctionDef]
    class_name: Optional[str]
    backward: bool = False
    step: bool = False
    grad: bool = False
    sync: bool = False
    callees: Set[FuncKey] = field(default_factory=set)
    loops: List["_Loop"] = field(default_factory=list)


@dataclass
class _Loop:
    node: Loop
    func: _Func
    parent: Optional["_Loop"]
    backward: bool = False
    step: bool = False
    callees: Set[FuncKey] = field(default_factory=set)
    children: List["_Loop"] = field(default_factory=list)


def walk(root: cst.CSTNode, enter: Callable[[cst.CSTNode, List[cst.CSTNode]], bool], leave=None) -> None:
    """Pre-order walk in source order with the ancestor stack (iterative: deep trees are fine).

    ``enter(node, ancestors)`` returns False to skip the node's children.
    """
    stack: List[cst.CSTNode] = []
    # A node to enter, or None: leave the innermost node entered (``stack[-1]``).
    todo: List[Optional[cst.CSTNode]] = [root]
    while todo:
        node = todo.pop()
        if node is None:
            node = stack.pop()
            if leave is not None:
                leave(node, stack)
            continue
        if enter(node, stack) is False:
            continue
        stack.append(node)
        todo.append(None)
        children = child_nodes(node)
        children.reverse()
        todo.extend(children)


_SYNC_SOURCE = re.compile(r"\.(item|cpu|tolist)\(|synchronize")


def could_train(source: str) -> bool:
    """Cheap pre-screen: can this text hold a training loop at all?"""
    return "backward" in source or ".step(" in source


def training_facts(context: "FileContext") -> TrainingFacts:
    """Compute the training facts of the module (use ``context.fact(training_facts)``)."""
    if not could_train(context.source):
        return TrainingFacts({}, frozenset(), frozenset(), frozenset(), frozenset(), frozenset())
    return _Builder(context).build()


class _Builder:
    def __init__(self, context: "FileContext") -> None:
        self.context = context
        self.funcs: Dict[FuncKey, List[_Func]] = {}
        self.all_funcs: List[_Func] = []
        self.loops: List[_Loop] = []
        self.frames: List[Tuple[_Func, List[_Loop]]] = []
        self.classes: List[Optional[str]] = [None]
        self.optimizer_names: Set[str] = set()
        self.want_sync = bool(_SYNC_SOURCE.search(context.source))

    def qualname_at(self, stack: List[cst.CSTNode]) -> Callable[[cst.CSTNode], Optional[str]]:
        scope = self.context.scope_for(stack[-1] if stack else self.context.module, stack)
        return lambda expr: self.context.qualname(expr, scope)

    def build(self) -> TrainingFacts:
        module_func = _Func(None, None, None)
        self.all_funcs.append(module_func)
        self.frames.append((module_func, []))
        walk(self.context.module, self.enter, self.leave)
        return self.freeze()

    # -- walk callbacks -------------------------------------------------------------------
    def enter(self, node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) is cst.ClassDef:
            self.classes.append(node.name.value)
        elif type(node) is cst.FunctionDef:
            owner = self.classes[-1] if stack and self._directly_in_class(stack) else None
            func = _Func((owner, node.name.value), node, owner or self._enclosing_class())
            self.funcs.setdefault(func.key, []).append(func)  # type: ignore[arg-type]
            self.all_funcs.append(func)
            self.frames.append((func, []))
        elif type(node) in (cst.For, cst.While):
            func, loops = self.frames[-1]
            parent = loops[-1] if loops else None
            loop = _Loop(node, func, parent)
            if parent is not None:
                parent.children.append(loop)
            func.loops.append(loop)
            self.loops.append(loop)
            loops.append(loop)
        elif type(node) is cst.Call:
            self.on_call(node, stack)
        elif type(node) is cst.Assign and type(node.value) is cst.Call:
            self.on_assign(node, stack)
        return True

    def leave(self, node: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
        if type(node) is cst.ClassDef:
            self.classes.pop()
        elif type(node) is cst.FunctionDef:
            self.frames.pop()
        elif type(node) in (cst.For, cst.While):
            self.frames[-1][1].pop()

    def _directly_in_class(self, stack: List[cst.CSTNode]) -> bool:
        # FunctionDef <- IndentedBlock <- ClassDef (decorators do not change the parents)
        return len(stack) >= 2 and type(stack[-2]) is cst.ClassDef

    def _enclosing_class(self) -> Optional[str]:
        func = self.frames[-1][0]
        return func.class_name

    def on_assign(self, node: cst.Assign, stack: List[cst.CSTNode]) -> None:
        call = node.value
        assert type(call) is cst.Call
        last = last_name(call.func)
        if last is None or not last[:1].isupper():
            return
        name = self.qualname_at(stack)(call.func)
        if name is None or not name.startswith("torch.optim.") or "lr_scheduler" in name:
            return
        for target in node.targets:
            dotted = dotted_name(target.target)
            if dotted is not None:
                self.optimizer_names.add(dotted)

    def on_call(self, call: cst.Call, stack: List[cst.CSTNode]) -> None:
        func, loops = self.frames[-1]
        name = method_name(call) or (call.func.value if type(call.func) is cst.Name else None)
        backward = step = grad = False
        if name in BACKWARD_ATTRS or name == "backward":
            backward = is_backward_call(call, self.qualname_at(stack))
        elif name == "step":
            step = is_optimizer_step(call, frozenset(self.optimizer_names))
        elif name == "grad":
            grad = is_autograd_grad(call, self.qualname_at(stack))
        if backward or step or grad:
            func.backward |= backward
            func.step |= step
            func.grad = True
            for loop in loops:
                loop.backward |= backward
                loop.step |= step
        key = callee_key(call, func.class_name)
        if key is not None:
            func.callees.add(key)
            for loop in loops:
                loop.callees.add(key)
        if self.want_sync and not func.sync and func.node is not None and is_sync_call(call, self.qualname_at(stack)):
            start = _index_of(stack, func.node)
            if start is not None and not guarded_between([*stack[start:], call]):
                func.sync = True

    # -- closing: helpers through the call graph, then frozen facts ----------------------
    def _closure(self, seed: Callable[[_Func], bool]) -> Set[FuncKey]:
        """Keys of functions for which ``seed`` holds, directly or through callees."""
        result: Set[FuncKey] = {f.key for f in self.all_funcs if f.key is not None and seed(f)}
        changed = True
        while changed:
            changed = False
            for f in self.all_funcs:
                if f.key is None or f.key in result:
                    continue
                if f.callees & result:
                    result.add(f.key)
                    changed = True
        return result

    def freeze(self) -> TrainingFacts:
        backward_fns = self._closure(lambda f: f.backward)
        step_fns = self._closure(lambda f: f.step)
        grad_fns = self._closure(lambda f: f.grad)
        training = {
            id(loop): (loop.backward or bool(loop.callees & backward_fns), loop.step or bool(loop.callees & step_fns))
            for loop in self.loops
        }

        def trains(loop: _Loop) -> bool:
            return any(training[id(loop)])

        loop_fns = self._closure(lambda f: any(trains(loop) for loop in f.loops))

        def nested_steps(loop: _Loop, own_step: bool) -> bool:
            """A nested training loop that runs the optimizer steps (a batch loop inside an
            epoch loop). A nested loop that only runs backward inside a loop that steps is
            gradient accumulation over micro-batches: the outer loop stays the step loop."""
            return any(
                (trains(child) and (training[id(child)][1] or not own_step)) or nested_steps(child, own_step)
                for child in loop.children
            )

        facts: Dict[int, LoopFacts] = {}
        for loop in self.loops:
            backward, step = training[id(loop)]
            is_step = (backward or step) and not nested_steps(loop, step) and not (loop.callees & loop_fns)
            facts[id(loop.node)] = LoopFacts(loop.node, loop.func.node, backward, step, is_step)
        sync = {f.key for f in self.all_funcs if f.key is not None and f.sync}
        sync -= loop_fns
        return TrainingFacts(
            facts,
            frozenset(backward_fns | step_fns),
            frozenset(loop_fns),
            frozenset(grad_fns | backward_fns | step_fns),
            frozenset(sync),
            frozenset(self.optimizer_names),
        )


def _index_of(stack: Sequence[cst.CSTNode], node: cst.CSTNode) -> Optional[int]:
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is node:
            return index
    return None


# ---------------------------------------------------------------------------------------
# Device-to-host syncs (TPF202)
# ---------------------------------------------------------------------------------------
def is_sync_call(call: cst.Call, qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``t.item()``, ``t.cpu()``, ``t.tolist()``, ``t.numpy(force=True)``, ``t.to("cpu")``,
    ``torch.cuda.synchronize()``: calls that wait for the device.

    ``t.numpy()`` alone is not one: it only works on CPU tensors, so any wait happened at the
    ``.cpu()`` before it. Calls on a receiver that already synced (``.cpu().tolist()``) are
    not counted twice.
    """
    name = method_name(call)
    if name is None:
        return False
    receiver = call_receiver(call)
    if name in _SYNC_METHODS:
        if call.args or _chain_synced(receiver) or _on_host(receiver, qualname):
            return False
        return True
    if name == "numpy":
        return any(a.keyword is not None and a.keyword.value == "force" and literal_value(a.value) is True for a in call.args)
    if name == "to":
        return (
            len(call.args) == 1
            and call.args[0].keyword is None
            and literal_value(call.args[0].value) == "cpu"
            and not _chain_synced(receiver)
        )
    if name == "synchronize":
        return qualname(call.func) == "torch.cuda.synchronize"
    return False


_HOST_FACTORIES = frozenset(
    f"torch.{n}" for n in ("randperm", "arange", "randint", "rand", "randn", "zeros", "ones", "tensor", "empty", "full", "linspace")
)


def _on_host(expr: Optional[cst.BaseExpression], qualname: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """Whether a method chain starts at a value known to live on the host: a NumPy call,
    or a torch factory without ``device=`` (``torch.randperm(n).tolist()``)."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, (cst.Name, cst.Attribute)):
                name = qualname(expr.func) or ""
                if name.startswith("numpy."):
                    return True
                if name in _HOST_FACTORIES:
                    return not any(a.keyword is not None and a.keyword.value == "device" for a in expr.args)
            expr = expr.func
        else:
            expr = expr.value
    return False


def _chain_synced(expr: Optional[cst.BaseExpression]) -> bool:
    """Whether a method chain already went through ``.cpu()``/``.item()``/``.to("cpu")``."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            name = method_name(expr)
            if name in ("cpu", "item", "tolist", "numpy"):
                return True
            if name == "to" and expr.args and literal_value(expr.args[0].value) == "cpu":
                return True
            expr = expr.func
        else:
            expr = expr.value
    return False


def step_loop_around(context: "FileContext", ancestors: Sequence[cst.CSTNode]) -> Optional[Tuple[int, LoopFacts]]:
    """The nearest training loop around a node (within its own function), if it is a step
    loop and the node is in its body: (index of the loop in ``ancestors``, its facts).

    ``ancestors`` runs from the module down to the node's parent.
    """
    facts = context.fact(training_facts)
    if not facts.loops:
        return None
    for index in range(len(ancestors) - 1, -1, -1):
        node = ancestors[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(node, (cst.For, cst.While)):
            loop = facts.loop(node)
            if loop is None or not loop.is_training:
                continue
            child = ancestors[index + 1] if index + 1 < len(ancestors) else None
            if not loop.is_step_loop or child is not node.body:
                return None
            return index, loop
    return None


# ---------------------------------------------------------------------------------------
# No-grad regions (TPF203)
# ---------------------------------------------------------------------------------------
def under_no_grad(context: "FileContext", ancestors: Sequence[cst.CSTNode]) -> bool:
    """Whether a node with these ancestors runs with autograd recording off: inside a
    ``with`` of a no-grad context manager or a function decorated with one, or a decorator
    that is a same-module function which itself enters no-grad."""
    for index, node in enumerate(ancestors):
        if isinstance(node, cst.With):
            if index + 1 < len(ancestors) and ancestors[index + 1] is not node.body:
                continue
            scope = context.scope_for(node, ancestors[:index])
            if any(is_no_grad_expr(item.item, lambda e: context.qualname(e, scope)) for item in node.items):
                return True
        elif isinstance(node, cst.FunctionDef) and decorated_no_grad(context, node, ancestors[:index]):
            return True
    return False


def decorated_no_grad(context: "FileContext", node: cst.FunctionDef, ancestors: Sequence[cst.CSTNode]) -> bool:
    if not node.decorators:
        return False
    scope = context.scope_for(node, ancestors)
    wrappers = context.fact(no_grad_wrappers)
    for decorator in node.decorators:
        expr = decorator.decorator
        if is_no_grad_expr(expr, lambda e: context.qualname(e, scope)):
            return True
        target = expr.func if isinstance(expr, cst.Call) else expr
        if isinstance(target, cst.Name) and target.value in wrappers:
            return True
    return False


def no_grad_wrappers(context: "FileContext") -> FrozenSet[str]:
    """Names of module-level functions whose body enters no-grad: decorators that wrap it."""
    names: Set[str] = set()
    for statement in context.module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        found: List[bool] = []
        scope = context.scope_for(statement, [context.module])

        def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
            if found:
                return False
            if type(node) is cst.With and any(
                is_no_grad_expr(item.item, lambda e: context.qualname(e, scope)) for item in node.items
            ):
                found.append(True)
            elif type(node) is cst.Call and is_no_grad_expr(node, lambda e: context.qualname(e, scope)):
                found.append(True)
            return True

        walk(statement.body, enter)
        if found:
            names.add(statement.name.value)
    return frozenset(names)


# ---------------------------------------------------------------------------------------
# Evaluation loops (TPF203)
# ---------------------------------------------------------------------------------------
# Functions that look like evaluation by name: evaluate, validate_epoch, run_eval, test (but
# not test_*: those are pytest tests).
_EVAL_FUNCTION = re.compile(
    r"^(?:eval|evaluate|evaluation|valid|validate|validation|val|test|infer|inference|predict)"
    r"(?:_\w*)?$|_(?:eval|evaluate|evaluation|valid|validate|validation|val|test|inference|predict)$"
)


def is_eval_function_name(name: str) -> bool:
    lowered = name.lower().lstrip("_")
    if lowered.startswith("test_") or lowered.endswith("_step"):
        return False
    return bool(_EVAL_FUNCTION.search(lowered))


# Hooks that frameworks (Lightning, HF) already run under no_grad.
FRAMEWORK_HOOKS = frozenset(
    {
        "validation_step",
        "test_step",
        "predict_step",
        "validation_epoch_end",
        "test_epoch_end",
        "on_validation_epoch_end",
        "on_test_epoch_end",
        "prediction_step",
        "evaluation_loop",
        "prediction_loop",
    }
)
# The last name of a callee that is a model: model, net, self.model, netG, base_model.
MODEL_NAME = re.compile(r"^(?:model|net|network)\w*$|(?:^|_)(?:model|net)$", re.IGNORECASE)
GRAD_ATTRS = frozenset(
    {
        "grad",
        "requires_grad",
        "requires_grad_",
        "enable_grad",
        "retain_grad",
        "zero_grad",
        "register_hook",
        "backward",
        "jacobian",
        "hessian",
        "vjp",
        "jvp",
    }
)


def needs_grad_name(name: str) -> bool:
    """Names that mean a loop trains: an optimizer, a loss scaler (timm's NativeScaler
    runs backward and step when called), a gradient."""
    lowered = name.lower()
    return is_optimizer_name(name) or "scaler" in lowered or lowered in GRAD_ATTRS


@dataclass(frozen=True)
class EvalLoop:
    """A loop that runs a model forward for evaluation with autograd recording on."""

    node: Loop
    function: Optional[cst.FunctionDef]
    has_yield: bool  # wrapping a generator's loop in no_grad would leak into its consumer


@dataclass
class _EFrame:
    node: Optional[cst.FunctionDef]
    class_name: Optional[str]
    eval_named: bool  # named like evaluation and never runs .backward()
    loops: List["_ELoop"] = field(default_factory=list)
    mode: Dict[str, str] = field(default_factory=dict)
    # The conditional branch the last mode call of each model stood in (None: unconditional).
    branch: Dict[str, Optional[cst.CSTNode]] = field(default_factory=dict)


@dataclass
class _ELoop:
    node: Loop
    frame: _EFrame
    parent: Optional["_ELoop"]
    end: int = 0  # walk order at which the loop ends
    forward: bool = False
    needs_grad: bool = False
    has_yield: bool = False


def could_evaluate(source: str) -> bool:
    return ".eval(" in source or ".train(" in source or bool(
        re.search(r"def _*(eval|valid|val|test|infer|predict)", source)
    )


def evaluation_loops(context: "FileContext") -> Tuple[EvalLoop, ...]:
    """The loops TPF203 reports (use ``context.fact(evaluation_loops)``).

    A loop qualifies when it calls a model that is in eval mode at that point of the same
    function (``model.eval()`` / ``model.train(False)`` seen before, in source order), or,
    in a function named like evaluation that never runs ``.backward()``, a callee named like
    a model (``model``, ``net``), outside any no-grad region; and nothing in the loop needs
    gradients (``.backward()``, an optimizer step, ``torch.autograd.grad``, ``.grad``,
    ``requires_grad``, ``enable_grad``, a same-module helper that does). Only the outermost
    such loop is reported. Silent for a function that same-module code calls inside
    no-grad (by name, whatever the receiver), for framework hooks, and for modules that
    switch grad off globally (a bare ``torch.set_grad_enabled(False)``).
    """
    if not could_evaluate(context.source):
        return ()
    return _EvalWalk(context).run()


class _EvalWalk:
    def __init__(self, context: "FileContext") -> None:
        self.context = context
        self.grad_fns = context.fact(training_facts).grad_functions
        self.frames: List[_EFrame] = [_EFrame(None, None, False)]
        self.loops: List[_ELoop] = []
        self.no_grad_called: Set[str] = set()
        self.globally_off = False
        self.classes: List[Optional[str]] = [None]
        self.no_grad_regions: Set[int] = set()  # ids of With/FunctionDef nodes that disable grad
        self.no_grad_depth = 0
        self.entered: List[int] = []  # ids of bodies that raised no_grad_depth
        self.order = 0
        # (walk order, frame, enclosing loops) of each call that needs gradients.
        self.grad_events: List[Tuple[int, _EFrame, Tuple[_ELoop, ...]]] = []

    def qualname_at(self, stack: List[cst.CSTNode]) -> Callable[[cst.CSTNode], Optional[str]]:
        scope = self.context.scope_for(self.context.module, stack)
        return lambda expr: self.context.qualname(expr, scope)

    def mark(self, attr: str) -> None:
        frame = self.frames[-1]
        for loop in frame.loops:
            setattr(loop, attr, True)
        if attr == "needs_grad":
            self.grad_events.append((self.order, frame, tuple(frame.loops)))

    def run(self) -> Tuple[EvalLoop, ...]:
        walk(self.context.module, self.enter, self.leave)
        return () if self.globally_off else self.results()

    def enter(self, node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        self.order += 1
        if stack and id(stack[-1]) in self.no_grad_regions and node is getattr(stack[-1], "body", None):
            self.no_grad_depth += 1
            self.entered.append(id(node))
        frame = self.frames[-1]
        if type(node) is cst.ClassDef:
            self.classes.append(node.name.value)
        elif type(node) is cst.FunctionDef:
            name = node.name.value
            eval_named = is_eval_function_name(name) and not _runs_backward(node)
            owner = self.classes[-1] if len(stack) >= 2 and type(stack[-2]) is cst.ClassDef else frame.class_name
            self.frames.append(_EFrame(node, owner, eval_named))
            if decorated_no_grad(self.context, node, stack):
                self.no_grad_regions.add(id(node))
        elif type(node) is cst.Lambda:
            return False
        elif type(node) is cst.With:
            qualname = self.qualname_at(stack)
            if any(is_no_grad_expr(item.item, qualname) for item in node.items):
                self.no_grad_regions.add(id(node))
        elif type(node) in (cst.For, cst.While):
            loop = _ELoop(node, frame, frame.loops[-1] if frame.loops else None)
            self.loops.append(loop)
            frame.loops.append(loop)
        elif type(node) is cst.Yield:
            self.mark("has_yield")
        elif type(node) is cst.Attribute and needs_grad_name(node.attr.value):
            self.mark("needs_grad")
        elif type(node) is cst.Name and needs_grad_name(node.value):
            self.mark("needs_grad")
        elif type(node) is cst.Expr and type(node.value) is cst.Call:
            call = node.value
            if last_name(call.func) == "set_grad_enabled" and is_no_grad_expr(call, self.qualname_at(stack)):
                self.globally_off = True
        elif type(node) is cst.Call:
            self.on_call(node, stack, frame)
        return True

    def leave(self, node: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
        if self.entered and self.entered[-1] == id(node):
            self.entered.pop()
            self.no_grad_depth -= 1
        if type(node) is cst.ClassDef:
            self.classes.pop()
        elif type(node) is cst.FunctionDef:
            self.frames.pop()
        elif type(node) in (cst.For, cst.While):
            self.frames[-1].loops.pop().end = self.order

    def on_call(self, call: cst.Call, stack: List[cst.CSTNode], frame: _EFrame) -> None:
        name = method_name(call)
        receiver = call_receiver(call)
        owner = dotted_name(receiver) if receiver is not None else None
        if name in ("eval", "train") and owner:
            if name == "eval":
                mode = "eval" if not call.args else "unknown"
            else:
                value = literal_value(call.args[0].value) if call.args else True
                mode = "eval" if value is False else ("train" if value is True else "unknown")
            frame.mode[owner] = mode
            frame.branch[owner] = _innermost_branch(stack, frame.node)
            return
        called = last_name(call.func)
        if called is not None and self.no_grad_depth:
            self.no_grad_called.add(called)
        key = callee_key(call, frame.class_name)
        if (
            name in BACKWARD_ATTRS
            or (name == "step" and is_optimizer_step(call))
            or (called == "grad" and is_autograd_grad(call, self.qualname_at(stack)))
            or (key is not None and key in self.grad_fns)
        ):
            self.mark("needs_grad")
            return
        if not frame.loops or self.no_grad_depth:
            return
        target = receiver if name == "forward" else call.func
        dotted = dotted_name(target) if type(target) in (cst.Name, cst.Attribute) else None
        if dotted is None:
            return
        mode = frame.mode.get(dotted)
        branch = frame.branch.get(dotted)
        if mode == "eval" and branch is not None and not any(node is branch for node in stack):
            mode = "unknown"  # `if training: model.train() else: model.eval()`: not known here
        model_like = frame.eval_named and mode is None and bool(MODEL_NAME.match(dotted.rsplit(".", 1)[-1]))
        if mode == "eval" or model_like:
            self.mark("forward")

    def _backward_after(self, loop: _ELoop) -> bool:
        """Whether the function needs gradients after the loop at the loop's own level (not
        in a separate training loop): outputs collected in the loop may be differentiated."""
        around: List[_ELoop] = []
        parent = loop.parent
        while parent is not None:
            around.append(parent)
            parent = parent.parent
        for order, frame, loops in self.grad_events:
            if frame is loop.frame and order > loop.end and all(any(l is a for a in around) for l in loops):
                return True
        return False

    def results(self) -> Tuple[EvalLoop, ...]:
        candidates = {id(loop) for loop in self.loops if loop.forward and not loop.needs_grad}
        result = []
        for loop in self.loops:
            if id(loop) not in candidates:
                continue
            parent = loop.parent
            while parent is not None and id(parent) not in candidates:
                parent = parent.parent
            if parent is not None:
                continue
            function = loop.frame.node
            if function is not None:
                name = function.name.value
                if name in FRAMEWORK_HOOKS or name in self.no_grad_called:
                    continue
            if self._backward_after(loop):
                continue
            result.append(EvalLoop(loop.node, function, loop.has_yield))
        return tuple(result)


def _innermost_branch(stack: Sequence[cst.CSTNode], function: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The innermost conditional branch (an ``if``'s body or ``else``, an ``except``) that
    the node on top of ``stack`` stands in, within its function; None when unconditional."""
    for index in range(len(stack) - 1, 0, -1):
        parent, child = stack[index - 1], stack[index]
        if parent is function:
            return None
        if isinstance(parent, cst.If) and child is not parent.test and not _is_main_guard(parent):
            return child
        if isinstance(parent, cst.ExceptHandler):
            return parent
    return None


def _runs_backward(function: cst.FunctionDef) -> bool:
    """Whether a function runs ``.backward()`` or touches ``.grad`` anywhere."""
    found: List[bool] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if found:
            return False
        if type(node) is cst.Call and method_name(node) in BACKWARD_ATTRS:
            found.append(True)
        elif type(node) is cst.Attribute and node.attr.value in GRAD_ATTRS:
            found.append(True)
        return True

    walk(function.body, enter)
    return bool(found)


# ---------------------------------------------------------------------------------------
# Where a finding would be noise
# ---------------------------------------------------------------------------------------
def enclosing_function(ancestors: Sequence[cst.CSTNode]) -> Optional[cst.FunctionDef]:
    for node in reversed(ancestors):
        if isinstance(node, cst.FunctionDef):
            return node
    return None


def is_test_path(path: PurePath) -> bool:
    """A file pytest collects tests from (``testfiles.is_test_file``)."""
    return is_test_file(path)


def in_test_code(ancestors: Sequence[cst.CSTNode], path: PurePath) -> bool:
    """Inside a unittest-style ``Test*`` class of a file that is not a test file.

    Test files themselves follow the ``test-files`` setting, the same for every rule (the
    engine skips them by default, see ``testfiles``); a rule that runs in one lints it like
    any file. Outside test files, ``test_img(model, loader)`` is research code's evaluation
    function, not a unit test, but a ``class TestX(unittest.TestCase)`` is still a test."""
    if is_test_file(path):
        return False
    return any(isinstance(node, cst.ClassDef) and node.name.value.startswith("Test") for node in ancestors)
