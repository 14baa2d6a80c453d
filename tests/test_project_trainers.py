"""Whether any function of a small project runs a training step (``project/trainers.py``):
when none does, no call of project code can train, and the loop screen of TPF202, TPF205
and TPF403 (``loops_may_train``) stops before dispatching a loop's calls (which reads every
caller of a parameter's function). The answer must never say "no" where a function trains,
even one the summary's line scan misses (``opt. step()``), and it must depend on as little
as it read: a "yes" on the module that holds the step, a "no" on the texts that spell the
words."""

from __future__ import annotations

import ast
from pathlib import Path

from pytorch_perflint.facts.training.loop_training import loops_may_train
from pytorch_perflint.project.index import ALL_FILES, TEXT_OF, TEXTS_NAMING, ProjectIndex
from pytorch_perflint.project.trainers import project_trains
from pytorch_perflint.project.tree_wheres import TreeWheres
from pytorch_perflint.project.values import engine_for

from project_tree import index_of, write_project

# A scheduler library: its docs spell ``optimizer.step()``, it defines ``step`` methods, and
# its loops call project code, but nothing in it runs backward or an optimizer's step.
SCHEDULES = """
    def decay(rate, when):
        return rate * 0.5 ** when


    class Schedule:
        '''Call ``optimizer.step()`` first, then ``schedule.step()``; see loss.backward().'''

        def __init__(self, opt, rates):
            self.opt = opt
            self.rates = rates

        def step(self):
            for group, rate in zip(self.opt.param_groups, self.rates):
                group["lr"] = decay(rate, group.setdefault("when", 0))

"""
# A script whose only step runs at module level (no function of the project steps), with a
# loop that calls a helper of its own: the loop screen dispatches ``group.setdefault``.
SWEEP = """
    import torch

    optimizer = torch.optim.SGD([], lr=0.1)
    optimizer.step()


    def halve(rate):
        return rate / 2


    def sweep(groups):
        for group in groups:
            group["lr"] = halve(group.setdefault("lr", 0.1))
"""
# A helper whose optimizer step is written apart from its dot: the summary does not see it,
# the body read again does (a loop of steps: whoever calls it in a loop trains).
SPACED = """
    def fit(net, opt, batches):
        for batch in batches:
            net(batch).sum()
            opt. step()
"""
CALLER = """
    from spaced import fit

    def run(net, opt, chunks):
        for chunk in chunks:
            fit(net, opt, chunk)
"""
TRAINER = """
    def fit_batch(net, solver, batch):
        net(batch).sum().backward()
        solver.step()
"""


def _tree(root: Path, name: str):
    path = root / name
    return str(path.resolve()), ast.parse(path.read_text(encoding="utf-8"))


def test_a_library_without_a_training_step_is_settled_before_any_dispatch(tmp_path, monkeypatch):
    index = index_of(tmp_path, {"schedules.py": SCHEDULES})

    def no_dispatch(*_args, **_kwargs):
        raise AssertionError("a loop's calls were dispatched")

    monkeypatch.setattr(TreeWheres, "callees", no_dispatch)
    path, tree = _tree(tmp_path, "schedules.py")
    assert project_trains(engine_for(index)) is False
    assert loops_may_train(engine_for(index), path, tree) is False


def test_a_step_written_apart_from_its_dot_still_trains(tmp_path):
    index = index_of(tmp_path, {"spaced.py": SPACED, "caller.py": CALLER})
    path, tree = _tree(tmp_path, "caller.py")
    assert project_trains(engine_for(index)) is True
    assert loops_may_train(engine_for(index), path, tree) is True


def test_a_sentence_that_ends_before_step_is_no_step(tmp_path):
    """``.`` then ``step`` apart in a comment: the module is parsed, and holds no step."""
    prose = "# Decay the rate.\n# step counts the epochs\ndef tick(step):\n    return step + 1\n"
    index = index_of(tmp_path, {"schedules.py": SCHEDULES, "prose.py": prose})
    assert project_trains(engine_for(index)) is False


def test_what_the_answer_depends_on(tmp_path):
    index = index_of(tmp_path, {"schedules.py": SCHEDULES, "plain.py": "def f(x):\n    return x\n"})
    with index.recording() as used:
        assert project_trains(engine_for(index)) is False
    schedules = str((tmp_path / "schedules.py").resolve())
    plain = str((tmp_path / "plain.py").resolve())
    assert {TEXTS_NAMING + "backward", TEXTS_NAMING + "step", TEXT_OF + schedules} <= used
    assert plain not in used and TEXT_OF + plain not in used  # spells neither word: no dependency

    write_project(tmp_path, {"steps.py": TRAINER})
    index = ProjectIndex(tmp_path)
    with index.recording() as used:
        assert project_trains(engine_for(index)) is True
    assert used == {ALL_FILES, str((tmp_path / "steps.py").resolve())}  # the module that settles it


def test_a_large_project_is_not_scanned(tmp_path, monkeypatch):
    monkeypatch.setattr("pytorch_perflint.project.trainers.MAX_SCANNED_MODULES", 0)
    index = index_of(tmp_path, {"schedules.py": SCHEDULES})
    with index.recording() as used:
        assert project_trains(engine_for(index)) is True
    assert not used


def test_a_warm_run_of_a_project_with_a_stub_lints_nothing(tmp_path):
    """The screen reads a stub's text, never its summary: a summary read in the lint
    worker reaches the run's parent as a module the graph does not hold, which dropped
    the graph and the project's state, and every result that read the project missed the
    cache on the next run."""
    from pytorch_perflint import runner
    from pytorch_perflint.config import load_settings

    stub = "class Schedule:\n    def step(self) -> None: ...\n"
    more = {f"part{n}.py": f"PART = {n}\n" for n in range(6)}  # a run of many files keeps the project's state
    write_project(tmp_path, {"schedules.py": SCHEDULES, "schedules.pyi": stub, "sweep.py": SWEEP, **more})
    settings = load_settings([tmp_path])
    files = sorted(tmp_path.rglob("*.py"))
    _, cold = runner.run(files, settings, jobs=1, use_cache=True)
    _, warm = runner.run(files, settings, jobs=1, use_cache=True)
    assert cold.linted == 8 and warm.linted == 0


def test_a_stub_that_may_step_keeps_the_loops(tmp_path):
    stub = "def fit(opts, batches):\n    for b in batches:\n        opts[0].step()\n"
    index = index_of(tmp_path, {"schedules.py": SCHEDULES, "fit.pyi": stub})
    assert project_trains(engine_for(index)) is True
