"""The README's pre-commit setup works as written: its snippet names this repository's
hooks, `pre-commit autoupdate` pins its `rev`, and the real `pre-commit try-repo` runs both
hooks on a clone of this repository (committed state), notebooks included.

pre-commit installs the hooks' own virtualenv from the clone (the package and its
dependencies from the package index, no torch), which takes a minute or so."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
URL = "https://github.com/pytorch-perflint/pytorch-perflint"

try:
    import pre_commit  # noqa: F401
    import yaml
except ImportError:  # pragma: no cover - the test extra installs pre-commit
    yaml = None

needs_tools = pytest.mark.skipif(
    yaml is None or shutil.which("git") is None, reason="needs pre-commit and git"
)

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["import torch\n", "from torch.utils.data import DataLoader\n", "model = model.cuda()\n", "%matplotlib inline\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["loader = DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True)\n"],
        },
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## pre-commit\n", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert match, "the README's pre-commit section has no yaml block"
    return match.group(1)


def _run(args, cwd: Path, env) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@needs_tools
def test_readme_snippet_names_this_repo_and_its_hooks():
    config = yaml.safe_load(readme_snippet())
    (repo,) = config["repos"]
    assert repo["repo"] == URL and repo["rev"] == "main"
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    shown = [hook["id"] for hook in repo["hooks"]] + re.findall(r"#\s*- id: (\S+)", readme_snippet())
    assert shown == ["pytorch-perflint", "pytorch-perflint-fix"] and set(shown) <= hooks
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        assert set(hook["types_or"]) == {"python", "pyi", "jupyter"}, hook["id"]


@needs_tools
def test_pre_commit_runs_both_hooks_from_a_clone_on_python_and_notebooks(tmp_path):
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("VIRTUAL_ENV", None)
    clone = tmp_path / "clone"
    _git("clone", "--quiet", str(ROOT), str(clone), cwd=tmp_path)
    _git("checkout", "--quiet", "-B", "main", cwd=clone)  # what `rev: main` names on GitHub (a clone of main is on it already)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True).stdout.strip()

    project = tmp_path / "project"
    project.mkdir()
    _git("init", "--quiet", cwd=project)
    (project / "train.py").write_text("import torch\nmodel = torch.nn.DataParallel(model)\n")
    (project / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    (project / "nb.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    # The README's snippet as written, pointed at the clone instead of GitHub.
    (project / ".pre-commit-config.yaml").write_text(readme_snippet().replace(URL, str(clone)))
    _git("add", ".", cwd=project)
    pre_commit = [sys.executable, "-m", "pre_commit"]

    update = _run([*pre_commit, "autoupdate"], project, env)
    assert update.returncode == 0, update.stdout + update.stderr
    assert f"rev: {head}" in (project / ".pre-commit-config.yaml").read_text()
    valid = _run([*pre_commit, "validate-config", ".pre-commit-config.yaml"], project, env)
    assert valid.returncode == 0, valid.stdout + valid.stderr

    # No hook id: try-repo runs every hook of the repository, the report one first.
    tried = _run([*pre_commit, "try-repo", str(clone), "--all-files"], project, env)
    out = tried.stdout + tried.stderr
    assert tried.returncode == 1, out
    report, fix = out.split("pytorch-perflint (fix)", 1)
    assert "train.py:2:9: TPF501" in report
    assert "nb.ipynb:cell 2:1:10: TPF102" in report  # the notebook is linted, per cell
    assert "clean.py" not in report
    assert "files were modified by this hook" in fix and "train.py:2:9: TPF501" in fix
    fixed = json.loads((project / "nb.ipynb").read_text())
    assert fixed["cells"][2]["source"] == ["loader = DataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True, pin_memory=True)\n"]
    assert fixed["cells"][1]["source"][-1] == "%matplotlib inline\n"
    assert (project / "train.py").read_text() == "import torch\nmodel = torch.nn.DataParallel(model)\n"
