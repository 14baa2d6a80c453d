"""Which loops run a model forward on each item with autograd off: TPF206's evaluation and
inference loops (batches, frames, chunks, slices).

The loop's own body (not a nested loop or function) must run a forward: a call of a model
(by name, or put in eval mode before the loop), a same-module loop-free helper that runs
one (``forward_helpers``), or project code of any module that does, one or two calls down
(``project.forward_calls``: ``infer(piece, net_g=net_g)``, ``tracker.track(frame)``), or a
call handed a model and the item (``handed_models``: ``sliding_window_inference(image, roi,
1, model)``). And
the loop must evaluate: the forward runs with autograd off (a no-grad ``with`` in the loop,
around it, or in the helper), or the loop sits in a loop TPF203 reports. A call in a nested
loop that runs no model runs on every iteration of the loop around it, which is then asked
the same. A loop that trains (an epoch loop around a training helper), one that builds or
loads a model every iteration (a loop over checkpoints or a benchmark over models), and
one whose forward needs gradients are not evaluation loops.
"""

from __future__ import annotations

import builtins
import re
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.scope import dotted_name
from ...analysis.walk import child_nodes
from ...project.call_values import may_run_project_code
from ...project.forward_calls import is_model_name, target_runs_forward
from .classifiers import FuncKey, callee_key, is_no_grad_expr, last_name, method_name
from .forward_helpers import ForwardHelpers, forward_helpers, is_model_call
from .handed_models import item_values, runs_model_on_item
from .item_pieces import item_names, method_aliases, walks_pieces
from .loops import loop_bound_names, training_facts
from .no_grad import evaluation_loops, needs_grad_name, under_no_grad
from .pipelines import pipeline_parameters
from .sample_loops import walks_own_samples

if TYPE_CHECKING:
    from ...context import FileContext

# A network's part called by itself: `self.model.image_encoder(x)`, `text_encoder(ids)`, `ema_unet(z)`.
_PART_NAME = re.compile(r"(?:^|[._])(?:encoder|decoder|unet|vae|denoiser)$", re.IGNORECASE)
# Calls that put a new model in place: a loop around them evaluates one model per iteration.
_LOADS = frozenset({"load_state_dict", "load_checkpoint"})
_LOADERS = frozenset({"torch.load", "torch.jit.load", "torch.jit.trace", "torch.jit.script"})
# A model's own name, for a factory function's result (``_factory``).
_FACTORY_TARGET = re.compile(r"(?:\w+_)?(?:model|net|network|unet|vae)", re.IGNORECASE)
_BUILTINS = frozenset(dir(builtins))


def evaluation_loop_around(context: "FileContext", ancestors: Sequence[cst.CSTNode], index: int) -> Optional[int]:
    """The index (in ``ancestors``) of the loop, from the innermost one at ``index``
    outwards within the function, on whose every iteration the node runs and which
    evaluates a model on each item; None when there is none."""
    facts_all = context.fact(training_facts)
    helpers = context.fact(forward_helpers)
    current: Optional[int] = index
    while current is not None:
        loop = ancestors[current]
        facts = facts_all.loop(loop)
        if (facts is not None and facts.is_training) or _loads_model(context, loop):
            return None  # an epoch loop, or a loop over models: once per model is no harm
        class_name = _class_of(ancestors[:current])
        evaluated = _evaluated_names(context.module, ancestors[:current], loop)
        around_off = under_no_grad(context, ancestors[:current])

        def project(call: cst.Call) -> Optional[bool]:
            return _project_forward(context, call, ancestors[1] if len(ancestors) > 1 else call)

        def handed(call: cst.Call, bound: FrozenSet[str], items: FrozenSet[str]) -> Optional[bool]:
            return runs_model_on_item(context, call, ancestors[1] if len(ancestors) > 1 else call, bound, items, evaluated)

        aliases = method_aliases(ancestors[:current], class_name)
        pipelines = pipeline_parameters(context, ancestors[:current])
        forward, without_grad, in_eval_mode = _model_calls(loop, class_name, helpers, context.qualname, evaluated, around_off, project, aliases, pipelines, handed)
        if without_grad and _needs_grad(loop, class_name, facts_all.grad_functions):
            without_grad = False  # a no-grad target network inside a training step, say
        if forward or walks_own_samples(context, loop, ancestors[:current]):
            evaluates = without_grad or in_eval_mode or not forward or under_no_grad(context, ancestors)
            return current if evaluates or _in_reported_loop(context, ancestors[: current + 1]) else None
        current = _enclosing_loop(ancestors, current)
    return None


