"""TPF202 host-sync-in-training-loop."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ...project.call_values import own_path, syncs_every_call, walk_syncs
from ...project.values import engine_for
from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.classifiers import callee_key, last_name, method_name
from ...facts.training.host_syncs import is_sync_call
from ...facts.training.guards import guarded_between
from ...facts.training.loop_bodies import is_loop_body, reached_per_step
from ...facts.training.loop_training import loops_may_train
from ...facts.training.step_bodies import step_bodies_may_sync
from ...facts.training.step_shapes import exits_early, hands_parameters, method_owner
from ...facts.training.replay_loops import replay_loop_around
from ...facts.training.loops import loop_bound_names, step_loop_around, training_facts, walk
from ...facts.training.screens import could_have_training_loop, could_train_text, step_function_syncs
from ...facts.training.step_names import loop_calls_step_by_name
from ...facts.training.test_code import in_test_code
from ...facts.training.sync_forms import add_terms as _add_terms, formats as _formats, formatted_values as _formatted_values
from ...facts.training.sync_forms import reduces_to_truth as _reduces

if TYPE_CHECKING:
    from ...project.index import ProjectIndex

_CONVERSIONS = frozenset({"float", "int", "bool"})
# torch functions whose result is a tensor that float()/int() would sync on.
_TORCH_REDUCTIONS = frozenset(
    f"torch.{n}" for n in ("sum", "mean", "max", "min", "norm", "argmax", "count_nonzero", "any", "all", "isnan", "isfinite")
)
_PREAMBLE = "import torch\nmodel.cuda()\n"
# Methods whose result is already on the host: printing or converting it syncs nothing more.
_HOST_RESULTS = frozenset({"item", "tolist", "numpy", "cpu"})


class HostSyncInTrainingLoop(Rule):
    """## What it does
    Flags device-to-host synchronisations that run on every iteration of a training loop (a
    loop whose body runs `.backward()` or an optimizer `.step()`): `.item()`, `.cpu()`,
    `.tolist()`, `.to("cpu")`, `float(loss)`/`int(t)`/`bool(t)` on a tensor, `print(loss)`,
    `torch.cuda.synchronize()`, the truth value of a backpropagated loss in an `if` test
    (`if loss == 0 or not torch.isfinite(loss):`, `if torch.isnan(loss):`, `if torch.isnan(loss).any():`) or in the
    test of a `while` that trains (`while err > tol:`), and calls of helpers that do one of these on every call:
    same-module functions, and project functions and methods of other modules
    (`calculate_accuracy(out, y)` from `utils.py` ending in `.item()`, `meter.add(loss)` with
    `meter = AverageMeter()` whose `add` calls `.cpu()`, at any depth through the project
    functions they call unconditionally; `model(x)` whose `forward`, or a submodule's, syncs, `.item()` or
    implicitly: `int(n)`, `float(n)`, `bool(n)` or `if n > k:` of a tensor the forward
    computed from its inputs by torch operations (not in a forward that uses NumPy);
    what a call runs is the value engine's dispatch, through attributes, parameters and
    factories; a helper handed `model.parameters()` that syncs once per parameter, as a
    gradient-clipping helper's `total += p.grad.norm().item()` does). Text formatted from a tensor with `%`, an f-string or `.format` counts wherever it goes
    (`pbar.set_postfix_str('%.3f' % loss)`). A loop that runs its own backward and optimizer
    step around an inner training loop (a GAN's generator step after the critic's loop) is
    a step loop for its own statements. A loop also trains when it calls a step
    function of another module, whatever its name (`trainer.train_step(x, y)`,
    `coach.fit_critic(real)`, `model.optimize_parameters()` with `model = create_model(opt)`). A loop over a loader's batches that replays each batch in
    inner `for _ in range(k):` training loops runs once per batch: its syncs count. A step
    function (it runs backward or an optimizer step, with no loop of its own) that the
    project calls from a loop is a loop body: when no call of it is itself reported (it is
    called under a condition, `if T % 4 == 0: agent.learn(mem)`, or after a rollout), its
    own unconditional syncs are reported inside it (`return loss.item()`), and so are those
    of a step function that such a loop body runs on every call (`update_g()` calling
    `self.backward_g()`, which runs backward and then `.item()`s: reported there, not at
    the call). A loop also trains through a trainer's `train` method handed data
    (`engine.train(x, y)`, not `model.train(mode)`).
    Silent for syncs under a guard (`if step % log_every == 0:`; a device test, `if
    torch.cuda.is_available():`, `if len(opt.gpu_ids) > 0:`, `if preds.is_cuda:`, is no guard),
    helpers that sync only under a condition or after an early `return`, after the loop, and in code that does not
    run on an accelerator.

    ## Why is this bad?
    CUDA kernels run asynchronously: the Python loop normally queues the next step while
    the GPU still works on the current one. Reading a value on the host makes the CPU wait
    until every queued kernel has finished, so the GPU idles while Python prepares the
    next step. One `.item()` per step can cost a large share of step time on small models.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device="cuda")
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
        if step % log_every == 0:
            print(running_loss.item() / (step + 1))
    ```

    ## Fix safety
    There is no automatic fix: where to accumulate and how often to sync depends on what
    the value is for. The message says what to do.
    """

    code = "TPF202"
    name = "host-sync-in-training-loop"
    message = (
        "`{what}` waits for the GPU on every training step; accumulate on the device "
        "(`total += loss.detach()`) and sync every N steps"
    )
    fix_applicability = Applicability.DISPLAY_ONLY
    triggers = (".backward(", ".step(")  # a training loop (see could_fire for step functions)

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A training loop, or a call of what may be a step function of another module
        (``screens.could_train_text``)."""
        return could_train_text(source)

    needs_cuda = True

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains: it runs backward or a step, or calls a helper defined here or
        a function named like a step of another module; or a function here runs a training
        step and syncs (a step function that another module may call from its loop)."""
        return could_have_training_loop(tree) or loop_calls_step_by_name(tree) or step_function_syncs(tree)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """A finding is in a loop that trains, or in a step function the project calls from
        loops (``step_bodies``): with neither, the file never reaches LibCST. A module
        whose tree shows no loop that may train (TPF205's screen) is not asked the first."""
        engine = engine_for(project)
        if (could_have_training_loop(tree) or loop_calls_step_by_name(tree)) and loops_may_train(engine, path, tree):
            return True
        return step_bodies_may_sync(engine, path, tree)

    VALID = (
        # Text formatted from host values only.
        _PREAMBLE + "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n"
        "    print('batch %d of %s' % (len(x), name))\n    print('{} {}'.format(step, name))\n",
        # CPU-only module
        "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n    print(loss.item())\n",
        # guarded
        _PREAMBLE + "for i, (x, y) in enumerate(loader):\n    loss = f(x)\n    loss.backward()\n"
        "    opt.step()\n    if i % 100 == 0:\n        print(loss.item())\n",
        # after the loop
        _PREAMBLE + "for x in loader:\n    loss = f(x)\n    loss.backward()\nprint(loss.item())\n",
        # not a training loop
        _PREAMBLE + "for x in loader:\n    acc += (model(x) == y).sum().item()\n",
        # scheduler step is not an optimizer step
        _PREAMBLE + "for epoch in range(10):\n    scheduler.step()\n    print(lr.item())\n",
        # an epoch loop around a training helper
        _PREAMBLE + "def train(loader):\n    for x in loader:\n        f(x).backward()\n        opt.step()\n"
        "for epoch in range(3):\n    train(loader)\n    print(acc.item())\n",
        # int() of a non-tensor
        _PREAMBLE + "for x in loader:\n    f(x).backward()\n    opt.step()\n    n = int(args.steps)\n",
    )
    INVALID = (
        Invalid(
            _PREAMBLE + "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n"
            "    total += loss.item()\n",
            line=7,
        ),
        # The loss formatted into the printed text: `%` and `str.format` convert it too.
        Invalid(
            _PREAMBLE + "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n"
            "    print('step %d loss %.4f' % (step, loss))\n",
            line=7,
        ),
        Invalid(
            _PREAMBLE + "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n"
            "    print('loss {:.4f}'.format(loss))\n",
            line=7,
        ),
        Invalid(
            _PREAMBLE + "for x, y in loader:\n    d_loss = f(x, y)\n    d_loss.backward()\n    opt.step()\n"
            "    print('[D loss: %f]' % (d_loss.data[0],))\n",
            line=7,
        ),
        Invalid(
            _PREAMBLE + "def step(x):\n    loss = f(x)\n    loss.backward()\n    optimizer.step()\n"
            "    return loss.item()\nfor x in loader:\n    step(x)\n",
            line=9,
        ),
        Invalid(
            _PREAMBLE + "for x in loader:\n    loss = f(x)\n    loss.backward()\n    opt.step()\n"
            "    torch.cuda.synchronize()\n",
            line=7,
        ),
        Invalid(
            _PREAMBLE + "for x in loader:\n    loss = f(x)\n    loss.backward()\n    opt.step()\n    losses.append(float(loss))\n",
            line=7,
        ),
        # A device-availability test is no sampling guard; `%` into a progress bar's text.
        Invalid(_PREAMBLE + "for x in loader:\n    loss = f(x)\n    loss.backward()\n    opt.step()\n"
                "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n", line=8),
        Invalid(_PREAMBLE + "for x in bar:\n    loss = f(x)\n    loss.backward()\n    opt.step()\n"
                "    bar.set_postfix_str('%.3f' % loss)\n", line=7),
        Invalid(_PREAMBLE + "for x in loader:\n    loss = f(x)\n    if loss == 0 or not torch.isfinite(loss):\n"
                "        continue\n    loss.backward()\n    opt.step()\n", line=5),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._tensor_names: Dict[int, Set[str]] = {}
        self._loop_names: Dict[int, FrozenSet[str]] = {}
        self._rollouts: Dict[int, bool] = {}
        self._loop_bodies: Dict[int, bool] = {}

    def visit_Call(self, node: cst.Call) -> None:
        what = self._sync_kind(node)
        if what is None and (
            self.context.project is None
            or not isinstance(node.func, (cst.Name, cst.Attribute, cst.Subscript))
            or not self.context.fact(training_facts).has_training_loop
        ):
            return
        ancestors = self.context.ancestors
        if ancestors and ancestors[-1] is node:
            ancestors = ancestors[:-1]
        around = step_loop_around(self.context, ancestors) or replay_loop_around(self.context, ancestors)
        if around is None:
            if what is not None:
                self._check_step_body(node, what, ancestors)
            return
        index, loop = around
        if in_test_code(ancestors, self.context.path) or any(isinstance(a, cst.Assert) for a in ancestors[index:]):
            return
        if guarded_between([*ancestors[index:], node], self._bound_names(loop.node)):
            return
        if any(isinstance(a, (cst.For, cst.While)) and self._rollout(a) for a in ancestors[index:]):
            return
        if what is None:
            what = self._project_helper(node)
            if what is None:
                return
        if what == "tensor" and not self._on_tensor(node, loop.node):
            return
        self.report(node, message=self.message.format(what=self._label(node, what)))

    def visit_If(self, node: cst.If) -> None:
        """``if loss == 0 or not torch.isfinite(loss):``, ``if torch.isnan(loss).any():``: the
        truth value of a tensor the loop backpropagates (its first operand, always
        evaluated) is an implicit ``bool()``."""
        self._truth(node, node.test, None)

    def visit_While(self, node: cst.While) -> None:
        """``while loss > tol:`` around or inside a training step: the test's truth value is
        read on every pass (the loop's own test, when the loop itself trains)."""
        loop = self.context.fact(training_facts).loop(node)
        own = loop if loop is not None and (loop.is_step_loop or loop.alternating) else None
        self._truth(node, node.test, own)

    def _truth(self, node: cst.CSTNode, whole: cst.BaseExpression, own) -> None:
        test = whole
        while isinstance(test, (cst.BooleanOperation, cst.UnaryOperation)):
            test = test.left if isinstance(test, cst.BooleanOperation) else test.expression
        # `if torch.isnan(loss):`: the truth of a reduction of the loss (its argument judged)
        direct = isinstance(test, cst.Call) and self.context.qualname(test.func) in _TORCH_REDUCTIONS
        if isinstance(test, cst.Call) and _reduces(test):
            pass  # `torch.isnan(loss).any()`: a bool of a tensor, whatever holds it
        elif not direct and not isinstance(test, (cst.Name, cst.Comparison)):
            return
        ancestors = self.context.ancestors
        ancestors = ancestors[:-1] if ancestors and ancestors[-1] is node else ancestors
        if in_test_code(ancestors, self.context.path):
            return
        if own is not None:
            if guarded_between([*ancestors, node], self._bound_names(node)):
                return
            names = self._loss_names(node)
        else:
            around = step_loop_around(self.context, ancestors)
            if around is None:
                return
            index, loop = around
            if guarded_between([*ancestors[index:], node, whole], self._bound_names(loop.node)):
                return
            names = self._loss_names(loop.node)
        if direct:
            synced = bool(test.args) and self._is_tensor(test.args[0].value, names)  # type: ignore[attr-defined]
        else:
            synced = self._is_tensor(test, names)
        if synced:
            keyword = "while" if isinstance(node, cst.While) else "if"
            self.report(test, message=self.message.format(what=f"{keyword} {self.context.code_for(test)}"))

    def _label(self, node: cst.Call, what: str) -> str:
        return self.context.code_for(node.func) + "(...)" if what in ("tensor", "helper") else what

    def _project_helper(self, node: cst.Call) -> Optional[str]:
        """A call of a project function or method of another module that syncs on every
        call (``calculate_accuracy(out, y)`` ending in ``.item()``, ``meter.add(loss)``)."""
        values = self.context.values()
        ancestors = self.context.ancestors
        if values is None or len(ancestors) < 2:
            return None
        callees = values.callees(node, ancestors[1])
        if callees and all(syncs_every_call(values.engine, d) for d in callees):
            return "helper"
        if callees and len(callees) == 1 and hands_parameters(node, callees[0], walk_syncs(values.engine, callees[0])):
            return "helper"  # `clip(model.parameters())`, whose loop syncs per parameter
        return None

    # -- a step function called from a loop is a loop body ----------------------------------
    def _check_step_body(self, node: cst.Call, what: str, ancestors: Sequence[cst.CSTNode]) -> None:
        """A sync on every call of a function that runs one training step (backward or an
        optimizer step, no loop of its own) and that the project calls from a loop where
        the call itself is not reported: under a condition (``if T % 4 == 0: dqn.learn()``)
        or in a rollout (``agent.update()`` after ``envs.step(action)``)."""
        index = self.context.project
        if index is None:
            return
        at = next((i for i in range(len(ancestors) - 1, -1, -1) if isinstance(ancestors[i], cst.FunctionDef)), None)
        if at is None or any(isinstance(a, (cst.For, cst.While, cst.Lambda, cst.ClassDef)) for a in ancestors[at + 1 :]):
            return
        function = ancestors[at]
        assert isinstance(function, cst.FunctionDef)
        owner = method_owner(ancestors, at)
        if owner is False:
            return
        key = (owner, function.name.value)
        facts = self.context.fact(training_facts)
        if key not in facts.step_functions or key in facts.loop_functions:
            return
        if in_test_code(ancestors, self.context.path) or guarded_between([*ancestors[at:], node]):
            return
        if exits_early(function, ancestors[at + 1 :]):
            return
        if what == "tensor" and not self._on_tensor(node, function):
            return
        if not self._loop_body(function, owner):
            return
        if what == "helper" and self._step_reached(node):
            return  # a step function run on every call of this one: its syncs are reported in it
        self.report(node, message=self.message.format(what=self._label(node, what)))

    def _step_reached(self, node: cst.Call) -> bool:
        """The helper called is itself a step function that is a loop body through this
        one (``self.backward_g()`` running backward, then ``.item()``s)."""
        values = self.context.values()
        ancestors = self.context.ancestors
        if values is None or len(ancestors) < 2:
            return False
        callees = values.callees(node, ancestors[1])
        return bool(callees) and all(reached_per_step(values.engine, d) for d in callees)

    def _loop_body(self, function: cst.FunctionDef, owner: Optional[str]) -> bool:
        cached = self._loop_bodies.get(id(function))
        if cached is None:
            cached = False
            index = self.context.project
            values = self.context.values()
            name = function.name.value if owner is None else f"{owner}.{function.name.value}"
            definition = None if index is None else index.resolve(own_path(self.context), name)
            if values is not None and definition is not None and definition.kind in ("function", "method"):
                cached = is_loop_body(values.engine, definition)
            self._loop_bodies[id(function)] = cached
        return cached

    def _rollout(self, loop: cst.CSTNode) -> bool:
        """A reinforcement-learning rollout (``env.step(action.item())``): the environment
        needs the action on the host every step, so the sync cannot be deferred."""
        cached = self._rollouts.get(id(loop))
        if cached is None:
            found: List[bool] = []

            def enter(child: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
                if found or isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                    return False
                if isinstance(child, cst.Call) and method_name(child) == "step" and child.args:
                    receiver = last_name(child.func.value)  # type: ignore[union-attr]
                    if receiver is not None and "env" in receiver.lower():
                        found.append(True)
                return True

            walk(loop, enter)
            cached = self._rollouts[id(loop)] = bool(found)
        return cached

    def _bound_names(self, loop: cst.CSTNode) -> FrozenSet[str]:
        cached = self._loop_names.get(id(loop))
        if cached is None:
            cached = self._loop_names[id(loop)] = loop_bound_names(loop)  # type: ignore[arg-type]
        return cached

    def _sync_kind(self, node: cst.Call) -> Optional[str]:
        name = method_name(node)
        if name is not None:
            if name in ("item", "cpu", "tolist", "numpy", "to", "synchronize"):
                if is_sync_call(node, self.context.qualname):
                    return "torch.cuda.synchronize()" if name == "synchronize" else f".{name}()"
                return None
        func = node.func
        if isinstance(func, cst.Name):
            if func.value == "synchronize" and self.context.qualname(func) == "torch.cuda.synchronize":
                return "torch.cuda.synchronize()"
            if func.value in _CONVERSIONS or func.value == "print":
                return "tensor" if node.args and self.context.lookup(func.value) is None else None
        facts = self.context.fact(training_facts)
        if facts.sync_helpers:
            key = callee_key(node, self._class_name())
            if key is not None and key in facts.sync_helpers:
                return "helper"
        if any(_formats(a.value) for a in node.args):
            return "tensor"  # text formatted from a tensor: `pbar.set_postfix_str('%.3f' % loss)`
        return None

    def _class_name(self) -> Optional[str]:
        for ancestor in reversed(self.context.ancestors):
            if type(ancestor) is cst.ClassDef:
                return ancestor.name.value
        return None

    # -- is the argument of float()/int()/bool()/print() a tensor? -----------------------------
    def _on_tensor(self, node: cst.Call, loop: cst.CSTNode) -> bool:
        names = self._loss_names(loop)
        func = node.func
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if isinstance(func, cst.Name) and func.value in _CONVERSIONS:
            return len(args) == 1 and self._is_tensor(args[0], names)
        if isinstance(func, cst.Name) and func.value == "print":
            return any(self._is_tensor(value, names) for arg in args for value in _formatted_values(arg))
        formatted = [a.value for a in node.args if _formats(a.value)]
        return any(self._is_tensor(value, names) for arg in formatted for value in list(_formatted_values(arg))[1:])

    def _is_tensor(self, expr: cst.BaseExpression, names: Set[str]) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in names
        if isinstance(expr, cst.Subscript):  # `loss[0]`, old code's `loss.data[0]`
            return self._is_tensor(expr.value, names)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            return self._is_tensor(expr.value, names)
        if isinstance(expr, cst.Comparison):  # `bool(loss == 0)`: a comparison of tensors is one;
            # `loss is None` compares identities on the host and reads no value
            sides = (expr.left, *(c.comparator for c in expr.comparisons))
            return any(not isinstance(c.operator, (cst.Is, cst.IsNot))
                       and (self._is_tensor(sides[i], names) or self._is_tensor(c.comparator, names))
                       for i, c in enumerate(expr.comparisons))
        if isinstance(expr, cst.Call):
            if self.context.qualname(expr.func) in _TORCH_REDUCTIONS:
                return True
            if _reduces(expr):  # `torch.isnan(loss).any()`, `loss.isnan().any()`: of the loss itself
                inner = expr.func.value  # type: ignore[attr-defined]
                if isinstance(inner, cst.Call) and self.context.qualname(inner.func) in _TORCH_REDUCTIONS:
                    return bool(inner.args) and self._is_tensor(inner.args[0].value, names)
                return self._is_tensor(inner, names)
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _HOST_RESULTS:
                # `print(loss.item())`: the `.item()` is the sync (reported on its own);
                # what print gets is already on the host.
                return False
            root = expr.func
            while isinstance(root, (cst.Attribute, cst.Call)):
                root = root.value if isinstance(root, cst.Attribute) else root.func
            return isinstance(root, cst.Name) and root.value in names and isinstance(expr.func, cst.Attribute)
        return False

    def _loss_names(self, loop: cst.CSTNode) -> Set[str]:
        """Names whose ``.backward()`` the loop runs: the losses, known to be tensors."""
        cached = self._tensor_names.get(id(loop))
        if cached is not None:
            return cached
        names: Set[str] = set()
        made: Dict[str, List[Tuple[cst.BaseExpression, bool]]] = {}  # name -> (value, an element of it)

        def enter(child: cst.CSTNode, stack: Sequence[cst.CSTNode]) -> bool:
            if isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(child, cst.Assign):
                for target in child.targets:
                    bound = target.target
                    if isinstance(bound, cst.Name):
                        made.setdefault(bound.value, []).append((child.value, False))
                    elif isinstance(bound, (cst.Tuple, cst.List)):  # an element of the value
                        for element in bound.elements:
                            if isinstance(element.value, cst.Name):
                                made.setdefault(element.value.value, []).append((child.value, True))
            if isinstance(child, cst.Call) and method_name(child) == "backward":
                receiver = child.func.value  # type: ignore[union-attr]
                positional = [a.value for a in child.args if a.keyword is None and isinstance(a.value, cst.Name)]
                if positional:  # accelerator.backward(loss), y.backward(grad)
                    names.update(a.value for a in positional)
                if isinstance(receiver, cst.Name):
                    names.add(receiver.value)
                elif isinstance(receiver, cst.Call):
                    names.update(a.value.value for a in receiver.args if isinstance(a.value, cst.Name))
            return True

        walk(loop, enter)
        _add_terms(names, made)
        self._tensor_names[id(loop)] = names
        return names

