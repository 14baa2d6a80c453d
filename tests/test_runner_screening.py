"""A checking run screens each file from the tree it summarises the project from.

With many files, the workers that summarise the project also run the rules' text and ast
screens on each linted file; a file no rule can fire on gets its whole result there (it is
parsed once), and only the others are linted again with the finished index. The findings
must be exactly those of linting every file with the index, cross-file ones included.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import List

import pytest

from pytorch_perflint import runner, screening, workers
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.workers import call_deep

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "conv_model_elsewhere"
# Modules that no rule can fire on, though their text names what the rules look for.
QUIET = '"""Helpers. Not a place for nn.DataParallel, .item() or zero_grad()."""\n\n\ndef helper_{n}(x):\n    return x + {n}\n'


def _project(root: Path) -> List[Path]:
    shutil.copytree(FIXTURE, root)
    for n in range(runner.PARALLEL_MIN_FILES):
        (root / f"helpers_{n}.py").write_text(QUIET.format(n=n))
    return sorted(root.glob("*.py"))


def _settings(root: Path) -> Settings:
    return dataclasses.replace(Settings(), project_root=str(root), config_path=str(root / "pyproject.toml"))


def _key(results) -> list:
    return sorted((Path(r.path).name, d.code, d.location.row, d.location.column) for r in results for d in r.diagnostics)


def _in_process(monkeypatch) -> List[Path]:
    """Run the workers' tasks in this process, and note which files the lint phase got."""
    linted: List[Path] = []
    lint_task = runner._lint_task

    def spy(path, **options):
        linted.append(Path(path))
        return lint_task(path, **options)

    def tasks(work, items, *, jobs, time_limit, memory_limit=None):
        for item in items:
            yield call_deep(work, item)

    monkeypatch.setattr(runner, "_lint_task", spy)
    monkeypatch.setattr(workers, "run_tasks", tasks)  # the lint phase's (runner imports it when it runs)
    return linted


@pytest.mark.parametrize("jobs", [1, 2])
def test_screening_while_summarising_finds_what_linting_every_file_with_the_index_finds(tmp_path, jobs):
    root = tmp_path / "project"
    files = _project(root)
    settings = _settings(root)
    results, _ = runner.run(files, settings, jobs=jobs)
    index = ProjectIndex(str(root), settings)
    expected = [lint_source(path.read_text(), path, settings, with_edits=False, keep_module=False, project=index) for path in files]
    assert _key(results) == _key(expected)
    # The cross-file findings (the conv model lives in model.py and layers.py) are there.
    assert ("train.py", "TPF403") in {(name, code) for name, code, _, _ in _key(results)}
    assert [r.path for r in results] == files


def test_files_no_rule_can_fire_on_are_not_linted_again(tmp_path, monkeypatch):
    root = tmp_path / "project"
    files = _project(root)
    linted = _in_process(monkeypatch)
    results, _ = runner.run(files, _settings(root), jobs=2)
    names = {p.name for p in linted}
    assert "train.py" in names  # rules pass its screens: linted with the finished index
    assert not any(name.startswith("helpers_") for name in names)
    assert len(names) < len(files)
    assert {Path(r.path).name for r in results} == {p.name for p in files}


def test_a_screened_result_is_cached_and_a_warm_run_lints_nothing(tmp_path, monkeypatch):
    root = tmp_path / "project"
    files = _project(root)
    linted = _in_process(monkeypatch)
    cold, _ = runner.run(files, _settings(root), jobs=2, use_cache=True, roots=[str(root)])
    linted.clear()
    warm, _ = runner.run(files, _settings(root), jobs=2, use_cache=True, roots=[str(root)])
    assert linted == []
    assert _key(warm) == _key(cold)


def test_a_fix_run_does_not_take_a_screened_result(tmp_path, monkeypatch):
    """Fixing is never decided by the screens alone (a `noqa` removal, say): every file
    goes through the fixer."""
    root = tmp_path / "project"
    files = _project(root)
    linted = _in_process(monkeypatch)
    runner.run(files, _settings(root), mode=runner.Mode.DIFF, jobs=2)
    assert sorted(linted) == files


