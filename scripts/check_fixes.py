"""Apply every fix (unsafe and preview included) to a tree in memory and check the result.

For each .py file: the fixed text compiles, no finding that has an applicable fix is left,
and fixing the fixed text again changes nothing. Nothing is written.

    python scripts/check_fixes.py TREE [TREE ...]
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path
from typing import List

from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source
from pytorch_perflint.fixer import fix_source, is_applicable

SETTINGS = dataclasses.replace(Settings(), select=("ALL",), preview=True, unsafe_fixes=True, fix=True)


def check(path: Path) -> List[str]:
    """The problems found in one file (empty when all is well)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    before = lint_source(text, path, SETTINGS, with_edits=False)
    if not before.candidates:
        return []
    outcome = fix_source(text, path, SETTINGS)
    problems = [f"{path}: {e}" for e in (*outcome.errors, *outcome.fix_errors)]
    try:
        compile(outcome.source, str(path), "exec", dont_inherit=True)
    except SyntaxError as error:
        problems.append(f"{path}: fixed text does not compile: {error}")
    left = [
        d for d in outcome.diagnostics if d.fix is not None and is_applicable(d.fix.applicability, SETTINGS)
    ]
    problems += [f"{path}:{d.location.row}: {d.code} still has a fix after fixing" for d in left]
    again = fix_source(outcome.source, path, SETTINGS)
    if again.source != outcome.source:
        problems.append(f"{path}: a second fix run changed the file again")
    COUNTS.update(d.code for d in before.diagnostics if d.fix is not None)
    COUNTS["files fixed"] += 1
    return problems


COUNTS: Counter = Counter()


def main() -> int:
    problems: List[str] = []
    files = 0
    for root in map(Path, sys.argv[1:] or ["."]):
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            files += 1
            problems += check(path)
    for line in problems:
        print(line)
    print(f"{files} files, {COUNTS['files fixed']} with fixes; fixable findings per rule: "
          + ", ".join(f"{code} {n}" for code, n in sorted(COUNTS.items()) if code.startswith("TPF")))
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
