"""Which project code a call runs, and what that code does: the value engine's call and
method dispatch (``values``), asked by the training rules (TPF202, the TPF2xx training
loops, TPF403).

A call's callee is a value like any other: ``train_step(x)`` (a project function, through
imports and module aliases: ``at.scalar(loss)``), ``trainer.step(b)`` / ``self.mp_trainer
.optimize(opt)`` (a method of an ``Instance``, inherited or overridden by a project
subclass, the receiver followed through locals, parameters, attributes and factories),
``model(x)`` / ``self.net(x)`` / ``criterion_list[2](f)`` (``__call__``, else ``forward``
of a project ``nn.Module``). ``dispatch`` gives every project definition the call may
run, or None when any is not known.

What such a definition does is read from its ``ast`` body once per index generation
(``effects``): whether it runs a training step (``training_reach``: one step, or a loop
of them, any depth; not when its backward runs only in a callback handed to
``scipy.optimize``, which needs host values) and whether it syncs with the device on
every call (``syncs_every_call``), its own callees found by the same dispatch in its own
scope. Every fact is memoised in the engine, so its reads are the finding's cache
dependencies; depth is bounded (``MAX_DEPTH``) and recursion cut.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .allocator_calls import is_empty_cache, moves_new_module
from .bodies import memoised_body
from .forms import Attr, Form, FormBuilder, Ref, dotted, qualify
from .forward_tensors import forward_tensors, implicit_sync
from .kinds import Instance, OneOf, ProjectCallable, Unknown, present
from .parameter_loops import bound_once, over_parameters, walked_parameter
from .resolution import Definition
from .scopes import DEEP
from .summary import FunctionSummary
from .sync_calls import is_sync
from .values import ValueEngine, Where

MAX_DEPTH = 4
MAX_TARGETS = 8  # a call that may run more project methods than this is not followed
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SCHEDULER = re.compile(r"sched", re.IGNORECASE)
# opt, opts, optG, opt_d, opt1, g_opt, genOpt (``optim`` anywhere is checked separately).
_OPTIMIZER = re.compile(r"^opts?(?:$|_|\d|[A-Z])|_opts?(?:$|_|\d)|[a-z]Opts?(?:$|_|\d|[A-Z])")
_DEVICE_TESTS = frozenset({"torch.cuda.is_available", "torch.backends.mps.is_available", "torch.accelerator.is_available"})


def is_optimizer_name(name: str) -> bool:
    """``optimizer``, ``opt``, ``optG``, ``g_optim``, ``self.opt_d``; never a scheduler."""
    if _SCHEDULER.search(name):
        return False
    return bool(_OPTIMIZER.search(name)) or "optim" in name.lower()


@dataclass(frozen=True)
class Site:
    """A call in a project function's body: its line, its callee's form, and whether it
    runs on every call of the function (``always``) or inside a loop of it."""

    line: int
    func: Form
    always: bool
    in_loop: bool


@dataclass(frozen=True)
class BodyFacts:
    """What one project function's own body does, read from its lines."""

    has_loop: bool  # a loop of its own: a train-one-epoch helper, not one step
    syncs: Tuple[int, ...]  # lines of device-to-host syncs that run on every call
    sites: Tuple[Site, ...]  # the calls it makes (in nested defs: not)
    loop_trains: bool = False  # runs backward or an optimizer step inside a loop of its own
    trains_here: bool = False  # runs backward or an optimizer step itself, not in a nested def
    host_optimised: bool = False  # hands a function it defines to ``scipy.optimize``
    empties: Tuple[int, ...] = ()  # lines of ``torch.cuda.empty_cache()`` calls that run on every call
    builds_model: bool = False  # moves a module it constructs to the device (``Net(...).cuda()``)
    walk_syncs: Tuple[Tuple[str, int], ...] = ()  # (parameter, line): syncs per item of a walked parameter


