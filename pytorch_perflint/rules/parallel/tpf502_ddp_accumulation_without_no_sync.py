"""TPF502 ddp-accumulation-without-no-sync."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...analysis.ast_index import code_identifiers, tree_index
from ...analysis.scope import dotted_name
from ...analysis.walk import child_nodes
from ...context import FileContext
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.classifiers import BACKWARD_ATTRS, is_backward_call, is_optimizer_step, last_name, method_name
from ...facts.training.loops import loop_bound_names, training_facts, walk
from ...facts.training.test_code import in_test_code
from ...facts.parallel.ddp_callers import passed_ddp_model

if TYPE_CHECKING:
    from ...project.index import ProjectIndex

_DDP = "torch.nn.parallel.DistributedDataParallel"
# Words that mean the script already controls gradient synchronisation itself: DDP's
# context manager, the flag it sets (nanoGPT), Accelerate's and Lightning's accumulation.
_SYNC_CONTROL = frozenset({"no_sync", "require_backward_grad_sync", "accumulate", "accumulate_grad_batches"})
_PROLOGUE = (
    "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    "model = DDP(net.cuda(), device_ids=[rank])\n"
)
_ACCUMULATE = (
    "for i, (x, y) in enumerate(loader):\n    loss = crit(model(x), y) / accum\n    loss.backward()\n"
    "    if (i + 1) % accum == 0:\n        optimizer.step()\n        optimizer.zero_grad()\n"
)


@dataclass(frozen=True)
class _Finding:
    backward: cst.Call
    model: str


class DdpAccumulationWithoutNoSync(Rule):
    """## What it does
    Flags the `.backward()` of a loop that trains a `DistributedDataParallel` model with
    gradient accumulation, when no backward pass runs under
    `model.no_sync()`. Gradient accumulation means: backward on every micro-step and the
    optimizer step only under a condition (`if (i + 1) % accum_steps == 0:`), or backward
    in an inner loop over micro-batches with the optimizer step after it, or a loss scaler
    in timm's style, which runs backward on every call and steps only with `update_grad`
    (`loss_scaler(loss, optimizer, update_grad=(i + 1) % accum_steps == 0)`: the call is
    reported).

    The DDP model is built in this module, or handed to the training function by every
    project caller (`main.py` wraps it, `engine.py`'s `train_one_epoch(model, ...)`
    accumulates: the layout of DeiT, ConvNeXt and MAE).

    Silent when the module uses `no_sync` anywhere, sets `require_backward_grad_sync`
    itself, or accumulates through Accelerate (`accelerator.accumulate(model)`) or
    Lightning (`accumulate_grad_batches`), and for loops that step on every iteration.

    ## Why is this bad?
    DDP all-reduces the gradients across all processes during every backward pass. With
    gradient accumulation only the last micro-step's gradients are used for the step, so
    the all-reduces of the other micro-steps are pure communication overhead: with 8
    micro-steps, 7 of every 8 all-reduces are wasted.

    ## Example
    ```python
    model = DDP(model, device_ids=[rank])
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead
    ```python
    for i, (x, y) in enumerate(loader):
        stepping = (i + 1) % accum_steps == 0
        with contextlib.nullcontext() if stepping else model.no_sync():
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        if stepping:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Fix safety
    There is no automatic fix: the forward pass must run inside `no_sync()` too, and the
    step condition has to be computed before the forward; the rewrite is the author's.
    """

    code = "TPF502"
    name = "ddp-accumulation-without-no-sync"
    message = (
        "`{model}` is a DistributedDataParallel model trained with gradient accumulation: every "
        "micro-step's backward all-reduces the gradients; run the forward and backward of the "
        "micro-steps that do not step under `with {model}.no_sync():`"
    )
    fix_applicability = Applicability.DISPLAY_ONLY
    triggers = ("DistributedDataParallel",)
    preview = True

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A backward (or a loss scaler's ``update_grad=``); DDP may be built here or by
        the caller of a training function (see ``could_fire_project``)."""
        return "backward" in source or "update_grad" in source

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """The code (not a comment or string) runs backward (or calls something with
        ``update_grad=``: a loss scaler), names nothing that controls gradient
        synchronisation, and names DDP or defines a function a DDP model can be passed to."""
        names = code_identifiers(tree)
        if not names.isdisjoint(_SYNC_CONTROL):
            return False
        if names.isdisjoint(BACKWARD_ATTRS) and not any(
            k.arg == "update_grad" for call in tree_index(tree).calls for k in call.keywords
        ):
            return False
        return "DistributedDataParallel" in names or any(isinstance(s, ast.FunctionDef) for s in tree.body)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """DDP is built here, or in a project module that imports this one."""
        if "DistributedDataParallel" in code_identifiers(tree):
            return True
        return any(project.text_naming(other, "DistributedDataParallel") is not None for other in sorted(project.importers(path)))

    VALID = (
        # No accumulation: the step runs on every iteration.
        _PROLOGUE + "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    optimizer.step()\n",
        # no_sync on the micro-steps.
        _PROLOGUE
        + "import contextlib\nfor i, (x, y) in enumerate(loader):\n    last = (i + 1) % accum == 0\n"
        "    with contextlib.nullcontext() if last else model.no_sync():\n        crit(model(x), y).backward()\n"
        "    if last:\n        optimizer.step()\n",
        # nanoGPT's flag.
        _PROLOGUE
        + "for step in range(steps):\n    for micro in range(accum):\n"
        "        model.require_backward_grad_sync = micro == accum - 1\n        crit(model(x), y).backward()\n"
        "    optimizer.step()\n",
        # Accelerate accumulates (and syncs) for the script.
        _PROLOGUE
        + "for x, y in loader:\n    with accelerator.accumulate(model):\n        accelerator.backward(crit(model(x), y))\n"
        "        if i % 4 == 0:\n            optimizer.step()\n",
        # Not DDP.
        "import torch\nmodel = torch.nn.DataParallel(net)\n" + _ACCUMULATE,
        "import torch\nmodel = net.cuda()\n" + _ACCUMULATE,
        # A guard that is not about accumulation (a warm-up flag).
        _PROLOGUE + "for x, y in loader:\n    crit(model(x), y).backward()\n    if not frozen:\n        optimizer.step()\n",
        # A single-GPU path in another function builds its own plain model of the same name.
        _PROLOGUE.replace("model = DDP(", "def wrap(net, rank):\n    model = DDP(").replace(", device_ids=[rank])\n", ", device_ids=[rank])\n    return model\n")
        + "def train_single(loader, accum):\n    model = Net().cuda()\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "".join("    " + line + "\n" for line in _ACCUMULATE.splitlines()),
        # A loop that never touches the DDP model.
        _PROLOGUE + _ACCUMULATE.replace("model(x)", "other(x)"),
    )
    INVALID = (
        Invalid(_PROLOGUE + _ACCUMULATE, line=6),
        # Micro-batches in an inner loop, the step after it.
        Invalid(
            "import torch\nimport torch.distributed as dist\nfrom torch import nn\n"
            "def train(net, loader, optimizer, accum, rank):\n"
            "    ddp = nn.parallel.DistributedDataParallel(net, device_ids=[rank])\n"
            "    for batch in loader:\n        for chunk in batch.chunk(accum):\n"
            "            ddp(chunk).sum().backward()\n        optimizer.step()\n        optimizer.zero_grad()\n",
            line=8,
        ),
        # timm's NativeScaler runs backward on every call and steps only with update_grad.
        Invalid(
            _PROLOGUE
            + "for idx, (x, y) in enumerate(loader):\n    loss = crit(model(x), y) / accum\n"
            "    loss_scaler(loss, optimizer, parameters=model.parameters(),\n"
            "                update_grad=(idx + 1) % accum == 0)\n",
            line=6,
        ),
        # Accumulation behind a configuration switch (Swin's SimMIM).
        Invalid(
            _PROLOGUE
            + "for idx, x in enumerate(loader):\n    loss = model(x)\n    if config.ACCUM_STEPS > 1:\n"
            "        scaler.scale(loss / config.ACCUM_STEPS).backward()\n"
            "        if (idx + 1) % config.ACCUM_STEPS == 0:\n            scaler.step(optimizer)\n"
            "    else:\n        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n",
            line=7,
        ),
        # Wrapped only when distributed; the guard names the accumulation steps.
        Invalid(
            "import torch\nclass Trainer:\n    def __init__(self, net, distributed):\n"
            "        self.model = torch.nn.parallel.DistributedDataParallel(net) if distributed else net\n"
            "    def fit(self, loader):\n        for step, batch in enumerate(loader):\n"
            "            loss = self.model(batch).mean()\n            loss.backward()\n"
            "            if step % self.grad_accum_steps == 0 or step == len(loader) - 1:\n"
            "                self.optimizer.step()\n",
            line=8,
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if method_name(node) not in BACKWARD_ATTRS and not _scaler_accumulates(node) and not isinstance(node.func, cst.Name):
            return
        finding = self.context.fact(_accumulation_backwards).get(id(node))
        if finding is not None and finding.backward is node:
            self.report(node, message=self.message.format(model=finding.model))


def _accumulation_backwards(context: FileContext) -> Dict[int, _Finding]:
    """id -> finding, for each backward call TPF502 reports in the module."""
    models = _ddp_models(context)
    if models is None:
        return {}
    facts = context.fact(training_facts)
    found: Dict[int, _Finding] = {}
    for node, function in _loops(context.module):
        loop = facts.loop(node)
        training = loop is not None and loop.is_training
        backwards = _unsynced_micro_steps(context, node, facts.optimizer_names, training)
        if not backwards:
            continue
        model = _trained_model(node, function, models) if models else None
        if model is None:
            model = passed_ddp_model(context, _used_names(node), function)
        if model is None:
            continue
        for backward in backwards:
            found[id(backward)] = _Finding(backward, model)
    return found


def _used_names(loop: cst.CSTNode) -> FrozenSet[str]:
    """The names a loop reads (``model`` of ``model.train()``, not ``train``), outside
    nested definitions."""
    names: Set[str] = set()
    stack: List[cst.CSTNode] = [loop]
    while stack:
        node = stack.pop()
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if type(node) is cst.Name:
            names.add(node.value)
        elif type(node) is cst.Attribute:
            stack.append(node.value)
        else:
            stack.extend(child_nodes(node))
    return frozenset(names)


def _loops(module: cst.Module) -> List[Tuple[cst.CSTNode, Optional[cst.FunctionDef]]]:
    """Every ``for``/``while`` with its innermost enclosing function (a training loop or
    not: a loss scaler's loop has no backward of its own)."""
    found: List[Tuple[cst.CSTNode, Optional[cst.FunctionDef]]] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.For, cst.While):
            function = next((n for n in reversed(stack) if type(n) is cst.FunctionDef), None)
            found.append((node, function))  # type: ignore[arg-type]
        return True

    walk(module, enter)
    return found


def _ddp_models(context: FileContext) -> Optional[Dict[str, Set[Optional[int]]]]:
    """Dotted names bound to a ``DistributedDataParallel(...)`` (or ``DDP(...) if ... else
    ...``) anywhere in the module, with the functions (ids, None: module level) that bind
    them; None when the code controls gradient synchronisation
    itself (``no_sync``, ``require_backward_grad_sync``, Accelerate's ``accumulate``)."""
    names: Dict[str, Set[Optional[int]]] = {}
    controlled: List[bool] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) is cst.Name and node.value in _SYNC_CONTROL:  # also ``x.no_sync``'s attr
            controlled.append(True)
        if type(node) in (cst.Assign, cst.AnnAssign) and node.value is not None:  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
            options = [value.body, value.orelse] if type(value) is cst.IfExp else [value]
            scope = context.scope_for(node, stack)
            if any(type(v) is cst.Call and context.qualname(v.func, scope) == _DDP for v in options):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]  # type: ignore[attr-defined]
                for target in targets:
                    dotted = dotted_name(target) if type(target) in (cst.Name, cst.Attribute) else None
                    if dotted is not None:
                        function = next((id(n) for n in reversed(stack) if type(n) is cst.FunctionDef), None)
                        names.setdefault(dotted, set()).add(function)
        return True

    walk(context.module, enter)
    return None if controlled else names


