"""Linting this repository's own checkout, as the README suggests: its config keeps the
deliberately bad code (fixtures/, examples/) out, so nothing is reported and `--fix` would
touch nothing; naming examples/ still lints it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", "check", "--no-cache", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_checkout_lints_clean_so_no_fixture_is_reported_or_fixed():
    """Every rule, preview ones too: no finding, so `--fix` has nothing to rewrite."""
    report = _check("--preview", "--select", "ALL", "--output-format", "json")
    found = json.loads(report.stdout)
    assert not [d["filename"] for d in found if "/fixtures/" in d["filename"] or "/examples/" in d["filename"]]
    assert report.returncode == 0 and found == [], report.stdout + report.stderr


def test_naming_the_example_still_lints_it():
    proc = _check("examples/", "--output-format", "json")
    assert proc.returncode == 1
    examples = {path.name for path in (ROOT / "examples").glob("*.py")}  # each one shows findings
    assert {Path(d["filename"]).name for d in json.loads(proc.stdout)} == examples