_BUILTINS = frozenset(
    "len range print zip enumerate isinstance float int str list dict tuple min max sum abs getattr setattr "
    "hasattr super iter next sorted open format round type bool set map any all".split()
)
_LIBRARIES = frozenset(
    "torch numpy math os sys time random logging json copy collections itertools functools re datetime tqdm "
    "torchvision scipy pickle shutil argparse wandb warnings cv2 PIL matplotlib pandas sklearn apex "
    "transformers timm tensorboardX yaml".split()
)


def may_run_project_code(spelled: str, qualname: Optional[str]) -> bool:
    """A cheap screen before ``dispatch``: not a builtin, nor a callee named through an
    import of a well-known library."""
    return spelled not in _BUILTINS and (qualname or "").split(".")[0] not in _LIBRARIES


def own_path(context: object) -> str:
    """The linted file's path as the index spells paths (absolute)."""
    return os.path.abspath(str(getattr(context, "path")))


# ---------------------------------------------------------------------------------------
# Dispatch: which project definitions a call runs
# ---------------------------------------------------------------------------------------
def dispatch(engine: ValueEngine, func: Form, where: Where, objects: bool = True) -> Optional[Tuple[Definition, ...]]:
    """Every project function or method a call of ``func`` (read at ``where``) may run; None
    when it is not a project call, or any of its targets is not known. Without ``objects``
    a call of an object (``model(x)``, ``self.net(x)``: its ``forward``) is not followed:
    whether a call trains is asked of every call of a module, and a forward never does."""
    if engine.index is None:
        return None
    # The receiver first: a method of an object is found without reading the attributes
    # its class assigns (``self.step()``); an attribute or a module's function next.
    receiver = None
    if type(func) is Ref and "." in func.name:
        head, _, name = func.name.rpartition(".")
        receiver = engine._eval(Ref(head), where, 0)
    elif type(func) is Attr:
        name = func.attr  # type: ignore[union-attr]
        receiver = engine._eval(func.value, where, 0)  # type: ignore[union-attr]
    receiver = present(receiver)
    if type(receiver) is Instance and engine._method_of(receiver.klass, name) is not None:
        return methods(engine, receiver, name)
    if type(receiver) is OneOf:  # one of several objects: the method of each
        return _each_method(engine, receiver, name)
    if type(func) is Attr or (not objects and type(receiver) is Instance):
        return None
    callee = engine._eval(func, where, 0)
    if type(callee) is ProjectCallable:
        found = callee.definition
        return (found,) if found.kind in ("function", "method") and found.function is not None else None
    if type(callee) is Instance and objects:
        return _call_targets(engine, callee)
    return None


def _each_method(engine: ValueEngine, receiver: OneOf, name: str) -> Optional[Tuple[Definition, ...]]:
    found: List[Definition] = []
    for one in receiver.kinds:
        targets = methods(engine, one, name) if type(one) is Instance else None  # type: ignore[arg-type]
        if targets is None:
            return None
        found.extend(t for t in targets if t not in found)
    return tuple(found) if len(found) <= MAX_TARGETS else None


def _call_targets(engine: ValueEngine, instance: Instance) -> Optional[Tuple[Definition, ...]]:
    """Calling an object: ``__call__``, else ``forward`` of a project ``nn.Module``."""
    if engine._method_of(instance.klass, "__call__") is not None:
        return methods(engine, instance, "__call__")
    if engine.index is not None and engine.index.is_nn_module(instance.klass):
        return methods(engine, instance, "forward")
    return None


def methods(engine: ValueEngine, receiver: Instance, name: str) -> Optional[Tuple[Definition, ...]]:
    """The method ``name`` of the receiver's class (its project bases included), with the
    overrides of project subclasses when the object may be one of theirs."""
    found = engine._method_of(receiver.klass, name)
    if found is None or found.function is None:
        return None
    out = [found]
    if not receiver.exact and engine._scannable():
        for sub in engine.index.resolution.subclasses(receiver.klass):  # type: ignore[union-attr]
            if sub.klass is not None and sub.klass.method(name) is not None:
                override = engine._method_of(sub, name)
                if override is None or override.function is None:
                    return None
                out.append(override)
    return tuple(out) if len(out) <= MAX_TARGETS else None


