"""scripts/score_review.py's arithmetic on a tiny fake label set and fake findings."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "score_review.py"


def _load():
    spec = importlib.util.spec_from_file_location("score_review", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["score_review"] = module
    spec.loader.exec_module(module)
    return module


sr = _load()

LABELS = """\
[[repo]]
name = "a+b"
url = "https://example.invalid/a/b"
commit = "0000000000000000000000000000000000000000"
labels = [
  { path = "train.py", line = 10, code = "TPF202", expect = true, why = "found" },
  { path = "train.py", line = 11, code = "TPF202", expect = true, why = "missed" },
  { path = "train.py", line = 12, code = "TPF202", expect = false, why = "guarded, reported anyway" },
  { path = "train.py", line = 13, code = "TPF202", expect = false, why = "guarded, silent" },
  { path = "model.py", line = 5, alt_lines = [40], alt_path = "train.py", code = "TPF403", expect = true, why = "found at the other anchor" },
  { path = "nb.ipynb#3", line = 2, code = "TPF101", expect = true, why = "notebook cell" },
]
"""


def test_counts_precision_recall_and_unlabelled(tmp_path: Path) -> None:
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS, encoding="utf-8")
    repos = sr.load_labels(labels)
    findings = {"a+b": [
        sr.Finding("train.py", 10, "TPF202"),
        sr.Finding("train.py", 10, "TPF202"),  # a duplicate counts the label once
        sr.Finding("train.py", 12, "TPF202"),
        sr.Finding("train.py", 40, "TPF403"),
        sr.Finding(sr.place("nb.ipynb", 3), 2, "TPF101"),
        sr.Finding("train.py", 11, "TPF402"),  # right line, other rule: unlabelled, not a hit
    ]}
    report = sr.score(repos, findings)

    sync = report.rules["TPF202"]
    assert (sync.expected, sync.found, sync.lookalikes_hit, sync.unlabelled) == (2, 1, 1, 0)
    assert sync.precision == pytest.approx(0.5)
    assert sync.recall == pytest.approx(0.5)
    assert report.rules["TPF403"].found == 1
    assert report.rules["TPF101"].recall == pytest.approx(1.0)
    assert report.rules["TPF402"].unlabelled == 1 and report.rules["TPF402"].precision is None

    total = report.total()
    assert (total.expected, total.found, total.lookalikes_hit) == (4, 3, 1)
    assert total.precision == pytest.approx(0.75)
    assert total.recall == pytest.approx(0.75)
    assert [label.why for _, label in report.misses] == ["missed"]
    assert [label.why for _, label in report.false_positives] == ["guarded, reported anyway"]
    assert [(f.path, f.line, f.code) for _, f in report.unlabelled] == [("train.py", 11, "TPF402")]
    assert "| all | 4 | 3 | 1 | 1 | 1 | 0.75 | 0.75 |" in sr.table(report)


@pytest.mark.parametrize("labels", sorted(SCRIPT.parent.parent.glob("docs/precision/**/labels.toml")),
                         ids=lambda path: path.parent.name)
def test_the_shipped_labels_load_and_are_unique(labels: Path) -> None:
    repos = sr.load_labels(labels)
    assert len(repos) >= 10
    keys = [(r.name, label.path, label.line, label.code) for r in repos for label in r.labels]
    assert len(keys) == len(set(keys))
    assert all(len(r.commit) == 40 for r in repos)
    assert len({r.name for r in repos}) == len(repos)


def test_select_keeps_only_the_named_rules_labels(tmp_path: Path) -> None:
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS, encoding="utf-8")
    repos = sr.only_codes(sr.load_labels(labels), ["TPF202", "TPF101"])
    assert sorted({label.code for r in repos for label in r.labels}) == ["TPF101", "TPF202"]
    assert len(repos[0].labels) == 5


def test_doubtful_labels_give_strict_and_lenient_precision(tmp_path: Path) -> None:
    labels = tmp_path / "labels.toml"
    labels.write_text("""\
[[repo]]
name = "a+b"
url = "https://example.invalid/a/b"
commit = "0000000000000000000000000000000000000000"
labels = [
  { path = "t.py", line = 1, code = "TPF601", expect = true, why = "right" },
  { path = "t.py", line = 2, code = "TPF601", expect = true, doubtful = true, why = "right, arguably" },
  { path = "t.py", line = 3, code = "TPF601", expect = false, doubtful = true, why = "wrong, arguably" },
  { path = "t.py", line = 4, code = "TPF601", expect = false, why = "wrong" },
]
""", encoding="utf-8")
    repos = sr.load_labels(labels)
    report = sr.score(repos, {"a+b": [sr.Finding("t.py", n, "TPF601") for n in (1, 2, 3, 4)]})
    rule = report.rules["TPF601"]
    assert rule.precision == pytest.approx(0.5)
    assert rule.strict_precision == pytest.approx(0.25)
    assert rule.lenient_precision == pytest.approx(0.75)
    assert "| TPF601 | 1 / 1 | 0.25 | 0.75 |" in sr.table(report)


def test_the_tool_run_is_the_chosen_checkouts_linter(tmp_path: Path) -> None:
    """python -I ignores PYTHONPATH, so ``-m pytorch_perflint`` ran whichever copy the
    interpreter had installed (the main checkout), not the branch being scored."""
    source = tmp_path / "checkout"
    (source / "pytorch_perflint").mkdir(parents=True)
    (source / "pytorch_perflint" / "__init__.py").write_text("", encoding="utf-8")
    (source / "pytorch_perflint" / "__main__.py").write_text(
        "import sys\nprint('stub', sys.argv[1:])\n", encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    command = sr.tool_command(source, ["--select", "TPF601"])
    assert command[:2] == [sys.executable, "-I"] and sr.SOURCE == SCRIPT.parent.parent
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("stub ['check', '.', '--output-format', 'json'")
    assert done.stdout.rstrip().endswith("'--select', 'TPF601']")
