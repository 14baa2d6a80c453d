"""What each rule's pre-screens cost and keep, on a large tree.

Reads every .py file under a tree (default: the installed torch package's own sources) and,
in one process with the collector off (as the engine lints a file), asks each rule the two
pre-screens the engine asks before LibCST parses a file:

- ``could_fire(source)``, the text screen, of every file;
- ``could_fire_tree(tree)``, the ``ast`` screen, of the files that passed that rule's text
  screen (only for rules that have one).

Per rule it prints how many files pass each screen and the CPU-seconds of each. The ast
screens share one ``tree_index`` walk per file (``analysis.ast_index``): to charge each
rule only its own work, the index is built first and shown on a line of its own. The
``total`` line is the screens as the engine runs them, file by file in rule order with
nothing built beforehand, and ``ast.parse`` of the files some rule asked is printed for
scale.

    python scripts/bench_screens.py [TREE] [--limit N] [--all] [--repeat R]

``--all``: every rule, preview and opt-in ones included (``--select ALL --preview``);
by default the rules a default configuration runs. ``--repeat``: the median of R runs of
each measure (the files are read and parsed once).
"""

from __future__ import annotations

import argparse
import ast
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Type

from bench_lint_speed import load, torch_tree  # the same files, read the same way

from pytorch_perflint.analysis.ast_index import tree_index
from pytorch_perflint.engine import compile_python
from pytorch_perflint.registry import all_rules
from pytorch_perflint.rule import Rule

_EMPTY = ast.Module(body=[], type_ignores=[])


def chosen_rules(every: bool) -> List[Type[Rule]]:
    return [r for r in all_rules() if every or (r.default_enabled and not r.preview)]


def text_screens(rules: Sequence[Type[Rule]], files: Sequence[Tuple[Path, str]]) -> Tuple[Dict[str, List[int]], Dict[str, float]]:
    """For each rule, the indices of the files passing ``could_fire`` and its CPU-seconds."""
    passed: Dict[str, List[int]] = {}
    seconds: Dict[str, float] = {}
    for rule in rules:
        start = time.process_time()
        passed[rule.code] = [i for i, (_, text) in enumerate(files) if rule.could_fire(text)]
        seconds[rule.code] = time.process_time() - start
    return passed, seconds


def parse(files: Sequence[Tuple[Path, str]], wanted: Sequence[int]) -> Tuple[Dict[int, ast.Module], float]:
    trees: Dict[int, ast.Module] = {}
    start = time.process_time()
    for i in wanted:
        try:
            trees[i] = compile_python(files[i][1], files[i][0])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return trees, time.process_time() - start


def tree_screens(
    screened: Sequence[Type[Rule]], passed: Dict[str, List[int]], trees: Dict[int, ast.Module]
) -> Tuple[Dict[str, int], Dict[str, float], float]:
    """Per rule, the files its ast screen keeps and its CPU-seconds, with the shared index
    built first (its CPU-seconds are the third value)."""
    asks: Dict[int, List[Type[Rule]]] = {i: [] for i in trees}
    for rule in screened:
        for i in passed[rule.code]:
            if i in asks:
                asks[i].append(rule)
    kept = {rule.code: 0 for rule in screened}
    seconds = {rule.code: 0.0 for rule in screened}
    index_seconds = 0.0
    clock = time.process_time
    for i, rules in asks.items():
        if not rules:
            continue
        tree = trees[i]
        start = clock()
        tree_index(tree)
        index_seconds += clock() - start
        for rule in rules:
            start = clock()
            keep = rule.could_fire_tree(tree)
            seconds[rule.code] += clock() - start
            kept[rule.code] += bool(keep)
    return kept, seconds, index_seconds


def engine_order(rules: Sequence[Type[Rule]], passed: Dict[str, List[int]], trees: Dict[int, ast.Module]) -> float:
    """The ast screens as ``screening.screen_with_ast`` asks them: each file's candidates in
    rule order, nothing built beforehand."""
    asks: Dict[int, List[Type[Rule]]] = {i: [] for i in trees}
    for rule in rules:
        for i in passed[rule.code]:
            if i in asks:
                asks[i].append(rule)
    start = time.process_time()
    for i, candidates in asks.items():
        tree = trees[i]
        for rule in candidates:
            rule.could_fire_tree(tree)
    return time.process_time() - start


def _median(runs: Sequence[Dict[str, float]]) -> Dict[str, float]:
    return {code: statistics.median(run[code] for run in runs) for code in runs[0]}


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path, help="default: the installed torch package")
    parser.add_argument("--limit", type=int, default=0, help="only the first N files (sorted)")
    parser.add_argument("--all", action="store_true", help="every rule, preview and opt-in ones included")
    parser.add_argument("--repeat", type=int, default=1, help="the median of R runs of each measure")
    args = parser.parse_args(list(argv) or None)
    root = args.tree or torch_tree()
    files = load(root, args.limit)
    rules = chosen_rules(args.all)
    screened = [r for r in rules if r.could_fire_tree(_EMPTY) is not None]
    gc.disable()
    runs = max(1, args.repeat)
    try:
        texts = [text_screens(rules, files) for _ in range(runs)]
        passed = texts[0][0]
        text_seconds = _median([seconds for _, seconds in texts])
        wanted = sorted({i for r in screened for i in passed[r.code]})
        parses = [parse(files, wanted) for _ in range(runs)]
        trees, parse_seconds = parses[-1][0], statistics.median(seconds for _, seconds in parses)
        del parses
        asked = []
        for _ in range(runs):
            tree_index.cache_clear()
            asked.append(tree_screens(screened, passed, trees))
        kept = asked[0][0]
        tree_seconds = _median([seconds for _, seconds, _ in asked])
        index_seconds = statistics.median(seconds for _, _, seconds in asked)
        engine_runs = []
        for _ in range(runs):
            tree_index.cache_clear()
            engine_runs.append(engine_order(screened, passed, trees))
        engine_seconds = statistics.median(engine_runs)
    finally:
        gc.enable()
    median = f"; median of {runs} runs" if runs > 1 else ""
    print(f"{len(files)} files under {root}; {'every rule' if args.all else 'default rules'}{median}")
    print(f"{'rule':8} {'text pass':>9} {'text CPU-s':>10} {'ast pass':>8} {'ast CPU-s':>9}")
    for rule in rules:
        if rule in screened:
            ast_part = f"{kept[rule.code]:>8} {tree_seconds[rule.code]:>9.3f}"
        else:
            ast_part = f"{'-':>8} {'-':>9}"
        print(f"{rule.code:8} {len(passed[rule.code]):>9} {text_seconds[rule.code]:>10.3f} {ast_part}")
    print(f"{'index':8} {'':>9} {'':>10} {len(trees):>8} {index_seconds:>9.3f}   (shared tree_index walk)")
    text_total = sum(text_seconds.values())
    print(
        f"{'total':8} {'':>9} {text_total:>10.3f} {'':>8} {engine_seconds:>9.3f}   "
        f"(ast screens in engine order; text + ast {text_total + engine_seconds:.3f} CPU-s)"
    )
    print(f"ast.parse of the {len(trees)} files some ast screen asks about: {parse_seconds:.3f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