def _definition_where(engine: ValueEngine, definition: Definition, line: int) -> Optional[Where]:
    scope = engine.scope_of(definition)
    return None if scope is None else Where(definition.path, scope, line, Where(definition.path))


# ---------------------------------------------------------------------------------------
# What a project function's body does
# ---------------------------------------------------------------------------------------
def trains(function: FunctionSummary) -> bool:
    """Runs backward or an optimizer step in its own body (the summary's facts)."""
    if function.backward:
        return True
    for step in function.steps:
        last = step.receiver.rsplit(".", 1)[-1]
        if ("scaler" in last.lower() and step.args) or (last and is_optimizer_name(last)):
            return True
    return False


def body_facts(engine: ValueEngine, definition: Definition) -> Optional[BodyFacts]:
    """The facts of a project function's body (None when its lines cannot be read)."""
    return memoised_body(engine, definition, "body", lambda node, summary: read_body(node, dict(summary.aliases)))


def _targets(engine: ValueEngine, definition: Definition, site: Site, objects: bool = True) -> Optional[Tuple[Definition, ...]]:
    where = _definition_where(engine, definition, site.line)
    return None if where is None else dispatch(engine, site.func, where, objects)


def training_reach(engine: ValueEngine, definition: Definition, depth: int = 0) -> Optional[bool]:
    """Whether calling a project function runs a training step, through the project
    functions it calls (up to ``MAX_DEPTH`` calls away): None when it does not (as far as
    the project shows), False when it runs one step per call, True when it loops over
    steps (backward or a step inside one of its loops, or a training callee called in a
    loop, at any depth). A body that cannot be read counts as looping, which keeps the
    loops around it quiet."""
    function = definition.function
    if function is None or engine.index is None:
        return None
    key = ("reach", definition.path, definition.name, function.line)
    found = engine._memoised(key, lambda: _reach(engine, definition, depth))  # type: ignore[arg-type]
    return None if isinstance(found, Unknown) else found  # type: ignore[return-value]


def _reach(engine: ValueEngine, definition: Definition, depth: int) -> Optional[bool]:
    own = trains(definition.function)  # type: ignore[arg-type]
    facts = body_facts(engine, definition)
    if facts is None:
        return True if own else None
    if own and facts.host_optimised and not facts.trains_here:
        own = False  # backward runs in a callback of a host optimiser, which needs host values
    if facts.loop_trains:
        return True
    found: Optional[bool] = False if own else None
    if depth >= MAX_DEPTH:
        return found
    for site in facts.sites:
        targets = _targets(engine, definition, site, objects=False)
        reaches = [training_reach(engine, target, depth + 1) for target in targets or ()]
        if not reaches or any(reach is None for reach in reaches):
            continue
        if any(reaches) or site.in_loop:
            return True
        found = False
    return found


def syncs_every_call(engine: ValueEngine, definition: Definition, depth: int = 0) -> bool:
    """Whether calling the function always syncs with the device: a sync in its own body
    outside any condition or loop, or such a call of project code whose every target does."""
    return _every_call(engine, definition, "syncs", depth)


def walk_syncs(engine: ValueEngine, definition: Definition) -> FrozenSet[str]:
    """The parameters a function walks with a device-to-host sync per item, on every call
    otherwise (``clip(params)``: ``.item()`` per gradient): a call handing it a model's
    parameters syncs every time."""
    facts = body_facts(engine, definition)
    return frozenset(name for name, _ in facts.walk_syncs) if facts is not None else frozenset()


def empties_cache_every_call(engine: ValueEngine, definition: Definition) -> bool:
    """Whether calling the function always runs ``torch.cuda.empty_cache()`` (or another
    spelling of it), itself or through project code it calls on every call (TPF206). Not a
    function that builds its own model (``Net(cfg).cuda()``): each call frees one model's
    memory before the next model, as a loop over models does."""
    facts = body_facts(engine, definition)
    return facts is not None and not facts.builds_model and _every_call(engine, definition, "empties", 0)


