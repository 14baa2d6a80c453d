"""The project screen of the rules whose findings need a training loop (TPF205, and TPF403
unless the model is handed to a trainer): before LibCST, could some loop of the module
train, by calling backward or an optimizer's step itself, through a function of the module
or through project code of another module (``loop_training.loops_may_train``)? Each case
also runs the rules, so a screen that dropped a finding would fail here; and every file
that ``training_facts`` finds a training loop in must pass (the look-alikes must not)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytorch_perflint import runner, screening
from pytorch_perflint.config import load_settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.project.values import engine_for
from pytorch_perflint.registry import rule_by_code
from pytorch_perflint.facts.training.loop_training import loops_may_train

from project_tree import write_project

STEPS = """
    import torch

    def fit_batch(net, solver, batch):
        loss = net(batch).sum()
        loss.backward()
        solver.step()
        return loss

    def tidy(batch):
        return batch.float()

    class Trainer:
        def __init__(self, net, solver):
            self.net = net
            self.solver = solver

        def train_step(self, batch):
            return fit_batch(self.net, self.solver, batch)
"""
# The model is trained only through a method of a project object of another module.
THROUGH_A_HELPER = """
    import torch
    import torchvision
    from steps import Trainer

    net = torchvision.models.resnet18().cuda()
    solver = torch.optim.SGD(net.parameters(), lr=0.1)
    trainer = Trainer(net, solver)
    for batch in loader:
        trainer.train_step(batch.cuda())
"""
# ... through a function of this module that calls it.
THROUGH_A_LOCAL_FUNCTION = """
    import torch
    import torchvision
    from steps import fit_batch

    def one_step(net, solver, batch):
        return fit_batch(net, solver, batch)

    net = torchvision.models.resnet18().cuda()
    solver = torch.optim.SGD(net.parameters(), lr=0.1)
    running = 0
    for batch in loader:
        loss = one_step(net, solver, batch.cuda())
        running += loss
"""
# An optimizer under a name that does not say so.
ODD_NAME = """
    import torch
    import torchvision

    net = torchvision.models.resnet18().cuda()
    mover = torch.optim.SGD(net.parameters(), lr=0.1)
    running = 0
    for batch in loader:
        loss = net(batch.cuda()).sum()
        mover.step()
        running += loss
"""
# Look-alikes: backward outside any loop, a loop that calls a function of this module and
# a project function that train nothing, and an interpreter's own ``self.step()``.
NO_TRAINING = """
    import torch
    import torchvision
    from steps import tidy

    class Interpreter:
        def step(self):
            return None

        def run(self):
            while True:
                self.step()

    def prepare(batch):
        return tidy(batch)

    def check_gradients(x):
        x.sum().backward()

    net = torchvision.models.resnet18().cuda()
    net.parameters()
    running = 0
    for batch in loader:
        out = net(prepare(batch).cuda()).sum()
        running += out
"""


def _screen_and_codes(tmp_path: Path, source: str):
    root = write_project(tmp_path, {"steps.py": STEPS, "train.py": source})
    settings = load_settings([root])
    path = root / "train.py"
    index = index_for(path, settings)
    assert index is not None
    screened = loops_may_train(engine_for(index), str(path.resolve()), ast.parse(path.read_text(encoding="utf-8")))
    result = runner.process_file(path, settings, runner.Mode.CHECK, False, None, None, project=index)
    return screened, sorted({d.code for d in result.diagnostics}), index, settings, path


@pytest.mark.parametrize(
    ("source", "screened", "codes"),
    [
        (THROUGH_A_HELPER, True, ["TPF403"]),
        (THROUGH_A_LOCAL_FUNCTION, True, ["TPF403"]),
        (ODD_NAME, True, ["TPF403"]),
        (NO_TRAINING, False, []),
    ],
    ids=["a-project-method-trains", "a-local-function-calls-one", "an-optimizer-named-otherwise", "look-alikes"],
)
def test_the_screen_passes_what_the_rules_report(tmp_path, source, screened, codes):
    got, found, _, _, _ = _screen_and_codes(tmp_path, source)
    assert got is screened
    assert [c for c in found if c in ("TPF205", "TPF403")] == codes


@pytest.mark.parametrize("source", [THROUGH_A_HELPER, NO_TRAINING], ids=["trains", "look-alikes"])
def test_the_lint_phase_asks_it_with_the_tree_where_the_question_says_a_loop_may_train(tmp_path, monkeypatch, source):
    """A run that summarised the project gives TPF403 its question of the tree: a file
    whose loops may train is parsed again for this screen (the question cannot decide),
    and the findings are those of the rule without any project screen."""
    _, expected, index, settings, path = _screen_and_codes(tmp_path, source)
    text = path.read_text(encoding="utf-8")
    rule = rule_by_code("TPF403")
    question = rule.project_question(ast.parse(text))
    assert question == (True, ())
    assert rule.could_fire_answering(question, str(path.resolve()), index) is None
    parsed: list = []
    real = screening.ast_tree
    monkeypatch.setattr(screening, "ast_tree", lambda source: parsed.append(source) or real(source))
    result = lint_source(text, path, settings, project=index, passed={"TPF403": question, "TPF205": None}, keep_module=False)
    assert parsed  # the tree, for the screen
    assert sorted({d.code for d in result.diagnostics}) == [c for c in expected if c in ("TPF205", "TPF403")]


def _function(tree: ast.Module, name: str):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize(
    ("source", "function", "trains"),
    [(THROUGH_A_LOCAL_FUNCTION, "one_step", True), (NO_TRAINING, "prepare", False), (NO_TRAINING, "check_gradients", True)],
    ids=["a-project-step-met-by-the-loops", "a-helper-that-trains-nothing", "backward-in-its-own-body"],
)
def test_a_step_function_walk_reuses_the_calls_the_loops_walk_answered(tmp_path, monkeypatch, source, function, trains):
    """TPF202's step-function walk (``frames_may_train``) meets calls that the loops' walk
    already dispatched: their answers are kept per tree, not asked of the engine again,
    and the walk answers as it does on a tree nothing was asked of."""
    from pytorch_perflint.facts.training import loop_training
    from pytorch_perflint.project.tree_wheres import TreeWheres

    _, _, index, _, path = _screen_and_codes(tmp_path, source)
    text = path.read_text(encoding="utf-8")
    engine, own = engine_for(index), str(path.resolve())
    fresh = ast.parse(text)
    expected = loop_training.frames_may_train(engine, own, fresh, [(_function(fresh, function), [fresh])])
    assert expected is trains
    tree = ast.parse(text)
    loops_may_train(engine, own, tree)
    answered = dict(loop_training._call_answers(tree)[(own, id(engine))])
    assert answered  # the loops' walk dispatched calls and kept what they do
    asked: list = []
    real = TreeWheres.callees
    monkeypatch.setattr(TreeWheres, "callees", lambda self, call, *a, **k: asked.append(call) or real(self, call, *a, **k))
    assert loop_training.frames_may_train(engine, own, tree, [(_function(tree, function), [tree])]) is expected
    assert not any(id(call) in answered for call in asked)  # a call answered once is not dispatched again
