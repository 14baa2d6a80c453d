"""Dump what the tool reports and fixes on some trees, to compare two versions of it.

A restructure must not change behaviour. Run this before and after it, into two folders
outside the repository, and compare them with ``diff -r``:

    python scripts/dump_behaviour.py OUT TREE [TREE ...]

For each tree it writes ``OUT/<name>.json`` (every finding of ``check --select ALL
--preview --output-format json``, paths relative to the tree, sorted) and
``OUT/<name>.diff`` (``check --diff --unsafe-fixes --preview --select ALL``). Each tree is
first copied into a temporary folder, so no project configuration around it (this
repository's own ``pyproject.toml`` excludes ``fixtures/``) changes what is linted, and
nothing is written to it. The command line is the interface compared, not internals.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List

COMMON = ["check", ".", "--no-cache", "--select", "ALL", "--preview", "--exit-zero"]


def _run(args: List[str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytorch_perflint", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr)
    return done.stdout


def _findings(cwd: Path) -> str:
    raw = _run([*COMMON, "--output-format", "json"], cwd)
    findings = json.loads(raw or "[]")
    for finding in findings:
        finding["filename"] = Path(finding["filename"]).resolve().relative_to(cwd.resolve()).as_posix()
    findings.sort(key=lambda f: (f["filename"], f["location"]["row"], f["location"]["column"], f["code"]))
    return json.dumps(findings, indent=1, sort_keys=True) + "\n"


def _diff(cwd: Path) -> str:
    return _run([*COMMON, "--diff", "--unsafe-fixes"], cwd)


def dump(tree: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / tree.name
        shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        (out / f"{tree.name}.json").write_text(_findings(copy), encoding="utf-8")
        (out / f"{tree.name}.diff").write_text(_diff(copy), encoding="utf-8")


def main() -> int:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for tree in map(Path, sys.argv[2:]):
        dump(tree.resolve(), out)
        print(f"{tree}: dumped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
