"""How much the full rule catalogue costs over the first three rules, on a large tree.

Lints every .py file under a tree (default: the installed torch package's own sources) in
this process, once with the first three rules (TPF101, TPF201, TPF501) and once with every
rule (preview included), and prints CPU-seconds, lines per CPU-second and their ratio. Both
runs keep TPF001, the syntax-error check that the default configuration runs on every
file, so that the ratio measures what the later rules add and nothing else (TPF002, which
is opt-in, is off in both). Files are linted as ``pytorch-perflint check`` lints them
(diagnostics only: no fix edits, and large files may be parsed in part). The floor,
``ast.parse`` of the same files, is printed for scale, and so is the three-rule run
without TPF001 (how this was measured before).

    python scripts/bench_lint_speed.py [TREE] [--limit N] [--repeat R]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

from pytorch_perflint.config import Settings
from pytorch_perflint.engine import lint_source


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed: pass a TREE to lint")
    return Path(spec.origin).parent


def load(tree: Path, limit: int) -> List[Tuple[Path, str]]:
    files = []
    for path in sorted(tree.rglob("*.py")):
        try:
            files.append((path, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
        if limit and len(files) >= limit:
            break
    return files


def cpu_seconds(run: Callable[[], object], repeat: int) -> float:
    """The median process CPU time of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def lint_all(files: Sequence[Tuple[Path, str]], settings: Settings) -> Callable[[], int]:
    def run() -> int:
        return sum(len(lint_source(text, path, settings, with_edits=False, keep_module=False).diagnostics) for path, text in files)

    return run


def parse_all(files: Sequence[Tuple[Path, str]]) -> Callable[[], None]:
    def run() -> None:
        gc.disable()  # as the linter does while it lints a file
        try:
            for _, text in files:
                try:
                    ast.parse(text)
                except SyntaxError:
                    pass
        finally:
            gc.enable()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="lint at most N files (0: all)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    tree = args.tree or torch_tree()
    files = load(tree, args.limit)
    lines = sum(text.count("\n") + 1 for _, text in files)
    first = ("TPF101", "TPF201", "TPF501")
    bare = dataclasses.replace(Settings(), select=first)
    three = dataclasses.replace(Settings(), select=("TPF001", *first))
    every = dataclasses.replace(Settings(), select=("ALL",), ignore=("TPF002",), preview=True)
    print(f"tree: {tree} ({len(files)} files, {lines} lines), one process")
    floor = cpu_seconds(parse_all(files), args.repeat)
    alone = cpu_seconds(lint_all(files, bare), args.repeat)
    base = cpu_seconds(lint_all(files, three), args.repeat)
    full = cpu_seconds(lint_all(files, every), args.repeat)
    print(f"ast.parse floor                    {floor:8.2f} CPU-s {lines / floor:10.0f} lines/CPU-s")
    print(f"three rules, no TPF001             {alone:8.2f} CPU-s {lines / alone:10.0f} lines/CPU-s")
    print(f"three rules + TPF001               {base:8.2f} CPU-s {lines / base:10.0f} lines/CPU-s")
    print(f"all rules + TPF001 (+preview)      {full:8.2f} CPU-s {lines / full:10.0f} lines/CPU-s")
    print(f"ratio all/three: {full / base:.2f}x (the budget is 2.00x); against the three rules")
    print(f"without TPF001: {full / alone:.2f}x")


if __name__ == "__main__":
    main()