def _every_call(engine: ValueEngine, definition: Definition, what: str, depth: int) -> bool:
    function = definition.function
    if function is None or engine.index is None or depth > MAX_DEPTH:
        return False
    key = (what, definition.path, definition.name, function.line)
    return engine._memoised(key, lambda: _holds(engine, definition, what, depth)) is True  # type: ignore[arg-type]


def _holds(engine: ValueEngine, definition: Definition, what: str, depth: int) -> bool:
    facts = body_facts(engine, definition)
    if facts is None:
        return False
    if getattr(facts, what) and not (what == "empties" and facts.builds_model):
        return True
    for site in facts.sites:
        if not site.always:
            continue
        targets = _targets(engine, definition, site)
        if targets and all(_every_call(engine, target, what, depth + 1) for target in targets):
            return True
    return False


def read_body(node: ast.AST, aliases: Dict[str, str]) -> BodyFacts:
    """The facts of a function's own statements (nested defs and classes left out)."""
    syncs: List[int] = []
    sites: List[Site] = []
    empties: List[int] = []
    flags = {"loop": False, "loop_trains": False, "trains": False, "builds": False}
    local_defs: Set[str] = set()
    handed: Set[str] = set()  # names passed to scipy.optimize (a lambda counts as local)
    in_loop = [0]
    builder = FormBuilder(aliases, DEEP)
    once = bound_once(node)
    arguments = getattr(node, "args", None)
    params = frozenset(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)) if arguments else frozenset()
    walking: List[str] = []  # the parameter whose items the loop being read walks
    walk_syncs: List[Tuple[str, int]] = []
    tensors = forward_tensors(node, aliases)  # a forward's tensors: `int(n)`, `if n > k:` sync

    def visit(child: ast.AST, always: bool) -> None:
        if isinstance(child, _SCOPES):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local_defs.add(child.name)
            return
        if isinstance(child, _LOOPS):
            flags["loop"] = True
            visit(child.iter if isinstance(child, (ast.For, ast.AsyncFor)) else child.test, always)
            in_loop[0] += 1
            # A loop over parameters runs at least once: its body runs on every call.
            every = always and isinstance(child, ast.For) and over_parameters(child.iter, once)
            # A loop over a parameter runs its body per item of what the caller passes.
            walked = None
            if always and not every and not walking and isinstance(child, ast.For):
                walked = walked_parameter(child.iter, node, params)
            if walked:
                walking.append(walked)
            block(child.body, every or bool(walked))
            if walked:
                walking.pop()
            for part in child.orelse:
                visit(part, False)
            in_loop[0] -= 1
            return
        if isinstance(child, ast.Call):
            if _trains_call(child):
                flags["trains"] = True
                flags["loop_trains"] |= bool(in_loop[0])
            name = dotted(child.func)
            if name is not None and (qualify(name, aliases) or "").startswith("scipy.optimize."):
                for arg in (*child.args, *(k.value for k in child.keywords)):
                    handed.add(arg.id if isinstance(arg, ast.Name) else "<lambda>" if isinstance(arg, ast.Lambda) else "")
            if always and (is_sync(child, aliases) or implicit_sync(child, tensors, aliases)):
                if walking:
                    walk_syncs.append((walking[0], child.lineno))
                else:
                    syncs.append(child.lineno)
            if always and not walking and is_empty_cache(child, aliases):
                empties.append(child.lineno)
            flags["builds"] |= moves_new_module(child)
            sites.append(Site(child.lineno, builder.form(child.func), always and not walking, bool(in_loop[0])))
            for grandchild in ast.iter_child_nodes(child):
                visit(grandchild, always)
            return
        if isinstance(child, ast.If):
            visit(child.test, always)
            if always and not walking and implicit_sync(child.test, tensors, aliases):
                syncs.append(child.lineno)
            block(child.body, always and device_test(child.test, aliases))
            block(child.orelse, False)
            return
        if isinstance(child, ast.IfExp):
            visit(child.test, always)
            visit(child.body, False)
            visit(child.orelse, False)
            return
        if isinstance(child, ast.BoolOp):
            visit(child.values[0], always)
            for value in child.values[1:]:
                visit(value, False)
            return
        if isinstance(child, ast.Try) or type(child).__name__ == "TryStar":
            block(child.body, always)  # type: ignore[attr-defined]
            for handler in child.handlers:  # type: ignore[attr-defined]
                block(handler.body, False)
            block(child.orelse, False)  # type: ignore[attr-defined]
            block(child.finalbody, always)  # type: ignore[attr-defined]
            return
        if isinstance(child, _COMPREHENSIONS) or type(child).__name__ == "Match":
            looping = isinstance(child, _COMPREHENSIONS)  # may run no element / no case
            in_loop[0] += looping
            for grandchild in ast.iter_child_nodes(child):
                visit(grandchild, False)
            in_loop[0] -= looping
            return
        if isinstance(child, (ast.With, ast.AsyncWith)):
            for item in child.items:
                visit(item.context_expr, always)
            block(child.body, always)
            return
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild, always)

    def block(statements: Sequence[ast.stmt], always: bool) -> None:
        for statement in statements:
            visit(statement, always)
            if always and not isinstance(statement, _SCOPES) and _may_exit(statement):
                always = False  # `if not self.enabled: return` makes the rest conditional

    block(node.body, True)  # type: ignore[attr-defined]
    return BodyFacts(
        flags["loop"],
        tuple(syncs),
        tuple(sites),
        flags["loop_trains"],
        flags["trains"],
        bool(handed & (local_defs | {"<lambda>"})),
        tuple(empties),
        flags["builds"],
        tuple(walk_syncs),
    )


