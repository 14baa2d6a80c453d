"""TPF203's and TPF401's project screens as questions: worked out from the tree in the
summarising worker, answered in the lint phase without parsing the file again, and always
the answer the screen gives with the tree (None: the tree decides)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import List

from pytorch_perflint import screening
from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.registry import rule_by_code


def _settings(root: Path) -> Settings:
    return dataclasses.replace(Settings(), project_root=str(root), config_path=str(root / "pyproject.toml"))


def _project(root: Path, files: dict) -> None:
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.pytorch-perflint]\n")
    for name, text in files.items():
        (root / name).write_text(text)


def _agrees(rule, path: Path, settings: Settings):
    """The question's answer, checked against the screen with the tree."""
    text = path.read_text()
    tree = ast.parse(text)
    index = index_for(path, settings)
    answer = rule.could_fire_answering(rule.project_question(tree), str(path.resolve()), index)
    screened = rule.could_fire_project(tree, str(path.resolve()), index)
    assert answer is None or answer == screened, path.name
    return answer


_HELPERS = (
    "import numpy as np\n"
    "def as_float(x):\n    return x.float()\n"
    "def load(n):\n    return np.zeros(n)\n"
)
_COPIES = {
    # A project function that never returns an array: not an array source.
    "never.py": "import torch\nfrom helpers import as_float\ndef f(y):\n    return torch.tensor(as_float(y))\n",
    # One that does.
    "loads.py": "import torch\nfrom helpers import load\ndef f(p):\n    return torch.tensor(load(p))\n",
    # NumPy itself: no project name asked.
    "numpy_here.py": "import torch\nimport numpy as np\nx = torch.tensor(np.zeros(3))\n",
    # Two project names that disagree: the tree decides.
    "both.py": (
        "import torch\nfrom helpers import as_float, load\n"
        "def f(y, p):\n    a = as_float(y)\n    b = load(p)\n    return torch.tensor(a), torch.tensor(b)\n"
    ),
}


def test_tpf401_question_answers_as_its_screen(tmp_path):
    root = tmp_path / "project"
    _project(root, {"helpers.py": _HELPERS, **_COPIES})
    rule = rule_by_code("TPF401")
    settings = _settings(root)
    answers = {name: _agrees(rule, root / name, settings) for name in _COPIES}
    assert answers == {"never.py": False, "loads.py": True, "numpy_here.py": True, "both.py": None}


_EVAL_HELPER = "def run_batches(model, loader):\n    outs = []\n    for x in loader:\n        outs.append(model(x))\n    return outs\n"
_EVALS = {
    # Every caller puts the model in eval mode first: the helper evaluates.
    "evaluated.py": _EVAL_HELPER,
    "infer.py": "from evaluated import run_batches\ndef main(model, loader):\n    model.eval()\n    return run_batches(model, loader)\n",
    # Its caller trains the model: no evaluation loop.
    "trained.py": _EVAL_HELPER,
    "fit.py": "from trained import run_batches\ndef main(model, loader):\n    model.train()\n    return run_batches(model, loader)\n",
    # Evaluation in the file itself, no project answer needed.
    "own.py": "import torch\ndef test(model, loader):\n    model.eval()\n    for x in loader:\n        y = model(x)\n",
}


def test_tpf203_question_answers_as_its_screen(tmp_path):
    root = tmp_path / "project"
    _project(root, _EVALS)
    rule = rule_by_code("TPF203")
    settings = _settings(root)
    answers = {name: _agrees(rule, root / name, settings) for name in ("evaluated.py", "trained.py", "own.py")}
    assert answers == {"evaluated.py": True, "trained.py": False, "own.py": True}


def test_a_passed_question_that_says_no_is_not_parsed_again(tmp_path, monkeypatch):
    """The lint phase drops a file both screens rule out without parsing it again; without
    the questions, the tree is needed."""
    root = tmp_path / "project"
    _project(root, {"helpers.py": _HELPERS, "trained.py": _EVAL_HELPER + _COPIES["never.py"], "fit.py": _EVALS["fit.py"]})
    settings = _settings(root)
    parsed: List[str] = []
    real = screening.ast_tree
    monkeypatch.setattr(screening, "ast_tree", lambda source: parsed.append(source) or real(source))
    path = root / "trained.py"
    text = path.read_text()
    tree = ast.parse(text)
    questions = {code: rule_by_code(code).project_question(tree) for code in ("TPF203", "TPF401")}
    index = index_for(path, settings)
    result = lint_source(text, path, settings, project=index, passed=questions, keep_module=False)
    assert result.diagnostics == [] and parsed == []
    lint_source(text, path, settings, project=index, passed={"TPF203": None, "TPF401": None}, keep_module=False)
    assert len(parsed) == 1