def _in_reported_loop(context: "FileContext", ancestors: Sequence[cst.CSTNode]) -> bool:
    """One of the loops around (or the last of ``ancestors``) is a loop TPF203 reports."""
    reported = {id(e.node) for e in context.fact(evaluation_loops)}
    return any(id(node) in reported for node in ancestors)


def _enclosing_loop(ancestors: Sequence[cst.CSTNode], index: int) -> Optional[int]:
    """The next ``for``/``while`` around the loop at ``index`` in the same function, when the
    loop is in its body."""
    for outer in range(index - 1, -1, -1):
        node = ancestors[outer]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(node, (cst.For, cst.While)):
            return outer if ancestors[outer + 1] is node.body else None
    return None


def _project_forward(context: "FileContext", call: cst.Call, statement: cst.CSTNode) -> Optional[bool]:
    """Whether a call of project code runs a model forward (True: with autograd off)."""
    values = context.values()
    spelled = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    if values is None or spelled is None or not may_run_project_code(spelled, context.qualname(call.func)):
        return None
    targets = values.callees(call, statement)
    reached = [target_runs_forward(values.engine, t) for t in targets or ()]
    return None if not reached or any(r is None for r in reached) else any(reached)


def _loads_model(context: "FileContext", loop: cst.CSTNode) -> bool:
    """The loop's own body loads or builds a model: ``model.load_state_dict(...)``,
    ``torch.load(...)``, ``torch.jit.trace(...)``, ``model = eval(name)(...)``, ``net =
    Net(...)``, ``model = make_model(name)``."""
    stack: List[cst.CSTNode] = [loop.body]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.For, cst.While)):
            continue
        if type(node) is cst.Call and (method_name(node) in _LOADS or context.qualname(node.func) in _LOADERS):
            return True
        if type(node) is cst.Assign and type(node.value) is cst.Call:
            named = [dotted_name(t.target) for t in node.targets if type(t.target) in (cst.Name, cst.Attribute)]
            if (any(is_model_name(n) for n in named) and _builds(node.value)) or _factory(node.value, named):
                return True
        stack.extend(child_nodes(node))
    return False


_MOVES = frozenset({"cuda", "to", "eval", "half", "float", "requires_grad_"})


def _builds(call: cst.Call) -> bool:
    """``Net(...)``, ``models.ResNet(...)``, ``eval(name)(...)``: a class or a factory's result,
    also moved or switched on the way (``Net(cfg).cuda()``, ``Net(cfg).to(device).eval()``)."""
    while type(call.func) is cst.Attribute and type(call.func.value) is cst.Call and call.func.attr.value in _MOVES:
        call = call.func.value
    if type(call.func) is cst.Call:
        return True
    name = dotted_name(call.func) if type(call.func) in (cst.Name, cst.Attribute) else None
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def _factory(call: cst.Call, named: Sequence[Optional[str]]) -> bool:
    """``model = make_model(name)``: a function's new result bound to a name that is a model's
    own (``model``, ``fp16_net``; not ``model_kwargs = dict(...)``), not one handed the model
    it replaces (``model = wrap(model)`` keeps the model)."""
    if type(call.func) is not cst.Name or call.func.value in _BUILTINS:
        return False
    if not any(n is not None and _FACTORY_TARGET.fullmatch(n.rsplit(".", 1)[-1]) for n in named):
        return False
    handed = {dotted_name(a.value) for a in call.args if type(a.value) in (cst.Name, cst.Attribute)}
    return not handed.intersection(named)


def _class_of(ancestors: Sequence[cst.CSTNode]) -> Optional[str]:
    """The class whose method (or a function nested in it) holds the node."""
    for index in range(len(ancestors) - 1, 1, -1):
        if type(ancestors[index]) is cst.FunctionDef and type(ancestors[index - 2]) is cst.ClassDef:
            return ancestors[index - 2].name.value  # type: ignore[attr-defined]
    return None