def device_test(test: ast.AST, aliases: Dict[str, str]) -> bool:
    """An ``if`` that asks whether an accelerator is there, not how far training got:
    ``torch.cuda.is_available()``, ``len(opt.gpu_ids) > 0``, ``args.cuda``, ``use_gpu``,
    ``preds.is_cuda`` (a tensor on the accelerator: where the program runs there, always)."""
    if isinstance(test, ast.Call) and not test.args:
        spelled = dotted(test.func)
        return spelled is not None and qualify(spelled, aliases) in _DEVICE_TESTS
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Call):
        func, args = test.left.func, test.left.args
        return (
            isinstance(func, ast.Name) and func.id == "len" and len(args) == 1
            and (dotted(args[0]) or "").rsplit(".", 1)[-1] in ("gpu_ids", "gpus", "device_ids")
            and isinstance(test.comparators[0], ast.Constant)
        )
    spelled = dotted(test) if isinstance(test, (ast.Name, ast.Attribute)) else None
    return spelled is not None and spelled.rsplit(".", 1)[-1] in ("cuda", "use_cuda", "use_gpu", "gpu", "is_cuda")


def _trains_call(call: ast.Call) -> bool:
    """``x.backward()`` / ``x.manual_backward()``, or ``.step()`` on a receiver named like an
    optimizer (or ``scaler.step(opt)``): the same words as ``trains`` reads in a summary."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in ("backward", "manual_backward"):
        return True
    if func.attr != "step":
        return False
    receiver = dotted(func.value) or ""
    last = receiver.rsplit(".", 1)[-1]
    return ("scaler" in last.lower() and bool(call.args)) or bool(last and is_optimizer_name(last))


def _may_exit(statement: ast.stmt) -> bool:
    """The statement may leave the function, or its loop, normally: a ``return``, ``break``
    or ``continue`` inside it. A ``raise`` (``else: raise TypeError(...)`` checking the
    input) stops the caller's loop too: what follows still runs on every call that returns."""
    if isinstance(statement, _EXITS):
        return False  # the statement itself: nothing after it runs anyway
    stack = list(ast.iter_child_nodes(statement))
    while stack:
        node = stack.pop()
        if isinstance(node, _EXITS) and not isinstance(node, ast.Raise):
            return True
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False
