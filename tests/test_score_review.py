"""scripts/score_review.py's arithmetic on a tiny fake label set and fake findings."""

from __future__ import annotations

import importlib.util
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


def test_the_shipped_labels_load_and_are_unique() -> None:
    repos = sr.load_labels(sr.DEFAULT_LABELS)
    assert len(repos) >= 10
    keys = [(r.name, label.path, label.line, label.code) for r in repos for label in r.labels]
    assert len(keys) == len(set(keys))
    assert all(len(r.commit) == 40 for r in repos)
