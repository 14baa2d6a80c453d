"""What the project index costs, against ``ast.parse`` of the same files.

Reads every .py file under a tree (default: the installed torch package's own sources) and
prints CPU-seconds, in one process, for:

- ``ast.parse`` of every file (the floor the engine already pays for its screens) and a
  summary built from each tree (the engine's case: it shares its tree), timed file by file
  in the same pass;
- a cold ``ProjectIndex`` over the tree: read, decode, summarise every module, resolve the
  imports into the import graph and decide which modules run on an accelerator;
- the summaries written to JSON and read back (what an on-disk cache would do), with size.

Ratios are printed against the ``ast.parse`` floor. The budget: summaries from a shared
tree well under 0.3x of it (so parse + summaries stay under 1.3x).

    python scripts/bench_project_index.py [TREE] [--limit N] [--repeat R]
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

from bench_lint_speed import load, torch_tree  # the same files, read the same way

from pytorch_perflint.project import ProjectIndex, summarize
from pytorch_perflint.project.codec import from_json, to_json


def cpu_seconds(run: Callable[[], object], repeat: int) -> float:
    """The median process CPU time of ``repeat`` runs, with the collector off (as the
    linter runs a file)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            run()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return statistics.median(times)


def parse_each(files: Sequence[Tuple[Path, str]], then: Callable[[ast.Module, str], object] = lambda t, s: None) -> None:
    """Parse every file (and do ``then`` with its tree), keeping no tree: holding all of
    them would make the collector and the allocator, not the parser, the cost."""
    for _, text in files:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        then(tree, text)


def parse_then_summarise(files: Sequence[Tuple[Path, str]], repeat: int) -> Tuple[float, float]:
    """CPU-seconds of ``ast.parse`` and of summaries from those trees, timed file by file
    in the same pass (the median of ``repeat`` passes), so that both see the same machine."""
    parses, summaries = [], []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        parse_time = summary_time = 0.0
        try:
            for _, text in files:
                start = time.process_time()
                try:
                    tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError):
                    continue
                middle = time.process_time()
                summarize(tree, text, summarizers=())
                parse_time += middle - start
                summary_time += time.process_time() - middle
                del tree
        finally:
            gc.enable()
        parses.append(parse_time)
        summaries.append(summary_time)
    return statistics.median(parses), statistics.median(summaries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="at most N files (0: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tree = (args.tree or torch_tree()).resolve()
    files = load(tree, args.limit)
    lines = sum(text.count("\n") + 1 for _, text in files)
    print(f"tree: {tree} ({len(files)} files, {lines} lines), one process, median of {args.repeat}")

    parse_each(files)  # warm up: the first pass pays for growing the heap
    floor, summary_time = parse_then_summarise(files, args.repeat)
    paths = [str(path) for path, _ in files]

    def cold_index() -> int:
        index = ProjectIndex(tree, files=paths, summarizers=())
        graph = index.import_graph()
        return sum(index.runs_on_accelerator(p) for p in graph)

    cold = cpu_seconds(cold_index, args.repeat)
    summaries: List[object] = []
    parse_each(files, lambda t, text: summaries.append(summarize(t, text, summarizers=())))
    payload = json.dumps([to_json(s) for s in summaries])
    codec = cpu_seconds(lambda: [from_json(d) for d in json.loads(json.dumps([to_json(s) for s in summaries]))], args.repeat)
    index = ProjectIndex(tree, files=paths, summarizers=())
    graph = index.import_graph()
    edges = sum(len(v) for v in graph.values())
    running = sum(index.runs_on_accelerator(p) for p in graph)

    def row(label: str, seconds: float) -> None:
        print(f"{label:44} {seconds:7.2f} CPU-s  {seconds / floor:5.2f}x ast.parse")

    row("ast.parse (the floor)", floor)
    row("summaries from those trees", summary_time)
    row("ast.parse + summaries", floor + summary_time)
    row("cold index: read, summarise, graph, accel", cold)
    row("summaries to JSON and back", codec)
    print(f"JSON of all summaries: {len(payload) / 1e6:.1f} MB ({len(payload) / max(len(files), 1) / 1e3:.1f} kB a file)")
    print(f"import graph: {len(graph)} modules, {edges} edges inside the tree; {running} run on an accelerator")


if __name__ == "__main__":
    main()
