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
accumulation) is a step loop, and so is the inner loop. A loop whose own body runs backward
and an optimizer step around inner training loops (a GAN's generator step after its critic's
loop) is ``alternating``: a step loop for its own statements (``step_loop_around``), not for
the rules that ask ``is_step_loop``.

The walk follows ``f(...)`` (a module-level function here) and ``self.f(...)`` by name.
With a project index, any other call of project code that trains (what it runs is the value
engine's dispatch, ``model.optimize_parameters()``, ``model(x)``; whether it trains,
``project.call_values.training_reach``) makes the loops around it and the function it
stands in train, as a same-module step helper would; one that loops over steps makes them
epoch loops and an epoch helper.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import (
    Callable,
    Dict,
    FrozenSet,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.walk import child_nodes
from ...context import FileContext
from .classifiers import (
    BACKWARD_ATTRS,
    FuncKey,
    builds_from_parameters,
    Loop,
    callee_key,
    is_autograd_grad,
    is_backward_call,
    is_optimizer_step,
    last_name,
    method_name,
)
from ...project.call_values import may_run_project_code, training_reach
from .guards import guarded_between
from .host_syncs import is_sync_call


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
    # runs backward and an optimizer step in its own body around inner training loops (a
    # GAN's generator step after its critic's loop): a step loop for its own statements
    alternating: bool = False

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

    @functools.cached_property
    def training_loops(self) -> Tuple[LoopFacts, ...]:
        return tuple(f for f in self.loops.values() if f.is_training)

    @functools.cached_property
    def has_training_loop(self) -> bool:  # asked at every call TPF202 visits
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
    epoch: bool = False  # calls a project function of another module that loops over steps
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
    epoch_call: bool = False  # calls a project function in another module that loops over steps
    own_step: bool = False  # steps an optimizer in its own body (not in a nested loop)
    own_backward: bool = False  # runs backward in its own body (not in a nested loop)


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


# Names of step functions that may live in another module (``trainer.train_step(x)``).
# ``trainer.train(x, y)``: a ``train`` method handed data (``screens._TRAIN_WITH_DATA``, wider).
_STEP_WORDS = re.compile(r"step\(|\.update\(|\.learn\(|optimi[sz]e\w*\(|_batch\(|\.train\((?!\s*(?:\)|True\b|False\b))")
_SYNC_SOURCE = re.compile(r"\.(item|cpu|tolist)\(|synchronize")


def could_train(source: str) -> bool:
    """Cheap pre-screen: can this text hold a training loop at all?"""
    return "backward" in source or ".step(" in source


def training_facts(context: "FileContext") -> TrainingFacts:
    """Compute the training facts of the module (use ``context.fact(training_facts)``)."""
    if not could_train(context.source) and (context.project is None or not _STEP_WORDS.search(context.source)):
        return TrainingFacts({}, frozenset(), frozenset(), frozenset(), frozenset(), frozenset())
    return TrainingFactsBuilder(context).build()


class TrainingFactsBuilder:
    def __init__(self, context: "FileContext") -> None:
        self.context = context
        self.funcs: Dict[FuncKey, List[_Func]] = {}
        self.all_funcs: List[_Func] = []
        self.loops: List[_Loop] = []
        self.frames: List[Tuple[_Func, List[_Loop]]] = []
        self.classes: List[Optional[str]] = [None]
        self.optimizer_names: Set[str] = set()
        self.pending: List[Tuple[cst.Call, cst.CSTNode, _Func, List[_Loop]]] = []
        self.want_sync = bool(_SYNC_SOURCE.search(context.source))

    def qualname_at(self, stack: List[cst.CSTNode]) -> Callable[[cst.CSTNode], Optional[str]]:
        scope = self.context.scope_for(stack[-1] if stack else self.context.module, stack)
        return lambda expr: self.context.qualname(expr, scope)

    def build(self) -> TrainingFacts:
        module_func = _Func(None, None, None)
        self.all_funcs.append(module_func)
        self.frames.append((module_func, []))
        walk(self.context.module, self.enter, self.leave)
        for pending in self.pending:
            self.on_pending_call(*pending)
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
        if not builds_from_parameters(call):
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
            if loops:
                loops[-1].own_step |= step
                loops[-1].own_backward |= backward
        elif self.context.project is not None and (loops or func.node is not None):
            self.on_project_call(call, stack, func, loops)
        key = callee_key(call, func.class_name)
        if key is not None:
            func.callees.add(key)
            for loop in loops:
                loop.callees.add(key)
        if self.want_sync and not func.sync and func.node is not None and is_sync_call(call, self.qualname_at(stack)):
            start = _index_of(stack, func.node)
            if start is not None and not guarded_between([*stack[start:], call]):
                func.sync = True

    def on_project_call(self, call: cst.Call, stack: List[cst.CSTNode], func: _Func, loops: List["_Loop"]) -> None:
        """A call of project code that runs a training step, itself or through the project
        functions it calls (``trainer.train_step(x)``, ``model.optimize_parameters()``,
        ``ppo_step(...)`` from ``core/``; ``call_values.dispatch`` says what it runs): the
        loops around the call train, and so does the function it stands in (a loop that
        calls that function trains, as with any same-module step helper). When the callee
        loops over steps itself, the loops around it are epoch loops and the function is an
        epoch helper. ``f(...)`` / ``self.f(...)`` of this module are the walk's own."""
        kind = type(call.func)
        if kind not in (cst.Name, cst.Attribute, cst.Subscript) or len(stack) < 2:
            return
        name = dotted_name(call.func) if kind is not cst.Subscript else ""
        if name is not None and may_run_project_code(name, self.qualname_at(stack)(call.func)):
            self.pending.append((call, stack[1], func, list(loops)))  # once the walk knows every def

    def on_pending_call(self, call: cst.Call, statement: cst.CSTNode, func: _Func, loops: List["_Loop"]) -> None:
        if callee_key(call, func.class_name) in self.funcs:
            return  # the walk follows these by name
        values = self.context.values()
        callees = None if values is None else values.callees(call, statement, objects=False)
        if not callees:
            return
        reaches = [training_reach(values.engine, d) for d in callees]
        if any(reach is None for reach in reaches):
            return
        epoch = any(reaches)
        func.backward = func.step = True
        func.epoch |= epoch
        for loop in loops:
            loop.backward = loop.step = True
            loop.epoch_call |= epoch

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

        loop_fns = self._closure(lambda f: f.epoch or any(trains(loop) for loop in f.loops))

        def nested_steps(loop: _Loop, own_step: bool) -> bool:
            """A nested training loop that runs the optimizer steps (a batch loop inside an
            epoch loop). A nested loop that only runs backward inside a loop that steps is
            gradient accumulation over micro-batches: the outer loop stays the step loop."""
            backward = training[id(loop)][0]
            return any(
                (trains(child) and (training[id(child)][1] or not own_step) and not (backward and not training[id(child)][0]))
                or nested_steps(child, own_step)
                for child in loop.children
            )

        facts: Dict[int, LoopFacts] = {}
        for loop in self.loops:
            backward, step = training[id(loop)]
            # A loop that steps an optimizer itself stays the step loop around a helper with
            # its own backward loop (an adversarial attack, an inner optimisation).
            helpers = bool(loop.callees & loop_fns) or loop.epoch_call
            # A loop whose own body runs backward and an optimizer step is a step loop for
            # its own statements, around inner training loops too (a GAN's generator step
            # after its critic's inner loop).
            is_step = (backward or step) and not nested_steps(loop, step) and (loop.own_step or not helpers)
            alternating = not is_step and loop.own_backward and loop.own_step
            facts[id(loop.node)] = LoopFacts(loop.node, loop.func.node, backward, step, is_step, alternating)
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
            if not (loop.is_step_loop or loop.alternating) or child is not node.body:
                return None
            return index, loop
    return None
