"""scripts/bench_screens.py on a small tree: one line per rule, with the files each of its
screens passes (the CPU-seconds are printed, never asserted)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from pytorch_perflint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "bench_screens.py"


def test_the_table_counts_what_each_screen_passes():
    tree = ROOT / "fixtures" / "TPF401"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(tree), "--repeat", "2"], capture_output=True, text=True, env=env, check=True
    ).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    sources = [path.read_text(encoding="utf-8") for path in sorted(tree.rglob("*.py"))]
    defaults = [r for r in all_rules() if r.default_enabled and not r.preview]
    assert [code for code in rows if code.startswith("TPF")] == [r.code for r in defaults]
    for rule in defaults:
        text = [s for s in sources if rule.could_fire(s)]
        assert int(rows[rule.code][1]) == len(text)
        if rule.could_fire_tree(ast.parse("")) is not None:
            assert int(rows[rule.code][3]) == sum(bool(rule.could_fire_tree(ast.parse(s))) for s in text)
        else:
            assert rows[rule.code][3] == "-"
    assert "total" in rows and "index" in rows