def test_the_lint_phase_runs_only_the_rules_whose_screens_passed_and_does_not_screen_again(tmp_path, monkeypatch):
    """A deferred file is linted with the rules that passed its screens in the summarising
    phase (``Passed``); the lint phase does not run the text or ``ast`` screens again."""
    root = tmp_path / "project"
    files = _project(root)
    linted = _in_process(monkeypatch)
    screened_again: List[str] = []
    screen = screening.screen_with_ast

    def spy(active, source, parsed=None):
        screened_again.append(source)
        return screen(active, source, parsed)

    # The summarising phase runs in worker processes (its own copy of the engine); the lint
    # phase runs here (``_in_process``): only its screens reach the spy.
    monkeypatch.setattr(screening, "screen_with_ast", spy)
    results, _ = runner.run(files, _settings(root), jobs=2)
    assert "train.py" in {p.name for p in linted}
    assert screened_again == []
    index = ProjectIndex(str(root), _settings(root))
    expected = [lint_source(p.read_text(), p, _settings(root), with_edits=False, keep_module=False, project=index) for p in files]
    assert _key(results) == _key(expected)


def test_passed_codes_hold_only_for_the_text_that_was_screened():
    from pytorch_perflint.run_summaries import Passed

    text = "import torch\nmodel = torch.nn.DataParallel(net)\n"
    passed = Passed((len(text), hash(text)), frozenset({"TPF501", "TPF403"}), (("TPF403", (True, ())),))
    assert passed.for_text(text) == {"TPF501": None, "TPF403": (True, ())}
    assert passed.for_text(text + "x = 1\n") is None  # changed between the phases: screened again


def test_a_project_screen_that_fails_keeps_its_rule_and_the_files_other_findings(tmp_path, monkeypatch):
    """A crash in ``could_fire_project`` (or ``could_fire_answering``) must not cost the file its findings: the rule is
    kept and linted as without the screen (TPF403 reaches it on ``train.py``)."""
    from pytorch_perflint.registry import rule_by_code

    root = tmp_path / "project"
    files = _project(root)
    settings = _settings(root)
    expected, _ = runner.run(files, settings, jobs=1)
    assert ("train.py", "TPF403") in {(name, code) for name, code, _, _ in _key(expected)}
    rule = rule_by_code("TPF403")
    asked: List[str] = []

    def broken(tree_or_question, path, project):
        asked.append(path)
        raise RuntimeError("the index is unreadable")

    _in_process(monkeypatch)  # the lint phase here, where ``asked`` is seen
    # Both forms of the project screen: from the tree, and from its question (a run that
    # summarised the project answers TPF403's without the tree).
    own = {name: rule.__dict__.get(name) for name in ("could_fire_project", "could_fire_answering")}
    for name in own:
        setattr(rule, name, broken)
    try:
        results, _ = runner.run(files, settings, jobs=1)
    finally:
        for name, descriptor in own.items():  # the rule's own classmethod back, or none
            if descriptor is None:
                delattr(rule, name)
            else:
                setattr(rule, name, descriptor)
    assert asked  # the screen was reached
    assert _key(results) == _key(expected)
    assert not any(r.errors for r in results)


def test_a_deferred_file_whose_project_question_says_no_is_not_parsed_again(tmp_path, monkeypatch):
    """TPF403's project question is worked out from the tree in the summarising worker; the
    lint phase answers it without parsing the file again. A file that only hands a name to
    an object of a class that trains nothing is dropped unparsed; one that trains here is
    parsed and linted."""
    import ast

    from pytorch_perflint.engine import lint_source as lint
    from pytorch_perflint.project.linted import index_for
    from pytorch_perflint.registry import rule_by_code

    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    (root / "helpers.py").write_text("class Report:\n    def __init__(self, model):\n        self.model = model\n    def show(self):\n        print(self.model)\n")
    (root / "hand.py").write_text("import torch\nfrom helpers import Report\nmodel = torch.nn.Conv2d(3, 8, 3).cuda()\nReport(model).show()\n")
    rule = rule_by_code("TPF403")
    settings = _settings(root)
    parsed: List[str] = []
    real = screening.ast_tree
    monkeypatch.setattr(screening, "ast_tree", lambda source: parsed.append(source) or real(source))
    path = root / "hand.py"
    text = path.read_text()
    question = rule.project_question(ast.parse(text))
    assert question == (False, ("Report",))
    index = index_for(path, settings)
    result = lint(text, path, settings, project=index, passed={"TPF403": question}, keep_module=False)
    assert result.diagnostics == [] and parsed == []
    lint(text, path, settings, project=index, passed={"TPF403": None}, keep_module=False)
    assert len(parsed) == 1  # without the question, the tree is needed for the project screen
