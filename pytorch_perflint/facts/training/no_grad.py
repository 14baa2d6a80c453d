"""No-grad regions and evaluation loops run outside them (TPF203)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.values import literal_value
from ...context import FileContext
from ...project.forward_calls import MODEL_NAME
from ...project.call_values import own_path
from ...project.kinds import Namespace
from .classifiers import (
    BACKWARD_ATTRS, Loop, call_receiver, callee_key, is_autograd_grad, is_no_grad_expr,
    is_optimizer_step, last_name, method_name, options_like,
)
from .class_layers import class_layers, reads_optimizer_state
from .closures import closure_callees, lambda_binding
from .eval_callers import callers_all_no_grad, callers_evaluate
from .eval_helpers import helper_forward
from .eval_names import MODEL_PARAM, FRAMEWORK_HOOKS, GRAD_ATTRS, called_in_text, is_eval_function_name, needs_grad_name
from .grad_switches import GradOff, covers, switch_grad
from .guards import _is_main_guard
from .loops import training_facts, walk


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
    models: FrozenSet[str] = frozenset()  # parameters named like a model (``model``, ``net``)
    layers: FrozenSet[str] = frozenset()  # ``self.lstm``...: layers its class builds in __init__
    owner: object = False  # the class of a method of a module-level class, None: a module-level function
    mode: Dict[str, str] = field(default_factory=dict)
    mode_at: Dict[str, int] = field(default_factory=dict)  # walk order of each model's last mode call
    grad_off: bool = False  # a bare ``torch.set_grad_enabled(False)`` ran earlier in it
    # The conditional branch the last mode call of each model stood in (None: unconditional).
    branch: Dict[str, Optional[cst.CSTNode]] = field(default_factory=dict)
    closures: Dict[str, object] = field(default_factory=dict)  # nested defs and lambdas bound here (None: bound twice)


@dataclass
class _ELoop:
    node: Loop
    frame: _EFrame
    parent: Optional["_ELoop"]
    end: int = 0  # walk order at which the loop ends
    start: int = 0  # walk order at which it begins
    forward: bool = False
    needs_grad: bool = False
    has_yield: bool = False
    param_forward: Set[str] = field(default_factory=set)  # model parameters it calls
    self_layers: Set[str] = field(default_factory=set)  # the class's own layers it calls (``self.gen``)
    frames: Tuple["_EFrame", ...] = ()  # the functions it stands in, innermost last


def could_evaluate(source: str) -> bool:
    return ".eval(" in source or ".train(" in source or bool(
        re.search(r"def _*(eval|valid|val|test|infer|predict|sampl)", source) or SELF_LAYER.search(source) or MODEL_PARAM.search(source)
    )


# A layer kept on ``self`` (``self.lstm = nn.LSTM(...)``): a method looping over its own
# layers may be an evaluation loop its callers put in eval mode (``eval_callers``).
SELF_LAYER = re.compile(r"self\.\w+\s*=\s*(?:\w+\.)*[A-Z]\w*\(")


def evaluation_loops(context: "FileContext") -> Tuple[EvalLoop, ...]:
    """The loops TPF203 reports (use ``context.fact(evaluation_loops)``).

    A loop qualifies when it calls a model that is in eval mode at that point of the same
    function (``model.eval()`` / ``model.train(False)`` seen before, in source order), or,
    in a function named like evaluation that never runs ``.backward()``, a callee named like
    a model (``model``, ``net``), outside any no-grad region; and nothing in the loop needs
    gradients (``.backward()``, an optimizer step, ``torch.autograd.grad``, ``.grad``,
    ``requires_grad``, ``enable_grad``, a same-module helper that does). Only the outermost
    such loop is reported. Silent for a function that same-module code calls inside
    no-grad (by name, whatever the receiver), for framework hooks, and for loops that run
    after a bare ``torch.set_grad_enabled(False)``: one at module level switches grad off for
    the whole module (the script's top level runs it before calling anything); one inside a
    function covers only that function's (and its nested functions') loops that end after
    it, and the same-module functions it calls after it, not the module's other functions.
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
        # Each bare ``set_grad_enabled(False)``: where autograd is off (the frames themselves:
        # an id could be reused once a frame is gone).
        self.grad_off: List[GradOff] = []
        self.classes: List[Optional[str]] = [None]
        self.layers: Dict[str, FrozenSet[str]] = {}
        self.no_grad_regions: Set[int] = set()  # ids of With/FunctionDef nodes that disable grad
        self.no_grad_depth = 0
        self.entered: List[int] = []  # ids of bodies that raised no_grad_depth
        self.order = 0
        # (walk order, frame, enclosing loops) of each call that needs gradients.
        self.grad_events: List[Tuple[int, _EFrame, Tuple[_ELoop, ...]]] = []

    def qualname_at(self, stack: List[cst.CSTNode]) -> Callable[[cst.CSTNode], Optional[str]]:
        scope = self.context.scope_for(self.context.module, stack)
        return lambda expr: self.context.qualname(expr, scope)

    def mark(self, attr: str, event: bool = True) -> None:
        """Set ``attr`` on the loops open here; a ``needs_grad`` is also an event that makes
        an earlier loop's outputs possibly differentiated (``_backward_after``), unless
        ``event`` is False: an optimizer's settings or state read (``reads_optimizer_state``)."""
        frame = self.frames[-1]
        for loop in frame.loops:
            setattr(loop, attr, True)
        if attr == "needs_grad" and event:
            self.grad_events.append((self.order, frame, tuple(frame.loops)))

    def run(self) -> Tuple[EvalLoop, ...]:
        walk(self.context.module, self.enter, self.leave)
        # Off at module level and never back on: off for everything the script runs after.
        globally_off = any(off.frame.node is None and off.end is None for off in self.grad_off)
        return () if globally_off else self.results()

    def enter(self, node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        self.order += 1
        if stack and id(stack[-1]) in self.no_grad_regions and node is getattr(stack[-1], "body", None):
            self.no_grad_depth += 1
            self.entered.append(id(node))
        frame = self.frames[-1]
        if type(node) is cst.ClassDef:
            self.classes.append(node.name.value)
            self.layers[node.name.value] = class_layers(node, self.qualname_at(stack), self._project_module)
        elif type(node) is cst.FunctionDef:
            name = node.name.value
            if frame.node is not None:  # a closure of the function being walked
                frame.closures[name] = None if name in frame.closures else node
            eval_named = is_eval_function_name(name, called_in_text(name, self.context.source)) and not _runs_backward(node)
            owner = self.classes[-1] if len(stack) >= 2 and type(stack[-2]) is cst.ClassDef else frame.class_name
            address: object = False
            if len(stack) == 1:
                address = None
            elif len(stack) == 3 and type(stack[1]) is cst.ClassDef:
                address = stack[1].name.value
            models = frozenset(p.name.value for p in node.params.params if MODEL_NAME.match(p.name.value))
            layers = self.layers.get(owner or "", frozenset()) if owner == address else frozenset()
            self.frames.append(_EFrame(node, owner, eval_named, models=models, layers=layers, owner=address))
            if decorated_no_grad(self.context, node, stack):
                self.no_grad_regions.add(id(node))
        elif type(node) is cst.Lambda:
            return False
        elif type(node) is cst.Assign and frame.node is not None and (bound := lambda_binding(node)):
            frame.closures[bound[0]] = None if bound[0] in frame.closures else bound[1]
        elif type(node) is cst.With:
            qualname = self.qualname_at(stack)
            if any(is_no_grad_expr(item.item, qualname) for item in node.items):
                self.no_grad_regions.add(id(node))
        elif type(node) in (cst.For, cst.While):
            frames = tuple(self.frames[1:])
            loop = _ELoop(node, frame, frame.loops[-1] if frame.loops else None, start=self.order, frames=frames)
            self.loops.append(loop)
            frame.loops.append(loop)
        elif type(node) is cst.Yield:
            self.mark("has_yield")
        elif type(node) is cst.Attribute and needs_grad_name(node.attr.value) and not self._options(node, stack):
            self.mark("needs_grad", not reads_optimizer_state(node, stack))
        elif type(node) is cst.Name and needs_grad_name(node.value) and not self._options(node, stack):
            if not _keyword_false(node, stack):  # `Variable(x, requires_grad=False)` needs none
                self.mark("needs_grad", not reads_optimizer_state(node, stack))
        elif type(node) is cst.Expr and type(node.value) is cst.Call:
            call = node.value
            if last_name(call.func) == "set_grad_enabled":
                block = stack[-2] if len(stack) >= 2 else None
                off = switch_grad(call, self.qualname_at(stack), frame, block, self.grad_off, self.order)
                frame.grad_off = frame.grad_off if off is None else off
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
        if name in ("eval", "train") and owner and not (name == "eval" and call.args):  # `engine.eval(x, y)`: a method
            if name == "eval":
                mode = "eval" if not call.args else "unknown"
            else:
                value = literal_value(call.args[0].value) if call.args else True
                mode = "eval" if value is False else ("train" if value is True else "unknown")
            frame.mode[owner] = mode
            frame.mode_at[owner] = self.order
            frame.branch[owner] = _innermost_branch(stack, frame.node)
            return
        called = last_name(call.func)
        if called is not None and (self.no_grad_depth or frame.grad_off):
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
        branch, since = frame.branch.get(dotted), frame.mode_at.get(dotted, 0)
        if mode is None and dotted in frame.layers and "self" in frame.mode:  # `self.eval()`, then `self.decoder(...)`
            mode, branch, since = frame.mode["self"], frame.branch.get("self"), frame.mode_at.get("self", 0)
        if mode == "eval" and branch is not None and not any(node is branch for node in stack):
            mode = "unknown"  # `if training: model.train() else: model.eval()`: not known here
        model_like = frame.eval_named and mode is None and (
            bool(MODEL_NAME.match(dotted.rsplit(".", 1)[-1])) or dotted in frame.layers
        )
        if mode == "eval" and not self._foreign(target, stack):
            after = [loop for loop in frame.loops if loop.start > since]
            for loop in after or frame.loops:  # those begun in eval mode, not a loop around `model.eval()`
                loop.forward = True
        elif model_like and not self._foreign(target, stack):
            self.mark("forward")
        elif mode is None and frame.closures.get(dotted) is not None and self._closure_evaluates(frame.closures[dotted], frame, stack):
            self.mark("forward")  # `predict(b)`, a closure running a model this function put in eval mode
        elif mode is None and (dotted in frame.models or dotted in frame.layers) and self.context.project is not None:
            for loop in frame.loops:  # a model parameter, or `self` through the class's own layers
                loop.param_forward.add(dotted if dotted in frame.models else "self")
                loop.self_layers.update((dotted,) if dotted not in frame.models else ())
        elif mode is None and not all(loop.forward for loop in frame.loops) and self._through_helper(call, stack, frame):
            self.mark("forward")

    def _through_helper(self, call: cst.Call, stack: List[cst.CSTNode], frame: _EFrame) -> bool:
        """A model reached through project code (``eval_helpers``): an agent's method in an
        evaluation function, a helper handed a model in eval mode here."""
        node = frame.node
        params = [p.name.value for p in node.params.params] if node is not None else []
        evaluated = [m for m, v in frame.mode.items() if v == "eval" and (frame.branch.get(m) is None or any(n is frame.branch[m] for n in stack))]
        return self.context.project is not None and helper_forward(self.context, call, stack, frame.eval_named, params, evaluated)

    def _closure_evaluates(self, closure, frame: _EFrame, stack: List[cst.CSTNode]) -> bool:
        """The closure calls a model in eval mode here (not switched on a branch the call is
        outside of), and needs no gradients."""
        return any(
            frame.mode.get(c) == "eval" and (frame.branch.get(c) is None or any(n is frame.branch[c] for n in stack))
            for c in closure_callees(closure)
        )

    def _project_module(self, func: cst.BaseExpression) -> bool:
        """``Generator`` in ``self.G = Generator(c)``: a project class deriving ``nn.Module``."""
        index, dotted = self.context.project, dotted_name(func) if type(func) in (cst.Name, cst.Attribute) else None
        found = index.resolve(own_path(self.context), dotted) if index is not None and dotted and dotted[:1].isupper() else None
        return found is not None and found.kind == "class" and index.is_nn_module(found)  # type: ignore[union-attr]

    def _options(self, node: Union[cst.Name, cst.Attribute], stack: List[cst.CSTNode]) -> bool:
        """``opt`` (``opt.batchSize``) that the value engine knows is what ``parse_args()``
        gave: command-line options, not an optimizer. Asked only of the short ``opt`` names."""
        if not options_like(node.value if type(node) is cst.Name else node.attr.value) or len(stack) < 2:  # type: ignore[union-attr]
            return False
        return type(self.context.value_of(node, stack[1])) is Namespace

    def _foreign(self, target: cst.BaseExpression, stack: List[cst.CSTNode]) -> bool:
        """The value engine knows the called thing is not a torch module (an MXNet net)."""
        models = self.context.models
        if models is None or len(stack) < 2:
            return False
        return models.is_torch_module(self.context.value_of(target, stack[1])) is False

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

    def _evaluated_by_callers(self, loop: _ELoop) -> bool:
        """A model parameter the loop calls is in eval mode at every project call."""
        frame = loop.frame
        if not loop.param_forward or frame.node is None or frame.owner is False or frame.eval_named:
            return False
        if frame.owner is not None and (loop.param_forward != {"self"} or _runs_backward(frame.node)):
            return False  # a method: its own layers, and every caller's receiver in eval mode
        key = (id(frame.node), frozenset(loop.self_layers))
        if key not in self.by_callers:
            self.by_callers[key] = callers_evaluate(self.context, frame.node, frame.owner, sorted(loop.param_forward), frozenset(loop.self_layers))  # type: ignore[arg-type]
        return self.by_callers[key]

    def _no_grad_callers(self, frame: _EFrame) -> bool:
        """Every project caller runs the function under no-grad (callers in other modules)."""
        if frame.node is None or frame.owner is False or self.context.project is None:
            return False
        key = id(frame.node)
        if key not in self.all_no_grad:
            self.all_no_grad[key] = callers_all_no_grad(self.context, frame.node, frame.owner)  # type: ignore[arg-type]
        return self.all_no_grad[key]

    def _after_grad_off(self, loop: _ELoop) -> bool:
        """A ``set_grad_enabled(False)`` in the loop's function (or one enclosing it, or at
        module level around a module-level loop) runs before the loop ends and is not switched
        back on before it begins: the loop, or its later rounds, run with grad off."""
        frames = (loop.frame, *loop.frames)
        return any(covers(off, loop.start, loop.end) and any(f is off.frame for f in frames) for off in self.grad_off)

    def results(self) -> Tuple[EvalLoop, ...]:
        self.by_callers: Dict[object, bool] = {}
        self.all_no_grad: Dict[int, bool] = {}
        training = self.context.fact(training_facts)  # training through project code too
        candidates = {
            id(loop)
            for loop in self.loops
            if not loop.needs_grad and (loop.forward or self._evaluated_by_callers(loop))
            and not getattr(training.loop(loop.node), "is_training", False)
        }
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
                if self._no_grad_callers(loop.frame):
                    continue
            if self._backward_after(loop) or self._after_grad_off(loop):
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


def _keyword_false(name: cst.Name, stack: Sequence[cst.CSTNode]) -> bool:
    """The keyword of an argument whose value is a literal ``False``."""
    arg = stack[-1] if stack else None
    return type(arg) is cst.Arg and arg.keyword is name and literal_value(arg.value) is False
