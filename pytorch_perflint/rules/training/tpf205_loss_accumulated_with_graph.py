"""TPF205 loss-accumulated-with-graph."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import libcst as cst

from ...analysis.walk import child_nodes

from ...project.summarizer import parse_tree
from ...project.values import engine_for
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.graph_values import (
    GraphValues,
    backpropagated,
    class_of_instance,
    initial_value,
    is_fresh_accumulator,
    meter_keeps_values,
    rebound_in_loop,
)
from ...facts.training.loop_training import loops_may_train
from ...facts.training.loops import training_facts
from ...facts.training.no_grad import under_no_grad
from ...facts.training.screens import could_have_training_loop, could_train_text
from ...facts.training.step_names import loop_calls_step_by_name
from ...facts.training.test_code import in_test_code

if TYPE_CHECKING:
    from ...project import ProjectIndex

_SETUP = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
_LOOP = "for x, y in loader:\n    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    opt.step()\n"


class LossAccumulatedWithGraph(Rule):
    """## What it does
    Flags, inside a training loop (a loop that runs `.backward()` or an optimizer step), a
    loss tensor accumulated into something that outlives the iteration: `total += loss`,
    `total = total + loss`, `losses.append(loss)`, an entry of a dict display
    (`totals["loss"] += loss`, `history["loss"].append(loss)`), or `meter.update(loss)` of a project
    meter class whose `update` stores its argument (`self.sum += val * n`). A loss is the
    result of a criterion (`criterion(out, y)`, an `nn.*Loss` instance),
    a `torch.nn.functional` loss (`F.cross_entropy`), or arithmetic on one (`loss * n`,
    `loss.mean()`); the value engine follows one through names, attributes, returns and
    methods of any module (`cost = model.train_model(x, y)` whose method ends `return
    self.cost` after `self.cost = self.criterion(out, y)`), made where autograd records.
    The accumulator must be bound before the loop (`total = 0`,
    `losses = []`, `meter = AverageMeter()`, or `total = count = 0`). A value the loop
    backpropagates carries a graph whatever made it (also after `loss = loss + aux` or
    `loss += aux`, or bound once per arm of an `if`/`else`), and so do the terms it was computed from that a project function or
    method of any module returns beside it (`loss, box = compute(out, y)` where `compute`
    ends `total = box + cls; return total, box`; `total, bpr, reg = model.bpr_loss(u, i, j)`
    returning `bpr + reg, bpr, reg`; a `forward` that returns such a call), and the tensor
    terms the loop computes it from (`bpr = -torch.sum(...)`, `loss = bpr + w * reg`). A
    name the loop binds more than once is judged by the binding that reaches the
    accumulation (`step_cost = 0` at the top, then `step_cost = a + b`; a `cost` of a
    no-grad validation pass, then the step's own). An optimizer built from a list of a
    model's parameters (`optimtype([p for p in net.parameters() if p.requires_grad])`)
    makes the loop train whatever names its class.
    Silent for `loss.item()`, `loss.detach()`, `loss.data`, `float(loss)`, values computed
    under `torch.no_grad()`, an accumulator that is backpropagated later (`total.backward()`,
    `torch.stack(losses).mean().backward()`: gradient accumulation on purpose), one
    re-created every iteration (a dict entry assigned anew in the loop counts as one), and
    values that are not known to be losses.

    ## Why is this bad?
    A loss tensor holds a reference to the autograd graph that produced it. Adding it into
    a running total (or a list) keeps every step's autograd graph alive: memory grows each
    iteration until the accumulator is dropped, usually at the end of the epoch. The
    graph's nodes and loss tensors stay even after `backward()` freed the activations they
    saved; a value that was never backpropagated (a term logged beside the loss) keeps its
    saved activations too. It is the classic "my memory grows every step" bug. After
    `backward()` the kept nodes are host memory: device memory grows by a loss scalar per
    step (the bench scenario's peak CUDA memory was 1.06 MiB before and after the fix over
    128 steps on an H200), and by the saved activations only for values never
    backpropagated.

    ## Example
    ```python
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss
    ```

    ## Use instead
    ```python
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    ```

    ## Fix safety
    The fix accumulates `loss.detach()` instead of `loss`. It is safe: the value is the
    same, only the graph behind it is released. Code that backpropagates through the
    accumulator is not flagged.
    """

    code = "TPF205"
    name = "loss-accumulated-with-graph"
    message = (
        "Accumulating `{value}` into `{into}` keeps every step's autograd graph alive: "
        "memory grows each iteration; accumulate `{value}.detach()` instead"
    )
    fix_applicability = Applicability.SAFE
    triggers = (".backward(", ".step(")  # a training loop (see could_fire for step functions)

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """TPF202's text screen: a training loop, or a call of a step function of another
        module (``screens.could_train_text``)."""
        return could_train_text(source)

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains (as TPF202's screen sees it)."""
        return could_have_training_loop(tree) or loop_calls_step_by_name(tree)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """Every finding is in a training loop: some loop may train, with what the project
        code it calls does (``loop_training``)."""
        return loops_may_train(engine_for(project), path, tree)

    VALID = (
        _SETUP + "total = 0\n" + _LOOP + "    total += loss.item()\n",
        # what an unknown helper returns beside the backpropagated loss is not known to be one
        _SETUP + "aux_total = 0\nfor x, y in loader:\n    loss, aux = compute(model, x, y)\n    loss.backward()\n"
        + "    opt.step()\n    aux_total += aux\n",
        # bound twice in the loop, the second time to a float
        _SETUP + "total = 0\nfor x, y in loader:\n    loss = compute(model, x, y)\n    loss.backward()\n"
        + "    opt.step()\n    loss = loss.item()\n    total += loss\n",
        _SETUP + "total = 0\n" + _LOOP + "    total += loss.detach()\n",
        _SETUP + "total = 0\n" + _LOOP + "    total += loss.data\n",
        _SETUP + "total = 0\n" + _LOOP + "    total += float(loss)\n",
        _SETUP + "losses = []\n" + _LOOP + "    losses.append(loss.item())\n",
        # re-created every iteration
        _SETUP + "for x, y in loader:\n    total = 0\n    for head in heads:\n        total += F.mse_loss(head(x), y)\n"
        + "    total.backward()\n    opt.step()\n",
        # backpropagated later: gradient accumulation on purpose
        _SETUP + "total = 0\nfor i, (x, y) in enumerate(loader):\n    total = total + F.cross_entropy(model(x), y)\n"
        + "    if i % 4 == 3:\n        total.backward()\n        opt.step()\n        total = 0\n",
        _SETUP + "losses = []\nfor x, y in loader:\n    losses.append(F.cross_entropy(model(x), y))\n"
        + "    if len(losses) == 4:\n        torch.stack(losses).mean().backward()\n        opt.step()\n        losses = []\n",
        # under no_grad (an evaluation pass inside the training loop)
        _SETUP + "val_total = 0\n" + _LOOP + "    with torch.no_grad():\n        val = F.cross_entropy(model(vx), vy)\n"
        + "        val_total += val\n",
        _SETUP + "val_total = 0\n" + _LOOP + "    with torch.no_grad():\n        val = F.cross_entropy(model(vx), vy)\n"
        + "    val_total += val\n",
        # not a training loop
        _SETUP + "total = 0\nfor x, y in loader:\n    total += F.cross_entropy(model(x), y)\n",
        # not known to be a loss
        _SETUP + "total = 0\n" + _LOOP + "    total += model.compute(x)\n",
        _SETUP + "total = 0\n" + _LOOP + "    total += accuracy(model(x), y)\n",
        # bound inside the loop by something else too
        _SETUP + "total = 0\n" + _LOOP + "    loss = loss.item()\n    total += loss\n",
        # a dict entry that is not a fresh list
        _SETUP + "history = {'loss': tracker}\n" + _LOOP + "    history['loss'].append(loss)\n",
        # a meter that converts before storing
        _SETUP + "class Meter:\n    def update(self, val, n=1):\n        self.sum += val.item() * n\n"
        + "meter = Meter()\n" + _LOOP + "    meter.update(loss)\n",
        # a meter of a library: unknown
        _SETUP + "from torchmetrics import MeanMetric\nmeter = MeanMetric()\n" + _LOOP + "    meter.update(loss)\n",
        # micro-batches: the list is re-created every optimizer step
        _SETUP + "for x, y in loader:\n    losses = []\n    for cx, cy in zip(x.chunk(2), y.chunk(2)):\n"
        + "        loss = F.cross_entropy(model(cx), cy)\n        loss.backward()\n        losses.append(loss)\n"
        + "    opt.step()\n    print(sum(losses).item())\n",
        # a step function's micro-batch loop: the optimizer steps once, after it
        _SETUP + "def train_step(batches):\n    total = torch.zeros(())\n    for x, y in batches:\n"
        + "        loss = F.cross_entropy(model(x), y) / len(batches)\n        loss.backward()\n        total += loss\n"
        + "    opt.step()\n    return total.item()\n",
        # a method that returns a loss made under no_grad, or one that converts it
        _SETUP + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "        self.criterion = nn.MSELoss()\n    def val_cost(self, x, y):\n        with torch.no_grad():\n"
        + "            return self.criterion(self(x), y)\n    def cost_of(self, x, y):\n"
        + "        return self.criterion(self(x), y).item()\n"
        + "model = Net()\ntotal = 0\nvalues = 0\n" + _LOOP + "    total += model.val_cost(x, y)\n"
        + "    values += model.cost_of(x, y)\n",
        # a same-module function named like a criterion: what it returns is its own business
        _SETUP + "def loss_fn(a, b):\n    return float(F.mse_loss(a, b))\ntotal = 0\n"
        + "for x, y in loader:\n    l = loss_fn(model(x), y)\n    opt.step()\n    total += l\n",
    )
    INVALID = (
        # a term of the backpropagated loss that a same-module function returns beside it
        Invalid(
            _SETUP + "def compute(out, y):\n    box = F.l1_loss(out, y)\n    cls = F.cross_entropy(out, y)\n"
            + "    total = box + cls\n    return total, box\n"
            + "box_sum = 0\nfor x, y in loader:\n    loss, box = compute(model(x), y)\n    loss.backward()\n"
            + "    opt.step()\n    box_sum += box\n",
            line=14,
        ),
        # a value the loop backpropagates carries a graph, whatever helper made it
        Invalid(
            _SETUP + "total = 0\nfor x, y in loader:\n    loss, aux = compute(model, x, y)\n    loss.backward()\n"
            + "    opt.step()\n    total += loss\n",
            line=9,
        ),
        Invalid(
            _SETUP + "total = 0\n" + _LOOP + "    total += loss\n",
            line=9,
            expected_fix=_SETUP + "total = 0\n" + _LOOP + "    total += loss.detach()\n",
        ),
        Invalid(
            _SETUP + "def train(model, loader, opt, criterion):\n    running, losses = None, None\n"
            + "    running, losses = 0.0, []\n    for x, y in loader:\n        out = model(x)\n"
            + "        loss = criterion(out, y) * 0.5\n        opt.zero_grad()\n        loss.backward()\n"
            + "        opt.step()\n        running = running + loss * x.size(0)\n        losses.append(loss)\n"
            + "    return running, losses\n",
            line=14,
            expected_fix=_SETUP + "def train(model, loader, opt, criterion):\n    running, losses = None, None\n"
            + "    running, losses = 0.0, []\n    for x, y in loader:\n        out = model(x)\n"
            + "        loss = criterion(out, y) * 0.5\n        opt.zero_grad()\n        loss.backward()\n"
            + "        opt.step()\n        running = running + (loss * x.size(0)).detach()\n        losses.append(loss.detach())\n"
            + "    return running, losses\n",
        ),
        Invalid(
            _SETUP + "class AverageMeter:\n    def update(self, val, n=1):\n        self.val = val\n"
            + "        self.sum += val * n\n        self.count += n\n"
            + "meter = AverageMeter()\ncriterion = nn.CrossEntropyLoss()\n"
            + "for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n    opt.step()\n"
            + "    meter.update(loss, x.size(0))\n",
            line=15,
            expected_fix=_SETUP + "class AverageMeter:\n    def update(self, val, n=1):\n        self.val = val\n"
            + "        self.sum += val * n\n        self.count += n\n"
            + "meter = AverageMeter()\ncriterion = nn.CrossEntropyLoss()\n"
            + "for x, y in loader:\n    loss = criterion(model(x), y)\n    loss.backward()\n    opt.step()\n"
            + "    meter.update(loss.detach(), x.size(0))\n",
        ),
        # an entry of a dict of totals
        Invalid(
            _SETUP + "totals = {'loss': 0.0}\n" + _LOOP + "    totals['loss'] += loss\n",
            line=9,
            expected_fix=_SETUP + "totals = {'loss': 0.0}\n" + _LOOP + "    totals['loss'] += loss.detach()\n",
        ),
        # a list in a dict of histories
        Invalid(
            _SETUP + "history = {'loss': [], 'acc': []}\n" + _LOOP + "    history['loss'].append(loss)\n",
            line=9,
            expected_fix=_SETUP + "history = {'loss': [], 'acc': []}\n" + _LOOP + "    history['loss'].append(loss.detach())\n",
        ),
        # a loss returned by a method of the model class (its criterion's output, kept in an attribute)
        Invalid(
            _SETUP + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            + "        self.criterion = nn.MSELoss()\n    def aux_cost(self, x, y):\n"
            + "        self.aux = self.criterion(self(x), y)\n        return self.aux\n"
            + "model = Net()\naux_total = 0\n" + _LOOP + "    aux_total += model.aux_cost(x, y) / 10\n",
            line=17,
        ),
        # a reset every 100 steps still keeps 100 graphs alive
        Invalid(
            _SETUP + "running_loss = 0.0\nfor i, (x, y) in enumerate(loader):\n"
            + "    loss = F.nll_loss(model(x), y)\n    loss.backward()\n    opt.step()\n    running_loss += loss\n"
            + "    if i % 100 == 99:\n        print(running_loss / 100)\n        running_loss = 0.0\n",
            line=9,
        ),
    )

    # -- the accumulating statements ---------------------------------------------------
    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, cst.AddAssign):
            return
        target = node.target
        if isinstance(target, cst.Name):
            self._check(node, target.value, node.value, "sum")
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            key = _literal_key(target)  # `totals["loss"] += loss`
            if key is not None:
                self._check(node, target.value.value, node.value, "sum", key)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        name = node.targets[0].target.value
        value = node.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            if isinstance(value.left, cst.Name) and value.left.value == name:
                self._check(node, name, value.right, "sum")
            elif isinstance(value.right, cst.Name) and value.right.value == name:
                self._check(node, name, value.left, "sum")

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return
        receiver = call.func.value
        method = call.func.attr.value
        if method not in ("append", "update") or not call.args:
            return
        first = call.args[0]
        if first.keyword is not None or first.star:
            return
        if isinstance(receiver, cst.Name):
            self._check(node, receiver.value, first.value, "list" if method == "append" else "meter")
        elif method == "append" and isinstance(receiver, cst.Subscript):
            key = _literal_key(receiver)
            if key is not None and isinstance(receiver.value, cst.Name):
                self._check(node, receiver.value.value, first.value, "list", key)

    # -- the checks --------------------------------------------------------------------
    def _check(self, statement: cst.CSTNode, into: str, value: cst.BaseExpression, kind: str, key: Optional[str] = None) -> None:
        ancestors = tuple(self.context.ancestors[:-1])  # the context's stack ends with the node
        found = self._training_loop(ancestors)
        if found is None:
            return
        index, loop = found
        if in_test_code(ancestors, self.context.path) or under_no_grad(self.context, ancestors):
            return
        function = next((a for a in reversed(ancestors[:index]) if isinstance(a, cst.FunctionDef)), self.context.module)
        graph = GraphValues(self.context, loop, ancestors[:index + 1])
        if not graph.carries(value, ancestors + (statement,)):
            return
        initial = initial_value(function, loop, into)
        if initial is not None and key is not None:
            initial = _dict_entry(initial, key)  # `history = {"loss": []}`, `history["loss"].append(...)`
        if initial is None:
            return
        if kind == "meter":
            cls = class_of_instance(self.context, initial, ancestors)
            if cls is None or not meter_keeps_values(self.context, cls, parse_tree):
                return
        elif not is_fresh_accumulator(self.context, initial, kind, ancestors):
            return
        if rebound_in_loop(loop, into, self._accumulations(loop, into)):
            return
        if key is not None and _entry_written(loop, into, statement):
            return  # `totals["loss"] = 0` in the loop: the entry may be re-created
        if backpropagated(self.context, function, into):
            return
        shown = _short(self.context.code_for(value).strip())
        if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
            shown = f"({shown})"
        message = self.message.format(value=shown, into=into if key is None else f"{into}[{key!r}]")
        fix = self.fix([(value, _detached(value))], message=f"Accumulate `{shown}.detach()`")
        self.report(statement, message=message, fix=fix)

    def _training_loop(self, ancestors: Sequence[cst.CSTNode]) -> Optional[Tuple[int, cst.CSTNode]]:
        """The loop whose iterations the accumulator must outlive: the outermost step loop
        around the statement in its own function (a micro-batch loop inside a step loop is
        part of one step), else the innermost training loop; None when that loop only runs
        backward (gradient accumulation: the optimizer steps after it, once)."""
        facts = self.context.fact(training_facts)
        if not facts.loops:
            return None
        innermost: Optional[Tuple[int, cst.CSTNode]] = None
        outer_step: Optional[Tuple[int, cst.CSTNode]] = None
        for index in range(len(ancestors) - 1, -1, -1):
            node = ancestors[index]
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(node, (cst.For, cst.While)):
                loop = facts.loop(node)
                in_body = index + 1 < len(ancestors) and ancestors[index + 1] is node.body
                if loop is None or not loop.is_training or not in_body:
                    continue
                if innermost is None:
                    innermost = (index, node)
                if loop.is_step_loop:
                    outer_step = (index, node)
        chosen = outer_step or innermost
        if chosen is not None:
            facts_of = facts.loop(chosen[1])
            if facts_of is not None and not facts_of.step:
                return None  # backward only: micro-batches of one optimizer step
        return chosen

    def _accumulations(self, loop: cst.CSTNode, into: str) -> Tuple[cst.CSTNode, ...]:
        """The statements of the loop that accumulate into ``into`` (``+=``, ``x = x + ...``)."""
        found = []
        stack = [loop.body]  # type: ignore[attr-defined]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == into:
                found.append(node)
            elif isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                value = node.value
                if isinstance(target, cst.Name) and target.value == into and isinstance(value, cst.BinaryOperation):
                    if isinstance(value.operator, cst.Add) and any(
                        isinstance(side, cst.Name) and side.value == into for side in (value.left, value.right)
                    ):
                        found.append(node)
            if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.extend(child_nodes(node))
        return tuple(found)


def _literal_key(subscript: cst.Subscript) -> Optional[str]:
    """``"loss"`` for ``history["loss"]``."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    index = subscript.slice[0].slice.value
    if isinstance(index, cst.SimpleString):
        value = index.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _entry_written(loop: cst.CSTNode, into: str, statement: cst.CSTNode) -> bool:
    """An entry of dict ``into`` is assigned anew in the loop (``totals["loss"] = 0``)."""
    stack: List[cst.CSTNode] = [loop.body]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if node is not statement and isinstance(node, (cst.Assign, cst.AnnAssign)):  # `+=` on an entry keeps it
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == into for t in targets):
                return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(child_nodes(node))
    return False


def _dict_entry(value: cst.BaseExpression, key: str) -> Optional[cst.BaseExpression]:
    """The value a dict display gives ``key`` (``{"loss": [], ...}``)."""
    if not isinstance(value, cst.Dict):
        return None
    for element in value.elements:
        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
            if element.key.evaluated_value == key:
                return element.value
    return None


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _detached(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value.detach()``, parenthesised when ``value`` is an operation."""
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or value.lpar:
        if not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