def _trained_model(
    loop: cst.CSTNode, function: Optional[cst.FunctionDef], models: Dict[str, Set[Optional[int]]]
) -> Optional[str]:
    """The DDP model the loop uses (by its dotted name, or ``model`` for ``self.model``).
    A name the loop's own function binds to a plain model (``model = Net().cuda()`` in a
    single-GPU path) is not the DDP model another function built."""
    short: Dict[str, Set[Optional[int]]] = {}
    for name, binders in models.items():
        short.setdefault(name.rsplit(".", 1)[-1], set()).update(binders)
    local = _plain_builds(function) if function is not None else frozenset()
    own = id(function) if function is not None else None
    found: List[str] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if found or type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(node) in (cst.Name, cst.Attribute):
            dotted = dotted_name(node)
            binders = models.get(dotted) if dotted is not None else None
            if binders is None and dotted is not None:
                binders = short.get(dotted)
            if binders is not None:
                if own in binders or dotted.split(".")[0] not in local:  # type: ignore[union-attr]
                    found.append(dotted)  # type: ignore[arg-type]
                return False
        return True

    walk(loop, enter)
    return found[0] if found else None


_MOVES = frozenset(("to", "cuda", "train", "eval", "float", "requires_grad_"))


def _plain_builds(function: cst.FunctionDef) -> FrozenSet[str]:
    """Names the function binds to a call that is not DDP (``model = Net().cuda()``), outside
    nested definitions; unpacking (``model, opt = state``) says nothing."""
    names: Set[str] = set()

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            value = node.value
            while type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in _MOVES:
                value = value.func.value
            if type(value) is cst.Call and last_name(value.func) not in ("DistributedDataParallel", "DDP"):
                names.add(node.targets[0].target.value)
        return True

    walk(function.body, enter)
    return frozenset(names)