def _needs_grad(loop: cst.CSTNode, class_name: Optional[str], grad_functions) -> bool:
    """Something in the loop needs gradients: ``.backward``, ``.grad`` or
    ``requires_grad``; an optimizer's or a loss scaler's step (``opt.step()``,
    ``optimizer.zero_grad()``, ``scaler.scale(loss)``); a same-module helper that does.
    (An options dict named ``self.opt`` is no optimizer: only those methods count.)"""
    stack: List[cst.CSTNode] = [loop.body]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        if type(node) is cst.Attribute and node.attr.value in ("grad", "requires_grad", "backward"):
            return True
        if type(node) is cst.Call:
            if callee_key(node, class_name) in grad_functions:
                return True
            if type(node.func) is cst.Attribute and node.func.attr.value in _GRAD_METHODS:
                receiver = last_name(node.func.value) if type(node.func.value) in (cst.Name, cst.Attribute) else None
                if receiver is not None and needs_grad_name(receiver):
                    return True
        stack.extend(child_nodes(node))
    return False


# What an optimizer or a loss scaler is called for (not ``self.opt.get(...)``, an options dict).
_GRAD_METHODS = frozenset({"step", "zero_grad", "scale", "unscale_"})
_NOT_FORWARD = frozenset(
    {"eval", "train", "to", "cuda", "cpu", "half", "float", "load_state_dict", "state_dict", "parameters", "zero_grad"}
)


def _submodule_of(root: str, evaluated: FrozenSet[str]) -> bool:
    """``vqgan.encoder`` of an evaluated ``vqgan`` (not ``vqgan.load_state_dict``)."""
    owner, _, attr = root.rpartition(".")
    return owner in evaluated and attr not in _NOT_FORWARD


def _evaluated_names(module: cst.Module, ancestors: Sequence[cst.CSTNode], loop: cst.CSTNode) -> FrozenSet[str]:
    """Names put in eval mode (``x.eval()`` as a statement) at module level, or in the
    loop's function before the loop: the models that TPF203 sees evaluated."""
    names = set()
    function = next((a for a in reversed(ancestors) if isinstance(a, cst.FunctionDef)), None)
    roots: List[cst.CSTNode] = list(module.body) + ([function.body] if function is not None else [])
    for root in roots:
        stack: List[cst.CSTNode] = [root]
        while stack:
            node = stack.pop()
            if node is loop or isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not root:
                continue
            if type(node) is cst.Call and method_name(node) == "eval" and not node.args:
                name = dotted_name(node.func.value)  # type: ignore[attr-defined]
                if name is not None:
                    names.add(name)
            stack.extend(child_nodes(node))
    return frozenset(names)


