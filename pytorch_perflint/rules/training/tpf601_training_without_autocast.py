"""TPF601 training-without-autocast."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Union

import libcst as cst

from ...rule import Invalid, Rule
from ...types import Applicability
from ...facts.training.loops import training_facts
from ...facts.training.precision import chooses_precision
from ...facts.training.loop_training import loops_may_train
from ...facts.training.screens import could_have_training_loop
from ...project.values import engine_for

if TYPE_CHECKING:
    from ...project.index import ProjectIndex

_LOOP = (
    "import torch\nmodel = Net().cuda()\nfor x, y in loader:\n    loss = crit(model(x.cuda()), y.cuda())\n"
    "    loss.backward()\n    opt.step()\n"
)


class TrainingWithoutAutocast(Rule):
    """## What it does
    Flags a CUDA training loop (a loop that runs `.backward()` and an optimizer step, itself
    or through same-module helpers) in a module with no `torch.autocast` /
    `torch.amp.autocast`, no `GradScaler`, no half or bfloat16 model, no TF32 setting and
    no framework that sets the precision (Accelerate, Lightning, DeepSpeed, a `Trainer`).
    The loop header is reported.

    Preview, not on by default: it reports every float32 accelerator loop, including ones
    too small to gain from mixed precision (MNIST MLPs, full-batch GCNs on Cora, RL agents
    with 256-unit MLPs), whose size a linter cannot know. On 63 public repositories it
    reached 0.59 precision on 85 findings, far below the 0.95 that graduation asks:
    [docs/precision/preview-graduation.md](precision/preview-graduation.md).

    ## Why is this bad?
    In float32 the GPU's tensor cores sit mostly idle: matrix multiplies and convolutions in
    float16/bfloat16 under autocast run several times faster and halve activation memory,
    while autocast keeps numerically sensitive ops in float32.

    ## Example
    ```python
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    There is no automatic fix: float16 needs a `GradScaler`, bfloat16 needs hardware
    support, and the accuracy impact must be checked on the user's model.
    """

    code = "TPF601"
    name = "training-without-autocast"
    message = (
        "CUDA training loop runs in float32; use `torch.autocast('cuda', dtype=torch.bfloat16)` "
        "(or float16 with a GradScaler) for the forward pass"
    )
    fix_applicability = Applicability.DISPLAY_ONLY
    triggers = (".backward(",)  # a training loop
    needs_cuda = True

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """Some loop trains: it runs backward or a step, or calls a helper defined here."""
        return could_have_training_loop(tree)

    @classmethod
    def could_fire_project(cls, tree: ast.Module, path: str, project: "ProjectIndex") -> bool:
        """Every finding is a training loop (backward and a step): some loop may train, with
        what the project code it calls does (``loop_training``, TPF205's screen)."""
        return loops_may_train(engine_for(project), path, tree)

    preview = True

    VALID = (
        "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()\n",
        _LOOP.replace("    loss = crit", "    with torch.autocast('cuda'):\n        loss = crit"),
        _LOOP.replace("Net().cuda()", "Net().cuda().half()"),
        "from accelerate import Accelerator\n" + _LOOP,
        _LOOP.replace("    opt.step()\n", ""),
    )
    INVALID = (Invalid(_LOOP, line=3),)

    def visit_For(self, node: cst.For) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def _check(self, node: Union[cst.For, cst.While]) -> None:
        loop = self.context.fact(training_facts).loop(node)
        if loop is None or not (loop.is_step_loop and loop.backward and loop.step):
            return
        if chooses_precision(self.context.source):
            return
        self.report(node)
