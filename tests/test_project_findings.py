"""The rules on the multi-file fixture projects (``fixtures/projects/``): what they report
must be exactly the ``# expect:`` lines, whether the whole project is linted at once or each
file alone (a pre-commit run passes only the changed files; the index still reads the
modules they import).

Projects whose rules have not been taught the cross-file facts they need yet are strict
xfails: the test turns red when a rule learns them and nobody removes the mark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Set, Tuple

import pytest

from pytorch_perflint import runner
from pytorch_perflint.config import load_settings
from pytorch_perflint.registry import all_rules
from pytorch_perflint.testing import FIXTURES, Fixture

PROJECTS_DIR = FIXTURES / "projects"
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if p.is_dir())
CODES = [rule.code for rule in all_rules()]

# The projects whose expectations the rules meet today. Every other one waits for its rule
# to be taught the cross-file facts (issue 13) and is a strict xfail until then.
MET = {"cpu_script_beside_gpu", "host_tensors_moved", "numpy_from_helpers"}

Finding = Tuple[str, int, str]  # (file relative to the project, line, code)


def _expected(project: Path) -> Dict[str, Set[Finding]]:
    out: Dict[str, Set[Finding]] = {}
    for path in sorted(project.rglob("*.py")):
        name = path.relative_to(project).as_posix()
        out[name] = {(name, row, code) for code in CODES for row, code in Fixture(code, path).expected()}
    return out


def _found(project: Path, paths) -> Set[Finding]:
    settings = load_settings([project])
    results, _ = runner.run(list(paths), settings, jobs=2)
    found: Set[Finding] = set()
    for result in results:
        assert not result.errors, result.errors
        for diagnostic in result.diagnostics:
            found.add((Path(diagnostic.path).resolve().relative_to(project.resolve()).as_posix(), diagnostic.location.row, diagnostic.code))
    return found


def _cases():
    for project in PROJECTS:
        for how in ("whole project", "each file alone"):
            marks = () if project.name in MET else pytest.mark.xfail(strict=True, reason="rule not yet taught: issue 13")
            yield pytest.param(project, how, marks=marks, id=f"{project.name}-{how.replace(' ', '-')}")


@pytest.mark.parametrize(("project", "how"), list(_cases()))
def test_a_project_reports_exactly_its_expect_lines(project: Path, how: str):
    expected = _expected(project)
    if how == "whole project":
        files = sorted(project.rglob("*.py"))
        assert _found(project, files) == set().union(*expected.values())
    else:
        for name, wanted in expected.items():
            assert _found(project, [project / name]) == wanted, name


def test_met_names_real_projects():
    assert MET <= {p.name for p in PROJECTS}
