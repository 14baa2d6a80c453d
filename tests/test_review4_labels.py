"""The review-4 corpus (docs/precision/review-4/labels.toml) loads with the scorer and is sound."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "docs" / "precision" / "review-4" / "labels.toml"
BEFORE = ROOT / "docs" / "precision" / "review-4" / "before.json"


def _scorer():
    spec = importlib.util.spec_from_file_location("score_review_r4", ROOT / "scripts" / "score_review.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["score_review_r4"] = module
    spec.loader.exec_module(module)
    return module


def test_review4_labels_load_unique_and_pinned() -> None:
    repos = _scorer().load_labels(LABELS)
    assert len(repos) == 12
    keys = [(r.name, label.path, label.line, label.code) for r in repos for label in r.labels]
    assert len(keys) == len(set(keys))
    assert all(re.fullmatch(r"[0-9a-f]{40}", r.commit) for r in repos)
    assert all(re.fullmatch(r"TPF[1-6]\d\d", label.code) for r in repos for label in r.labels)
    assert all(label.why.strip() and label.line > 0 for r in repos for label in r.labels)


def test_before_json_counts_match_the_labels() -> None:
    repos = _scorer().load_labels(LABELS)
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    expected = sum(label.expect for r in repos for label in r.labels)
    assert before["all"]["expected"] == expected
    assert before["all"]["found"] + len(before["misses"]) == expected


def test_review4_preview_labels_are_preview_rules_only() -> None:
    scorer = _scorer()
    preview = scorer.load_labels(LABELS.with_name("labels-preview.toml"))
    assert {label.code for r in preview for label in r.labels} == {"TPF601", "TPF602"}
    default = scorer.load_labels(LABELS)
    assert not {label.code for r in default for label in r.labels} & {"TPF601", "TPF602"}
    assert {r.commit for r in preview} <= {r.commit for r in default}