def _model_calls(
    loop: cst.CSTNode,
    class_name: Optional[str],
    helpers: ForwardHelpers,
    qualname: Callable[[cst.CSTNode], Optional[str]],
    evaluated: FrozenSet[str] = frozenset(),
    around_off: bool = False,
    project: Optional[Callable[[cst.Call], Optional[bool]]] = None,
    aliases: Optional[Dict[str, FrozenSet[FuncKey]]] = None,
    pipelines: FrozenSet[str] = frozenset(),
    handed: Optional[Callable[[cst.Call, FrozenSet[str], FrozenSet[str]], Optional[bool]]] = None,
) -> Tuple[bool, bool, bool]:
    """Whether the loop's own body (not a nested loop or function) runs a model forward,
    whether it does so with autograd off, in a no-grad ``with`` of its body or through
    a helper that turns it off (``self.test()``), and whether it runs a model put in eval
    mode before the loop (``net.eval()``, then ``net(x)`` or ``net.infer(x)``).

    A forward is a call of something named like a model (``model(x)``, ``self.net(x)``,
    ``model.forward(x)``, a network's part: ``self.model.image_encoder(x)``) that the loop
    does not bind, or of a same-module loop-free helper that runs one
    (``forward_helpers``): a loop over models or checkpoints (``for name,
    model in models.items():``) frees one model's memory before the next, which is what
    the cache is emptied for, and a helper that loops itself evaluates a whole set. A
    name put in eval mode before the loop (``evaluated``) is a model too: ``vqgan(x)``,
    and under no-grad (``around_off``: around the loop) its submodules,
    ``vqgan.encoder(x)``. A method of something named like a model that runs it
    (``net_g.infer(x)``) is a forward; so is a call of project code (any module) that
    runs one outside its own loops (``project``: ``forward_calls.runs_forward``, asked
    only when nothing else in the loop is a forward). A nested loop over pieces of the
    item (``for b in range(0, clip.shape[1], 5)``, ``for part in torch.split(clip, n)``:
    ``item_pieces``) runs its forwards for this item, so they count as the loop's own. A
    local name bound only to methods of ``self`` (``test = self.nonpad_test``, or
    ``partial(self.pad_test, 8)`` in another branch: ``aliases``) calls those methods. A
    parameter annotated as a diffusers pipeline (``pipelines``), called, generates with
    autograd off (the library's ``__call__`` is no-grad). A call handed a model and the
    item (``sliding_window_inference(image, roi, 1, model)``: ``handed``, asked last, only
    when nothing else in the loop is a forward) runs the model there."""
    bound = loop_bound_names(loop)  # type: ignore[arg-type]
    pieces = item_names(loop)
    forward = without_grad = in_eval_mode = False
    others: List[Tuple[cst.Call, bool]] = []
    named: List[cst.Call] = []  # forwards by name: their project code may turn autograd off
    stack: List[Tuple[cst.CSTNode, bool]] = [(loop.body, around_off)]  # type: ignore[attr-defined]
    while stack:
        node, off = stack.pop()
        if type(node) is cst.For:  # its iterable is made on every iteration (a generator it walks)
            stack.append((node.iter, off))
            if walks_pieces(node, pieces):  # the chunks of this item: its forwards are this item's
                stack.append((node.body, off))
            continue
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.While)):
            continue
        if type(node) is cst.With and any(is_no_grad_expr(item.item, qualname) for item in node.items):
            off = True
        if type(node) is cst.Call:
            target = node.func.value if method_name(node) == "forward" else node.func  # type: ignore[attr-defined]
            root = dotted_name(target) if type(target) in (cst.Name, cst.Attribute) else None
            key = callee_key(node, class_name)
            chosen = (aliases or {}).get(key[1]) if key is not None and key[0] is None else None
            head = root.split(".")[0] if root is not None else None
            if head is not None and head not in bound and (
                is_model_call(node) or is_model_name(root) or _PART_NAME.search(root) or root in evaluated or (off and _submodule_of(root, evaluated)) or _inference_method(root)
            ):
                forward = True
                without_grad |= off
                named.append(node)
                in_eval_mode |= root in evaluated or (off and _submodule_of(root, evaluated)) or root.rpartition(".")[0] in evaluated
            elif type(node.func) is cst.Name and node.func.value in pipelines and node.func.value not in bound:
                forward = without_grad = True  # `pipeline(prompt=p)` of a `pipeline: DiffusionPipeline`
            elif key is not None and key in helpers.forward:
                forward = True
                without_grad |= off or key in helpers.no_grad_forward
                in_eval_mode |= key in helpers.eval_forward  # `model.eval()` in the helper, then `model(x)`
            elif chosen and chosen <= helpers.forward:  # `test = self.nonpad_test`, then `test()`
                forward = True
                without_grad |= off or chosen <= helpers.no_grad_forward
            elif head is not None and head not in bound:
                others.append((node, off))
        stack.extend((child, off) for child in child_nodes(node))
    for call, off in others if project is not None and not forward else ():
        runs = project(call)
        if runs is not None:
            forward = True
            without_grad |= off or runs
    items = item_values(loop, pieces.names)
    for call, off in others if handed is not None and not forward else ():
        runs = handed(call, bound, items)
        if runs is not None:
            forward = True
            without_grad |= off or runs
            in_eval_mode |= any(dotted_name(a.value) in evaluated for a in call.args if type(a.value) in (cst.Name, cst.Attribute))
    for call in named if project is not None and not without_grad else ():
        without_grad = project(call) is True  # `model.tts_to_file(text)`: no-grad inside it
        if without_grad:
            break
    return forward, without_grad, in_eval_mode


def _inference_method(root: str) -> bool:
    """``net_g.infer(x)``, ``model.generate(x)``: a model run by another name."""
    owner, _, method = root.rpartition(".")
    return bool(owner) and is_model_name(owner, method)


