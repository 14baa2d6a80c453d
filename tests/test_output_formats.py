"""The formats ruff users reach for in CI: json-lines, junit, gitlab and pylint."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytorch_perflint.output import FORMATS, emit
from pytorch_perflint.types import Diagnostic, FileResult, Location, RunSummary

SOURCE = "import torch\nmodel = torch.nn.DataParallel(model)\nother = torch.nn.DataParallel(other)\n"


def _dp(path: Path, row: int, column: int = 9) -> Diagnostic:
    return Diagnostic("TPF501", "data-parallel", "Use DDP", path, Location(row, column), Location(row, column + 28))


def _results(root: Path):
    train = root / "pkg" / "train.py"
    broken = root / "broken.py"
    notebook = root / "nb.ipynb"
    return [
        FileResult(train, (_dp(train, 3), _dp(train, 2)), source=SOURCE),
        FileResult(broken, (Diagnostic("TPF001", "syntax-error", "SyntaxError: x", broken, Location(4, 2), Location(4, 2)),)),
        FileResult(notebook, (Diagnostic("TPF501", "data-parallel", "Use DDP", notebook, Location(2, 5), Location(2, 9), cell=3),)),
    ]


def _emit(results, fmt, root) -> str:
    stream = io.StringIO()
    emit(results, fmt, stream, summary=RunSummary(remaining=4), root=root)
    return stream.getvalue()


def test_the_new_formats_are_offered():
    assert {"json-lines", "junit", "gitlab", "pylint"} <= set(FORMATS)


def test_json_lines_is_one_json_object_of_the_json_format_per_line(tmp_path):
    results = _results(tmp_path)
    lines = _emit(results, "json-lines", tmp_path).splitlines()
    assert [json.loads(line) for line in lines] == json.loads(_emit(results, "json", tmp_path))
    assert len(lines) == 4 and all(line.startswith("{") for line in lines)
    assert _emit([], "json-lines", tmp_path) == ""


def test_pylint_lines(tmp_path):
    assert _emit(_results(tmp_path), "pylint", tmp_path).splitlines() == [
        "broken.py:4: [TPF001] SyntaxError: x",
        "nb.ipynb:1: [TPF501] Use DDP (cell 3, line 2, column 5)",
        f"{Path('pkg/train.py')}:2: [TPF501] Use DDP",
        f"{Path('pkg/train.py')}:3: [TPF501] Use DDP",
    ]


def test_junit_is_xml_with_a_suite_per_file_and_a_failure_per_finding(tmp_path):
    text = _emit(_results(tmp_path), "junit", tmp_path)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "4"
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert sorted(suites) == ["broken.py", "nb.ipynb", "pkg/train.py"]
    train = suites["pkg/train.py"]
    assert train.get("tests") == "2" and train.get("failures") == "2"
    cases = train.findall("testcase")
    assert [(c.get("name"), c.get("classname"), c.get("line"), c.get("column")) for c in cases] == [
        ("org.pytorch-perflint.TPF501", "pkg/train", "2", "9"),
        ("org.pytorch-perflint.TPF501", "pkg/train", "3", "9"),
    ]
    failure = cases[0].find("failure")
    assert failure.get("message") == "Use DDP" and failure.text == "line 2, col 9, Use DDP"
    broken = suites["broken.py"].find("testcase")
    assert broken.find("properties/property").attrib == {"name": "severity", "value": "error"}
    assert suites["nb.ipynb"].find("testcase/failure").text == "cell 3, line 2, col 5, Use DDP"


def test_junit_clean_run_is_one_passing_case(tmp_path):
    root = ET.fromstring(_emit([], "junit", tmp_path).split("\n", 1)[1])
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["No errors found"]
    assert cases[0].find("failure") is None and root.get("failures") == "0"


def test_gitlab_code_quality_report(tmp_path, monkeypatch):
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    issues = json.loads(_emit(_results(tmp_path), "gitlab", tmp_path))
    assert [(i["check_name"], i["severity"], i["location"]["path"]) for i in issues] == [
        ("TPF001", "major", "broken.py"),
        ("TPF501", "minor", "nb.ipynb"),
        ("TPF501", "minor", "pkg/train.py"),
        ("TPF501", "minor", "pkg/train.py"),
    ]
    assert issues[2]["description"] == "TPF501: Use DDP"
    assert issues[2]["location"]["positions"] == {"begin": {"line": 2, "column": 9}, "end": {"line": 2, "column": 37}}
    assert issues[1]["location"]["positions"]["begin"] == {"line": 1, "column": 1}
    assert issues[1]["description"].endswith("(cell 3, line 2, column 5)")
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == 4 and all(len(f) == 64 for f in fingerprints)


def test_gitlab_fingerprints_survive_code_moving_and_tell_twins_apart(tmp_path, monkeypatch):
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    path = tmp_path / "a.py"
    before = FileResult(path, (_dp(path, 2), _dp(path, 3)), source=SOURCE)
    moved = "import torch\n\n\n" + SOURCE.split("\n", 1)[1]
    after = FileResult(path, (_dp(path, 4), _dp(path, 5)), source=moved)
    twins = FileResult(path, (_dp(path, 2), _dp(path, 3)), source="x\nm = torch.nn.DataParallel(m)\nm = torch.nn.DataParallel(m)\n")
    first = [i["fingerprint"] for i in json.loads(_emit([before], "gitlab", tmp_path))]
    second = [i["fingerprint"] for i in json.loads(_emit([after], "gitlab", tmp_path))]
    assert first == second
    pair = [i["fingerprint"] for i in json.loads(_emit([twins], "gitlab", tmp_path))]
    assert len(set(pair)) == 2


def test_gitlab_paths_are_relative_to_ci_project_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path / "pkg"))
    issues = json.loads(_emit(_results(tmp_path)[:1], "gitlab", tmp_path))
    assert {i["location"]["path"] for i in issues} == {"train.py"}


@pytest.mark.parametrize("fmt", ["json-lines", "junit", "gitlab", "pylint"])
def test_new_formats_print_no_summary_or_errors(tmp_path, fmt):
    results = [FileResult(tmp_path / "a.py", errors=("a.py: internal error: boom",))]
    out = _emit(results, fmt, tmp_path)
    assert "boom" not in out and "Found" not in out and "All checks passed" not in out



# -- full: notebook cells get their own code frame -----------------------------------------

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["import torch\n", "%matplotlib inline\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ["x = 1\n", "model = torch.nn.DataParallel(model)\n", "y = 2"]},
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}
NOTEBOOK_FRAME = [
    "  |",
    "1 | x = 1",
    "2 | model = torch.nn.DataParallel(model)",
    "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ TPF501 data-parallel",
    "3 | y = 2",
    "  |",
]


def test_full_frames_a_notebook_finding_with_its_cells_code(tmp_path):
    path = tmp_path / "nb.ipynb"
    d = Diagnostic("TPF501", "data-parallel", "Use DDP", path, Location(2, 9), Location(2, 37), cell=2)
    stream = io.StringIO()
    emit([FileResult(path, (d,), source=json.dumps(NOTEBOOK))], "full", stream, summary=RunSummary(remaining=1), root=tmp_path, color=False)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "nb.ipynb:cell 2:2:9: TPF501 Use DDP"
    assert lines[1:7] == NOTEBOOK_FRAME


def test_check_full_shows_the_cell_frame_fresh_and_from_the_cache(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from pytorch_perflint.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    for _ in range(2):  # the second run reads the cache
        result = CliRunner().invoke(main, ["check", "--output-format", "full", "--color", "never"])
        assert result.exit_code == 1
        lines = result.stdout.splitlines()
        assert lines[0].startswith("nb.ipynb:cell 2:2:9: TPF501 ")
        assert lines[1:7] == NOTEBOOK_FRAME