def _unsynced_micro_steps(
    context: FileContext, loop: cst.CSTNode, optimizer_names: FrozenSet[str], training: bool
) -> Sequence[cst.Call]:
    """The backward calls of a loop that accumulates gradients: backward every iteration
    and the optimizer step under an accumulation condition, or backward in an inner loop
    that never steps with the step in this loop; or the calls of a loss scaler that runs
    backward every time and steps under an accumulation condition (``update_grad=``)."""
    backwards: List[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]] = []
    steps: List[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]] = []
    scaled: List[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]] = []

    def enter(node: cst.CSTNode, stack: List[cst.CSTNode]) -> bool:
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return False
        if type(node) is cst.Call:
            if is_backward_call(node, lambda e: context.qualname(e, context.module_scope)):
                backwards.append((node, tuple(stack)))
            elif is_optimizer_step(node, optimizer_names):
                steps.append((node, tuple(stack)))
            elif _scaler_accumulates(node):
                scaled.append((node, tuple(stack)))
        return True

    walk(loop, enter)
    names = loop_bound_names(loop)  # type: ignore[arg-type]
    found: List[cst.Call] = []
    if scaled and not in_test_code(scaled[0][1], context.path):
        # timm's NativeScaler: `loss_scaler(loss, optimizer, update_grad=(i + 1) % accum == 0)`
        # runs backward on every call and steps only when `update_grad` is true.
        found = [call for call, path in scaled if not _inner_loop(path) and _every_iteration([*path, call], names)]
    if not training or not backwards or not steps or in_test_code(backwards[0][1], context.path):
        return found
    return found + list(_plain_micro_steps(backwards, steps, names))


