"""The multi-file fixture projects are well formed, and the index agrees with them.

Their findings are checked in ``test_project_findings.py``; this checks what that relies
on: each project parses, selects the rules its ``# expect:`` lines name, resolves its own
imports, and runs on an accelerator exactly where an accelerator-only rule is expected to
fire.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from pytorch_perflint.config import read_config
from pytorch_perflint.project import ProjectIndex
from pytorch_perflint.registry import all_rules
from pytorch_perflint.testing import FIXTURES, Fixture

PROJECTS_DIR = FIXTURES / "projects"
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if p.is_dir())
RULES = {rule.code: rule for rule in all_rules()}
_OK = re.compile(r"#\s*ok:(?P<why>.*)$")
_MARKER = re.compile(r"#.*\b(?:expect|ok)\b")


def _files(project: Path) -> List[Path]:
    return sorted(project.rglob("*.py"))


def _expected(path: Path) -> Set[Tuple[int, str]]:
    """(line, code) of every ``# expect:`` in a file, read as the single-file fixtures are."""
    return {found for code in RULES for found in Fixture(code, path).expected()}


def _ok_lines(path: Path) -> Dict[int, str]:
    out = {}
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _OK.search(line)
        if match:
            out[row] = match.group("why").strip()
    return out


def test_there_are_enough_projects_and_the_readme_lists_each_of_them():
    assert len(PROJECTS) >= 8
    readme = (PROJECTS_DIR / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+)` \|", readme, re.MULTILINE))
    assert listed == {p.name for p in PROJECTS}


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_a_project_is_well_formed(project):
    config = read_config(project / "pyproject.toml")
    selected = set(config.get("select", ()))
    assert selected and selected <= set(RULES), selected
    expected: Set[Tuple[str, int, str]] = set()
    oks = 0
    for path in _files(project):
        source = path.read_text(encoding="utf-8")
        ast.parse(source, str(path))  # every file parses
        found = _expected(path)
        for row, code in found:
            assert code in selected, f"{path.name}:{row}: {code} is not selected in the project's pyproject.toml"
            expected.add((path.name, row, code))
        for row, why in _ok_lines(path).items():
            assert why, f"{path.name}:{row}: an `# ok:` says why"
            assert row not in {r for r, _ in found}, f"{path.name}:{row}: both expect and ok"
            oks += 1
        for row, line in enumerate(source.splitlines(), start=1):
            if _MARKER.search(line):
                assert (row in {r for r, _ in found}) or row in _ok_lines(path), f"{path.name}:{row}: a marker that reads neither way"
    assert expected, "a project with nothing to report"
    assert oks, "a project without look-alikes"
    assert {code for _, _, code in expected} == selected, "every selected rule is expected somewhere"


# Look-alikes whose project-named imports must stay unresolved: the folder they come from is
# put on sys.path by an unknown expression, or only after the import runs.
UNRESOLVED = {("added_import_paths", "fit_from_env.py"), ("added_import_paths", "fit_late.py")}


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_a_projects_imports_resolve_inside_it(project):
    index = ProjectIndex(project)
    names = {p.stem for p in _files(project)} | {p.name for p in project.rglob("*") if p.is_dir()}
    for path in _files(project):
        if (project.name, path.name) in UNRESOLVED:
            assert not any(
                (t := index.import_target(str(path), r)) is not None and t.in_project for r in index.summary(path).imports if r.module.startswith(("detector", "recurrent_conv"))
            ), f"{path.name}: an unknown or late path resolved"
            continue
        for record in index.summary(path).imports:
            target = index.import_target(str(path), record)
            top = record.module.split(".")[0]
            if record.level or top in names:
                assert target is not None and target.in_project, f"{path.name}:{record.line}: {record.module} does not resolve"


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
def test_accelerator_rules_are_expected_only_where_the_code_runs_on_one(project):
    index = ProjectIndex(project)
    gpu_only = {code for code, rule in RULES.items() if rule.needs_cuda}
    for path in _files(project):
        codes = {code for _, code in _expected(path)}
        if codes & gpu_only:
            assert index.runs_on_accelerator(path), f"{path.relative_to(project)} expects {codes & gpu_only} but runs on the CPU"


def test_the_cpu_only_look_alikes_run_on_the_cpu():
    cases = {
        "cpu_script_beside_gpu": ("preprocess_cpu.py", "cpu_stats.py"),
        "conv_model_elsewhere": ("train_cpu.py",),
        "arch_from_args": ("export_onnx.py",),
    }
    for name, files in cases.items():
        index = ProjectIndex(PROJECTS_DIR / name)
        for file in files:
            assert not index.runs_on_accelerator(PROJECTS_DIR / name / file), f"{name}/{file}"
