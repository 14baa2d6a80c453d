"""TPF206's project screen: a file that does not name ``empty_cache`` goes to LibCST only
when a loop of it may train or evaluate, a module it imports calls ``empty_cache`` (one
that only defines or mentions it, as ``torch/cuda/memory.py`` does, is not enough), and a
call in one of its loops runs project code that empties the cache on every call (a
helper that does so only sometimes, or one called outside the loop, is not enough).
Each case also runs the rule, so a screen that drops a finding would fail here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.rules.training.tpf206_empty_cache_in_loop import EmptyCacheInLoop

from project_tree import write_project

HELPERS = """
    import torch

    def free_memory():
        torch.cuda.empty_cache()
"""
# Names empty_cache in a comment and defines a function of that name: calls it nowhere.
DEFINES_ONLY = """
    import torch

    def empty_cache():
        # empty_cache() frees the blocks no tensor uses
        return None

    def free_memory():
        return empty_cache
"""
TRAINS = """
    import torch
    from helpers import free_memory

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            free_memory()
"""
PLAIN_LOOP = """
    import torch
    from helpers import free_memory

    def tidy(paths):
        torch.zeros(1).cuda()
        for path in paths:
            print(path)
            free_memory()
"""

SOMETIMES = """
    import torch

    def maybe_free(step):
        if step % 100 == 0:
            torch.cuda.empty_cache()

    class Cleaner:
        def free(self):
            torch.cuda.empty_cache()
"""
TRAINS_SOMETIMES = """
    import torch
    from helpers import maybe_free, Cleaner

    def train(model, loader, opt):
        model.cuda()
        Cleaner().free()
        for i, (x, y) in enumerate(loader):
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            maybe_free(i)
"""
TRAINS_WITH_AN_OBJECT = """
    import torch
    from helpers import Cleaner

    def train(model, loader, opt):
        model.cuda()
        cleaner = Cleaner()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            cleaner.free()
"""


def _screen_and_findings(tmp_path: Path, files: dict, target: str):
    root = write_project(tmp_path, files)
    settings = load_settings([root])
    path = root / target
    index = index_for(path, settings)
    assert index is not None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    screened = EmptyCacheInLoop.could_fire_project(tree, str(path.resolve()), index)
    result = runner.process_file(path, settings, runner.Mode.CHECK, False, None, None, project=index)
    codes = [d.code for d in result.diagnostics if d.code == "TPF206"]
    return screened, codes


@pytest.mark.parametrize(
    ("files", "screened", "found"),
    [
        ({"helpers.py": HELPERS, "train.py": TRAINS}, True, 1),
        ({"helpers.py": HELPERS, "train.py": PLAIN_LOOP}, False, 0),
        ({"helpers.py": DEFINES_ONLY, "train.py": TRAINS}, False, 0),
        ({"helpers.py": SOMETIMES, "train.py": TRAINS_SOMETIMES}, False, 0),
        ({"helpers.py": SOMETIMES, "train.py": TRAINS_WITH_AN_OBJECT}, True, 1),
    ],
    ids=[
        "training-loop-and-a-helper-that-empties",
        "a-loop-that-neither-trains-nor-evaluates",
        "a-module-that-only-defines-it",
        "helpers-that-empty-only-sometimes-or-outside-the-loop",
        "a-method-of-an-object-that-empties",
    ],
)
def test_the_project_screen_lets_through_what_the_rule_reports(tmp_path, files, screened, found):
    got_screened, codes = _screen_and_findings(tmp_path, files, "train.py")
    assert got_screened is screened
    assert len(codes) == found


NAMES_IT = """
    import torch

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            torch.cuda.empty_cache()
"""


@pytest.mark.parametrize(
    ("files", "found", "reparsed"),
    [
        ({"helpers.py": HELPERS, "train.py": TRAINS}, 1, True),
        # A plain loop may still evaluate through an object's emptying `__call__`: in a
        # project this small (objects are asked) its calls decide, from the tree.
        ({"helpers.py": HELPERS, "train.py": PLAIN_LOOP}, 0, True),
        ({"helpers.py": DEFINES_ONLY, "train.py": TRAINS}, 0, False),
        ({"helpers.py": SOMETIMES, "train.py": TRAINS_SOMETIMES}, 0, True),
        ({"helpers.py": SOMETIMES, "train.py": TRAINS_WITH_AN_OBJECT}, 1, True),
        ({"helpers.py": HELPERS, "train.py": NAMES_IT}, 1, True),
    ],
    ids=[
        "the-loops-calls-decide-and-one-empties",
        "no-loop-that-trains-or-evaluates-small-project-asks-the-calls",
        "no-imported-module-calls-it-decided-unparsed",
        "the-loops-calls-decide-and-none-empties-every-call",
        "the-loops-calls-decide-a-method-empties",
        "the-code-names-it",
    ],
)
def test_the_project_question_answers_as_the_screen_and_keeps_the_findings(tmp_path, monkeypatch, files, found, reparsed):
    """A run that summarised the project gives the lint phase TPF206's question of the tree
    (does the code name ``empty_cache``; may a loop train or evaluate): the lint phase rules
    a file out from it and the imported modules without parsing it again, and parses it
    only when the calls in its loops must decide. The findings are the screen's."""
    from pytorch_perflint import screening
    from pytorch_perflint.engine import lint_source

    root = write_project(tmp_path, files)
    settings = load_settings([root])
    path = root / "train.py"
    index = index_for(path, settings)
    text = path.read_text(encoding="utf-8")
    question = EmptyCacheInLoop.project_question(ast.parse(text))
    parsed: list = []
    real = screening.ast_tree
    monkeypatch.setattr(screening, "ast_tree", lambda source: parsed.append(source) or real(source))
    result = lint_source(text, path, settings, project=index, passed={"TPF206": question}, keep_module=False)
    assert len([d for d in result.diagnostics if d.code == "TPF206"]) == found
    assert bool(parsed) is reparsed
    answer = EmptyCacheInLoop.could_fire_answering(question, str(path.resolve()), index)
    screened = EmptyCacheInLoop.could_fire_project(ast.parse(text), str(path.resolve()), index)
    assert answer in (None, screened)  # decided: the screen's own answer; else the tree's
