"""TPF206's project screen with the tree, in a module whose only sign of evaluation is a
function named like one (``validate``): the loops in such functions are asked about, and a
loop elsewhere is asked as in a module without that name (in a large project, not at all),
so the calls of every loop of a large module are not dispatched for one ``validate``."""

from __future__ import annotations

import ast

import pytest

from pytorch_perflint.config import load_settings
from pytorch_perflint.facts.training import cache_calls
from pytorch_perflint.project.linted import index_for
from pytorch_perflint.rules.training.tpf206_empty_cache_in_loop import EmptyCacheInLoop

from project_tree import write_project

HELPERS = "import torch\n\ndef release():\n    torch.cuda.empty_cache()\n\ndef keep():\n    return 1\n"


def _main(in_validate: str, elsewhere: str, extra: str = "") -> str:
    return (
        f"from helpers import release, keep\n{extra}\n"
        f"def validate(items):\n    for item in items:\n        {in_validate}()\n\n"
        f"def collect(items):\n    for item in items:\n        {elsewhere}()\n"
    )


@pytest.mark.parametrize(
    ("main", "large", "expected"),
    [
        # Large project: only the loop in `validate` is asked.
        (_main("keep", "release"), True, False),
        (_main("release", "keep"), True, True),
        # A word of evaluation anywhere in the module: every loop is asked.
        (_main("keep", "release", "import torch\nno_grad = torch.no_grad"), True, True),
        # Small project: the other loops are asked for code that runs the forward itself.
        (_main("keep", "release"), False, False),
    ],
    ids=["large-elsewhere", "large-in-validate", "words-everywhere", "small-elsewhere-no-forward"],
)
def test_loops_outside_functions_named_like_evaluation(tmp_path, monkeypatch, main, large, expected):
    root = write_project(tmp_path, {"helpers.py": HELPERS, "main.py": main})
    if large:
        monkeypatch.setattr(cache_calls, "MAX_SCANNED_MODULES", 0)
    path = root / "main.py"
    index = index_for(path, load_settings([root]))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert EmptyCacheInLoop.could_fire_project(tree, str(path.resolve()), index) is expected
