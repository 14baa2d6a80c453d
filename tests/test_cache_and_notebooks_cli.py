"""The lint cache and notebooks, through the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from pytorch_perflint.cli import main

DP = "import torch\nmodel = torch.nn.DataParallel(net)\n"


def run(args, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_cache_is_written_reused_and_invalidated_by_content(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    target = tmp_path / "train.py"
    target.write_text(DP)
    first = run(["check", "--output-format", "concise", "."], tmp_path)
    assert first.exit_code == 1 and "TPF501" in first.output
    cache_file = tmp_path / ".pytorch_perflint_cache" / "lint.json"
    entries = json.loads(cache_file.read_text())["files"]
    assert [Path(k).name for k in entries] == ["train.py"]
    # A doctored cache entry proves the second run reads the cache instead of re-linting.
    key = next(iter(entries))
    entries[key]["diagnostics"][0]["message"] = "FROM CACHE"
    data = json.loads(cache_file.read_text())
    data["files"] = entries
    cache_file.write_text(json.dumps(data))
    second = run(["check", "--output-format", "concise", "."], tmp_path)
    assert "FROM CACHE" in second.output and second.exit_code == 1
    assert "FROM CACHE" not in run(["check", "--no-cache", "--output-format", "concise", "."], tmp_path).output
    target.write_text("import torch\n")
    assert run(["check", "--output-format", "concise", "."], tmp_path).exit_code == 0


def notebook_text(cells):
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells],
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    ) + "\n"


def test_notebook_findings_are_reported_per_cell(tmp_path):
    (tmp_path / "nb.ipynb").write_text(notebook_text([["import torch\n", "%matplotlib inline\n"], [DP]]))
    result = run(["check", "--no-cache", "--output-format", "json", "."], tmp_path)
    (finding,) = json.loads(result.output)
    assert (finding["code"], finding["cell"], finding["location"]["row"]) == ("TPF501", 2, 2)


def test_invalid_notebook_is_a_clear_tpf001_and_is_not_touched(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    result = run(["check", "--no-cache", "--fix", "--output-format", "concise", "."], tmp_path)
    assert "TPF001" in result.output and "invalid notebook JSON" in result.output
    assert bad.read_text() == "{not json"