def _plain_micro_steps(
    backwards: Sequence[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]],
    steps: Sequence[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]],
    names: FrozenSet[str],
) -> Sequence[cst.Call]:
    """Backward calls that do not step: the step under an accumulation condition, or the
    backward in an inner loop that never steps."""
    if any(_accumulation_guard(path) for _, path in steps):
        return [
            call
            for call, path in backwards
            if not _inner_loop(path) and _every_iteration([*path, call], names) and not _steps_with(path, steps)
        ]
    if any(not _inner_loop(path) for _, path in steps):
        inner = [(call, path) for call, path in backwards if _inner_loop(path)]
        return [call for call, path in inner if not any(_inner_loop(p) is _inner_loop(path) for _, p in steps)]
    return ()


def _steps_with(path: Sequence[cst.CSTNode], steps: Sequence[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]]) -> bool:
    """Some optimizer step runs whenever this backward does: it stands, with no condition
    of its own, in the innermost branch that holds the backward (``else: backward();
    step()`` beside an accumulating ``if`` branch)."""
    block: cst.CSTNode = path[0]
    for parent, child in zip(path, path[1:]):
        if type(parent) is cst.If and child is not parent.test:
            block = child
    for _, step_path in steps:
        at = next((i for i, node in enumerate(step_path) if node is block), None)
        if at is not None and not any(type(n) in (cst.If, cst.IfExp) for n in step_path[at:]):
            return True
    return False


