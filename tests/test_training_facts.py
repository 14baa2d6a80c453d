"""The training-loop facts that TPF2xx/TPF6xx (and TPF403) build on."""

from __future__ import annotations

from pathlib import Path, PurePath

import libcst as cst
import pytest

from pytorch_perflint.context import FileContext
from pytorch_perflint.facts.training.classifiers import is_optimizer_name
from pytorch_perflint.facts.training.forward_helpers import forward_helpers
from pytorch_perflint.facts.training.gradients import writes_into_grads
from pytorch_perflint.facts.training.guards import loop_invariant
from pytorch_perflint.facts.training.loops import loop_bound_names, training_facts
from pytorch_perflint.facts.training.no_grad import evaluation_loops
from pytorch_perflint.facts.training.test_code import is_test_path
from pytorch_perflint.testing import settings_with


def context(source: str) -> FileContext:
    return FileContext(Path("t.py"), source, cst.parse_module(source), settings_with({}))


def loops(source: str):
    ctx = context(source)
    facts = ctx.fact(training_facts)
    found = []
    for node in _walk_loops(ctx.module):
        found.append(facts.loop(node))
    return found


def _walk_loops(module):
    out = []

    class V(cst.CSTVisitor):
        def visit_For(self, node):
            out.append(node)

        def visit_While(self, node):
            out.append(node)

    module.visit(V())
    return out


def test_optimizer_names():
    for name in ("optimizer", "opt", "optG", "opt_d", "g_optim", "optimizerD", "genOpt", "OPTIMIZER"):
        assert is_optimizer_name(name), name
    for name in ("scheduler", "lr_scheduler", "options", "optional", "env", "adopt", "optim_scheduler"):
        assert not is_optimizer_name(name), name


def test_epoch_and_step_loops():
    epoch, step = loops(
        "for epoch in range(3):\n    for x in loader:\n        loss = f(x)\n        loss.backward()\n"
        "        optimizer.step()\n"
    )
    assert epoch.is_training and not epoch.is_step_loop
    assert step.is_training and step.is_step_loop and step.backward and step.step


def test_helpers_are_followed():
    source = (
        "class T:\n"
        "    def step(self, x):\n        self.loss(x).backward()\n        self.opt.step()\n"
        "    def epoch(self, loader):\n        for x in loader:\n            self.step(x)\n"
        "def fit(t, loader):\n    for e in range(3):\n        t.epoch(loader)\n"
        "def train_one_epoch(loader):\n    for x in loader:\n        f(x).backward()\n"
        "for e in range(3):\n    train_one_epoch(loader)\n"
    )
    inner, fit_loop, helper_loop, outer = loops(source)
    assert inner.is_step_loop
    assert not fit_loop.is_training  # t.epoch is not self.epoch: not followed
    assert helper_loop.is_step_loop
    assert outer.is_training and not outer.is_step_loop


def test_scheduler_and_env_steps_do_not_train():
    (a,) = loops("for e in range(3):\n    scheduler.step()\n")
    (b,) = loops("for t in range(3):\n    obs = env.step(action)\n")
    assert not a.is_training and not b.is_training


def test_sync_helpers():
    ctx = context(
        "def acc(a, b):\n    return (a == b).float().mean().item()\n"
        "def log(x):\n    if x > 0:\n        print(x.item())\n"
        "for x in loader:\n    f(x).backward()\n"
    )
    assert ctx.fact(training_facts).sync_helpers == frozenset({(None, "acc")})


def test_loop_invariant_conditions():
    names = frozenset({"step", "loss", "i"})
    assert loop_invariant(cst.parse_expression("not args.distributed"), names)
    assert loop_invariant(cst.parse_expression("writer is not None and rank == 0"), names)
    assert not loop_invariant(cst.parse_expression("step % 10 == 0"), names)
    assert not loop_invariant(cst.parse_expression("i == 0"), names)
    assert not loop_invariant(cst.parse_expression("torch.isnan(x)"), names)
    assert not loop_invariant(cst.parse_expression("epoch > warmup"), names)


def test_loop_bound_names():
    loop = cst.parse_statement("for i, (x, y) in enumerate(d):\n    z = 1\n    k += 1\n    with a as b:\n        pass\n")
    assert loop_bound_names(loop) == frozenset({"i", "x", "y", "z", "k", "b"})


def test_evaluation_loops():
    ctx = context(
        "import torch\n"
        "def validate(model, loader):\n    model.eval()\n    for x in loader:\n        model(x)\n"
        "@torch.no_grad()\ndef test(model, loader):\n    for x in loader:\n        model(x)\n"
    )
    found = ctx.fact(evaluation_loops)
    assert len(found) == 1 and found[0].function.name.value == "validate"


def test_writes_into_grads():
    assert context("p.grad.add_(g)\n").fact(writes_into_grads)
    assert context("p.grad += g\n").fact(writes_into_grads)
    assert context("dist.all_reduce(p.grad.data)\n").fact(writes_into_grads)
    assert context("torch._foreach_add_([p.grad for p in ps], gs)\n").fact(writes_into_grads)
    assert not context("p.grad.mul_(0.5)\np.grad = None\n").fact(writes_into_grads)


def test_gradient_accumulation_keeps_the_outer_step_loop():
    outer, micro = loops(
        "while True:\n    for micro in range(4):\n        loss = f(x)\n        scaler.scale(loss).backward()\n"
        "    scaler.step(optimizer)\n    scaler.update()\n"
    )
    assert outer.is_step_loop and micro.is_step_loop
    epoch, batch = loops("for e in range(3):\n    for x in loader:\n        f(x).backward()\n        engine.step()\n")
    assert not epoch.is_step_loop and batch.is_step_loop


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_model.py", True),
        ("pkg/tests/helpers.py", True),
        ("model_test.py", True),
        ("conftest.py", True),
        ("torch/testing/_internal/common_utils.py", False),  # test helpers, not collected
        ("models/test.py", False),
        ("train.py", False),
        ("contest/solver.py", False),
    ],
)
def test_test_files_are_what_pytest_and_unittest_collect(path, expected):
    assert is_test_path(PurePath(path)) is expected


def test_forward_helpers_are_loop_free_and_know_when_grad_is_off():
    source = (
        "import torch\n"
        "class M:\n"
        "    def test(self):\n        with torch.no_grad():\n            self.out = self.net_g(self.lq)\n"
        "    def outer(self):\n        self.test()\n"
        "    def plain(self, x):\n        return self.net(x)\n"
        "    def stats(self):\n        with torch.no_grad():\n            return self.meter.mean()\n"
        "@torch.no_grad()\ndef predict(model, x):\n    return model(x)\n"
        "def evaluate(model, loader):\n    for x in loader:\n        model(x)\n"
        "def wrap(model, x):\n    with torch.no_grad():\n        return plain_call(model, x)\n"
        "def plain_call(model, x):\n    return model(x)\n"
    )
    helpers = context(source).fact(forward_helpers)
    assert helpers.forward == {("M", "test"), ("M", "outer"), ("M", "plain"), (None, "predict"), (None, "wrap"), (None, "plain_call")}
    assert helpers.no_grad_forward == {("M", "test"), ("M", "outer"), (None, "predict"), (None, "wrap")}
