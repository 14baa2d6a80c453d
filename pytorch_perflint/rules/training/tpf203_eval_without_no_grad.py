"""TPF203 eval-without-no-grad."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, FrozenSet, Optional, Union

import libcst as cst

from ...rule import Invalid, Rule
from ...types import Applicability
from ...project.values import MAX_SCANNED_MODULES
from ...facts.training.eval_callers import definition_evaluated_by_callers, method_evaluated_by_callers
from ...facts.training.eval_helper_screens import could_evaluate_through_helpers
from ...facts.training.eval_questions import EvalQuestion, answer_eval_question, eval_question
from ...facts.training.eval_names import MODEL_PARAM, called_in_text, is_eval_function_name
from ...facts.training.no_grad import SELF_LAYER, evaluation_loops
from ...facts.training.screens import could_evaluate_without_no_grad
from ...facts.training.test_code import in_test_code

if TYPE_CHECKING:
    from ...project import ProjectIndex

_LOOP = "model.eval()\nfor x, y in loader:\n    out = model(x)\n"


_EVAL_MODE = re.compile(r"\.eval\(\s*\)|\.train\(\s*(?:mode\s*=\s*)?False")
# No leading \b: a pattern that starts with a literal is searched for many times faster,
# and a stray "undef x" only adds a name to check.
_DEF_NAME = re.compile(r"def\s+(\w+)")
# A method named for evaluation handed data (``eval_helpers``): ``engine.eval(x, y)``.
_EVAL_METHOD = re.compile(r"\.(?:eval|evaluate|validate|predict|infer)\w*\(\s*[^)\s]")


class EvalWithoutNoGrad(Rule):
    """## What it does
    Flags an evaluation loop that runs a model forward with autograd recording on: a loop
    calling a model that was put in eval mode (`model.eval()`) earlier in the same function,
    (module level and `if __name__ == "__main__":` included), or one in a function named
    like evaluation (`evaluate`, `validate`, `test`, `predict`, `sample`) that never calls
    `.backward()` and calls a model (a name like `model`/`net`, or in a method, a layer its
    class builds in `__init__`: `self.lstm`), or a helper that calls a model parameter which
    every project caller put in eval mode before the call (`model.eval()` then
    `run_batches(model, loader)` in another module), outside `torch.no_grad()`,
    `torch.inference_mode()` and `torch.set_grad_enabled(False)`. Silent for functions
    decorated with `@torch.no_grad()` / `@torch.inference_mode()` (or a decorator that wraps
    them), for functions whose callers in the project all run them inside no-grad (a `with`
    or a no-grad decorator on the caller), and for loops that need gradients (`.backward()`,
    `torch.autograd.grad`, an optimizer step: adversarial evaluation, a linear probe on a
    frozen backbone; reading an optimizer's settings or state after the loop,
    `optimizer.param_groups[0]["lr"]` or `optimizer.state_dict()` for a checkpoint, needs
    none). `Variable(x, volatile=True)` does nothing since torch 0.4. When the model is put
    in eval mode inside an outer loop, the loop reported is the one that begins in eval
    mode, not the outer loop. A loop also
    evaluates when the model sits behind project code the value engine follows: in a function
    named like evaluation, a method of a parameter (`policy.select_action(state)` running
    `self.actor(state)`), or a helper handed a model put in eval mode here
    (`get_boxes(box_model, img)` running `model(img)`), or a method of an object put in eval
    mode here (`trainer.eval()`, then `trainer.encode(x)` running `self.gen.encode(x)`), or
    a method named for evaluation handed data that puts its own model in eval mode
    (`engine.eval(x, y)` running `self.model.eval()` then `self.model(x)`), in a loop that
    does not train, outside no-grad and training nothing (a loop that trains through project
    code, `engine.train(x, y)`, is never an evaluation loop);
    and a method looping over its own layers (`torch.nn` layers or project modules built in
    `__init__`) when every caller put the object in eval mode first (a beam search), or
    called another method of it that puts those layers in eval mode and trains nothing
    (`gan.evaluate()` running `self.G.eval()`, then `gan.generate_walk(i)`), also on an
    object that is no module; a forward through a closure of the function (`predict =
    lambda b: model(b)` after `model.eval()`) counts as one. The first two need projects of at most 400 modules (the
    value engine reads parameters from callers there); the third holds in a project of any size.

    A bare `torch.set_grad_enabled(False)` statement at module level turns autograd off for
    the whole module (the script's top level runs it before it calls anything); inside a
    function it covers that function's loops that end after it and the same-module
    functions it calls after it, not the module's other functions. A later
    `torch.set_grad_enabled(True)` in the same block switches it back on for what follows.

    ## Why is this bad?
    With autograd on, every forward records the graph and keeps every intermediate
    activation alive until the output is freed: evaluation then uses several times the
    memory (so smaller batches) and spends time building a graph nobody differentiates.
    `model.eval()` only switches dropout and batch norm to inference behaviour; it does not
    turn autograd off.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum()
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum()
    ```

    ## Fix safety
    The fix wraps the loop in `with torch.no_grad():`. It is unsafe: code that needs the
    outputs to carry gradients (a backward after the loop through tensors collected in it)
    changes meaning. Loops that `yield` get no fix: the no-grad mode would leak into the
    generator's consumer.
    """

    code = "TPF203"
    name = "eval-without-no-grad"
    message = "Evaluation loop runs the model with autograd on; wrap it in `with torch.no_grad():`"
    fix_applicability = Applicability.UNSAFE
    triggers = ("eval", "valid", "test", "infer", "predict", ".train(", "self.")

    @classmethod
    def could_fire(cls, source: str) -> bool:
        """A loop, and eval mode switched on, a function named like evaluation, or a layer
        kept on ``self`` (a method looping over its own layers, evaluated by its callers)."""
        if "for " not in source and "while " not in source:
            return False
        if _EVAL_MODE.search(source) or SELF_LAYER.search(source) or MODEL_PARAM.search(source):
            return True  # a model parameter: its callers may have put it in eval mode
        if _EVAL_METHOD.search(source):
            return True  # `engine.eval(x, y)`: a method that may put its own model in eval mode
        return any(is_eval_function_name(name, called_in_text(name, source)) for name in _DEF_NAME.findall(source))

    @classmethod
    def could_fire_tree(cls, tree: ast.Module) -> bool:
        """An evaluating function runs a loop outside a no-grad block (its model called
        there, or reached through project code: ``eval_helpers``)."""
        return could_evaluate_without_no_grad(tree) or could_evaluate_through_helpers(tree)

    @classmethod
    def project_question(cls, tree: ast.Module) -> EvalQuestion:
        """The project screen's question, as data (``could_fire_project`` answers it): as
        ``could_fire_tree``, and a helper that evaluates only through a model parameter has
        project callers that put that model in eval mode. The summarising worker works it
        out, and the lint phase answers it without parsing the file again."""
        return eval_question(tree)

    @classmethod
    def could_fire_answering(cls, question: EvalQuestion, path: str, project: "ProjectIndex") -> Optional[bool]:
        """The question's answer. A model behind an agent's method or a helper: the engine
        reads the parameters it needs from callers in small projects only (`eval_helpers`);
        a method looping over its own layers asks its callers in a project of any size
        (`eval_callers`)."""

        def evaluated_by_callers(name: str, models: FrozenSet[str]) -> bool:
            definition = project.resolve(path, name)
            if definition is None or definition.kind != "function":
                return False  # the rule's `callers_evaluate` answers no as well
            return definition_evaluated_by_callers(project, definition, sorted(models))

        def method_evaluated(name: str) -> bool:
            definition = project.resolve(path, name)
            return definition is not None and definition.kind == "method" and method_evaluated_by_callers(project, definition)

        small = len(project.files) <= MAX_SCANNED_MODULES
        return answer_eval_question(question, small, evaluated_by_callers, method_evaluated)

    VALID = (
        "import torch\nmodel.eval()\nwith torch.no_grad():\n    for x in loader:\n        out = model(x)\n",
        "import torch\n@torch.no_grad()\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n"
        "        out = model(x)\n",
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        out = model(x)\n"
        "with torch.no_grad():\n    evaluate(model, loader)\n",
        "model.eval()\nfor x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n",
        "model.train()\nfor x in loader:\n    out = model(x)\n",
        "import torch\nmodel.eval()\nfor x in loader:\n    with torch.inference_mode():\n        out = model(x)\n",
        "import torch\nmodel.eval()\nfor x in loader:\n    with torch.set_grad_enabled(phase == 'train'):\n"
        "        out = model(x)\n",
        "def test_forward():\n    for x in inputs:\n        model(x)\n",
        # A bare set_grad_enabled(False): at module level it covers the module; in a function,
        # that function's later loops and the functions it calls after it.
        "import torch\ntorch.set_grad_enabled(False)\ndef evaluate(model, loader):\n    model.eval()\n"
        "    for x in loader:\n        out = model(x)\n",
        "import torch\ndef evaluate(model, loader):\n    torch.set_grad_enabled(False)\n    model.eval()\n"
        "    for x in loader:\n        out = model(x)\n",
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        out = model(x)\n"
        "def main():\n    torch.set_grad_enabled(False)\n    evaluate(model, loader)\n",
        # Switched back on only inside an `if`: it may still be off.
        "import torch\ndef evaluate(model, loader):\n    torch.set_grad_enabled(False)\n    if train:\n"
        "        torch.set_grad_enabled(True)\n    model.eval()\n    for x in loader:\n        out = model(x)\n",
        # Off around the call at module level, back on after it.
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        out = model(x)\n"
        "torch.set_grad_enabled(False)\nevaluate(model, loader)\ntorch.set_grad_enabled(True)\n",
    )
    INVALID = (
        Invalid(
            "import torch\n" + _LOOP,
            line=3,
            expected_fix="import torch\nmodel.eval()\nwith torch.no_grad():\n    for x, y in loader:\n"
            "        out = model(x)\n",
        ),
        Invalid(
            "import torch as th\ndef validate(net, loader):\n    # score\n    for x, y in loader:\n        acc = net(x)\n",
            line=4,
            expected_fix="import torch as th\ndef validate(net, loader):\n    # score\n    with th.no_grad():\n"
            "        for x, y in loader:\n            acc = net(x)\n",
        ),
        Invalid(_LOOP, line=2, expected_fix="import torch\n\nmodel.eval()\nwith torch.no_grad():\n    for x, y in loader:\n        out = model(x)\n"),
        Invalid(
            "import torch\nfor epoch in range(3):\n    model.train()\n    for x in train:\n        model(x).sum().backward()\n"
            "    model.eval()\n    for x in val:\n        model(x)\n",
            line=7,
        ),
        # One function's set_grad_enabled(False) does not cover another function.
        Invalid(
            "import torch\ndef export(model):\n    torch.set_grad_enabled(False)\n    return model\n"
            "def evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        out = model(x)\n",
            line=7,
        ),
        # Nor loops of its own function that end before it.
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    model.eval()\n    for x in loader:\n        out = model(x)\n"
            "    torch.set_grad_enabled(False)\n",
            line=4,
        ),
        # Nor loops after a `set_grad_enabled(True)` that switches it back on.
        Invalid(
            "import torch\ndef evaluate(model, loader):\n    torch.set_grad_enabled(False)\n    stats = collect()\n"
            "    torch.set_grad_enabled(True)\n    model.eval()\n    for x in loader:\n        out = model(x)\n",
            line=7,
        ),
        Invalid(
            "import torch\ntorch.set_grad_enabled(False)\nstats = collect()\ntorch.set_grad_enabled(True)\n"
            "model.eval()\nfor x in loader:\n    out = model(x)\n",
            line=6,
        ),
    )

    def visit_For(self, node: cst.For) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def _check(self, node: Union[cst.For, cst.While]) -> None:
        for loop in self.context.fact(evaluation_loops):
            if loop.node is node and not in_test_code(self.context.ancestors, self.context.path):
                self.report(node, fix=None if loop.has_yield else self._wrap(node))
                return

    def _wrap(self, node: Union[cst.For, cst.While]):
        ref = self.context.torch_ref()
        if ref is None:
            return None
        name, imports = ref
        wrapped = cst.With(
            items=[cst.WithItem(cst.parse_expression(f"{name}.no_grad()"))],
            body=cst.IndentedBlock(body=[node.with_changes(leading_lines=())]),
            leading_lines=node.leading_lines,
        )
        return self.fix([(node, wrapped)], "Wrap the loop in `with torch.no_grad():`", imports=imports)