def _every_iteration(path: Sequence[cst.CSTNode], names: FrozenSet[str]) -> bool:
    """Whether the last node of ``path`` runs on every iteration of the loop ``path[0]``:
    no ``if`` on the way tests a name the loop binds or calls anything. A switch on the
    configuration (``if config.ACCUMULATION_STEPS > 1:``, Swin's SimMIM) is the same on
    every iteration, whatever its operator."""
    for parent, child in zip(path, path[1:]):
        if type(parent) in (cst.If, cst.IfExp) and child is not parent.test:  # type: ignore[attr-defined]
            if not _configuration_switch(parent.test, names):  # type: ignore[attr-defined]
                return False
        elif type(parent) is cst.BooleanOperation and child is parent.right:
            return False
        elif type(parent) in (cst.ExceptHandler, cst.MatchCase):
            return False
    return True


def _configuration_switch(test: cst.CSTNode, names: FrozenSet[str]) -> bool:
    """A test of names the loop does not bind (their attributes, literals, any operator),
    with no call in it."""
    stack = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call or (type(node) is cst.Name and node.value in names):
            return False
        if type(node) is cst.Attribute:
            stack.append(node.value)  # `config.TRAIN.x`: only the base name can be the loop's
            continue
        stack.extend(child_nodes(node))
    return True


def _scaler_accumulates(call: cst.Call) -> bool:
    """``loss_scaler(loss, optimizer, ..., update_grad=(idx + 1) % accum_steps == 0)``."""
    name = last_name(call.func)
    if name is None or "scaler" not in name.lower():
        return False
    return any(
        a.keyword is not None and a.keyword.value == "update_grad" and _counts_micro_steps(a.value) for a in call.args
    )


def _inner_loop(path: Sequence[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The outermost loop nested inside the walked loop (``path[0]``), if any."""
    return next((n for n in path[1:] if type(n) in (cst.For, cst.While)), None)


def _accumulation_guard(path: Sequence[cst.CSTNode]) -> bool:
    """An ``if`` on the path whose test counts micro-steps: a ``%`` or a name that says
    ``accum``."""
    for parent, child in zip(path, path[1:]):
        if type(parent) is cst.If and child is not parent.test and _counts_micro_steps(parent.test):
            return True
    return False


def _counts_micro_steps(test: cst.CSTNode) -> bool:
    stack = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
            return True
        if type(node) in (cst.Name, cst.Attribute):
            name = last_name(node)  # type: ignore[arg-type]
            if name is not None and "accum" in name.lower():
                return True
        stack.extend(child_nodes(node))
    return False
