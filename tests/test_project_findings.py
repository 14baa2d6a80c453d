"""The rules on the multi-file fixture projects (``fixtures/projects/``): what they report
must be exactly the ``# expect:`` lines, whether the whole project is linted at once or each
file alone (a pre-commit run passes only the changed files; the index still reads the
modules they import).

Projects whose rules have not been taught the cross-file facts they need yet are strict
xfails: the test turns red when a rule learns them and nobody removes the mark.
"""

from __future__ import annotations

from pathlib import Path
import dataclasses
import functools
import shutil
from typing import Dict, FrozenSet, List, Set, Tuple

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.project.root import ROOT_MARKERS
from pytorch_perflint.registry import all_rules
from pytorch_perflint.testing import FIXTURES, Fixture

PROJECTS_DIR = FIXTURES / "projects"
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if p.is_dir())
CODES = [rule.code for rule in all_rules()]

# What the rules meet today: a project (all its rules) or one rule of it ("project/TPFxxx").
# Every other (project, rule) waits for its rule to be taught the cross-file facts (issue
# 13) and is a strict xfail until then.
MET = {
    "cpu_script_beside_gpu",
    "checkpoint_conversion",
    "host_tensors_moved",
    "numpy_from_helpers",
    "trainer_class/TPF104",
    "src_layout_package/TPF101",
    "evaluation_helpers",
    "cache_helpers",
    "trainer_class/TPF202",
    "conv_model_elsewhere",
    "src_layout_package/TPF403",
    "conv_bias_defaults",
    "arch_from_args",
    "distributed_epochs",
    "steps_elsewhere",
    "added_import_paths",
}

Finding = Tuple[str, int, str]  # (file relative to the project, line, code)


def _expected(project: Path) -> Dict[str, Set[Finding]]:
    out: Dict[str, Set[Finding]] = {}
    for path in sorted(project.rglob("*.py")):
        name = path.relative_to(project).as_posix()
        out[name] = {(name, row, code) for code in CODES for row, code in Fixture(code, path).expected()}
    return out


@functools.lru_cache(maxsize=None)
def _found(project: Path, paths: Tuple[Path, ...]) -> FrozenSet[Finding]:
    settings = load_settings([project])
    results, _ = runner.run(list(paths), settings, jobs=2)
    found: Set[Finding] = set()
    for result in results:
        assert not result.errors, result.errors
        for diagnostic in result.diagnostics:
            found.add((Path(diagnostic.path).resolve().relative_to(project.resolve()).as_posix(), diagnostic.location.row, diagnostic.code))
    return frozenset(found)


def _codes(project: Path) -> List[str]:
    return sorted(load_settings([project]).select)


def _met(project: Path, code: str) -> bool:
    return project.name in MET or f"{project.name}/{code}" in MET


def _cases():
    for project in PROJECTS:
        for code in _codes(project):
            for how in ("whole project", "each file alone"):
                marks = () if _met(project, code) else pytest.mark.xfail(strict=True, reason="rule not yet taught: issue 13")
                yield pytest.param(project, code, how, marks=marks, id=f"{project.name}-{code}-{how.replace(' ', '-')}")


@pytest.mark.parametrize(("project", "code", "how"), list(_cases()))
def test_a_project_reports_exactly_its_expect_lines(project: Path, code: str, how: str):
    expected = {name: {f for f in wanted if f[2] == code} for name, wanted in _expected(project).items()}
    if how == "whole project":
        files = tuple(sorted(project.rglob("*.py")))
        assert {f for f in _found(project, files) if f[2] == code} == set().union(*expected.values())
    else:
        for name, wanted in expected.items():
            assert {f for f in _found(project, (project / name,)) if f[2] == code} == wanted, name


def test_met_names_real_projects():
    assert {entry.partition("/")[0] for entry in MET} <= {p.name for p in PROJECTS}
    for entry in MET:
        name, _, code = entry.partition("/")
        assert not code or code in _codes(PROJECTS_DIR / name), entry


def _run_codes(paths: List[Path], config_from: Path, codes: Tuple[str, ...]) -> Set[Tuple[Path, int, str]]:
    settings = dataclasses.replace(load_settings([config_from]), select=codes)
    files = sorted(f for path in paths for f in path.rglob("*.py"))
    results, _ = runner.run(files, settings, jobs=1)
    out = set()
    for result in results:
        assert not result.errors, result.errors
        out.update((Path(d.path).resolve(), d.location.row, d.code) for d in result.diagnostics)
    return out


def _wanted(project: Path, codes: Tuple[str, ...]) -> Set[Tuple[Path, int, str]]:
    return {(project.resolve() / name, row, code) for found in _expected(project).values() for name, row, code in found if code in codes}


STEPS = PROJECTS_DIR / "steps_elsewhere"
STEP_CODES = ("TPF205", "TPF206")


def test_a_project_inside_the_configs_folder_resolves_its_own_packages(tmp_path):
    """A config one folder up makes that folder the root (a monorepo's pyproject.toml):
    ``core/ppo.py`` importing ``core.optim`` must still mean the nested project's
    ``core``, as when the nested project is linted alone (its rl_main.py TPF206 lines)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mono'\n\n[tool.pytorch-perflint]\n")
    nested = tmp_path / "steps_elsewhere"
    shutil.copytree(STEPS, nested)
    assert _run_codes([nested], tmp_path, STEP_CODES) == _wanted(nested, STEP_CODES)


def test_findings_do_not_depend_on_how_many_project_roots_a_run_lints(tmp_path):
    """More roots in one run than any index cache keeps (10 copies of steps_elsewhere):
    each keeps its cross-module findings."""
    if any((folder / marker).exists() for folder in tmp_path.parents for marker in ROOT_MARKERS):
        pytest.skip("a root marker above the temporary folder")
    copies = [tmp_path / f"p{n}" for n in range(10)]
    for copy in copies:
        shutil.copytree(STEPS, copy)
    wanted = set().union(*(_wanted(copy, STEP_CODES) for copy in copies))
    assert len(wanted) == 10 * 5
    assert _run_codes([tmp_path], tmp_path, STEP_CODES) == wanted
