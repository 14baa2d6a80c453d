"""What the project index costs, against ``ast.parse`` of the same files.

Reads every .py file under a tree (default: the installed torch package's own sources) and
prints CPU-seconds, in one process, for:

- ``ast.parse`` of every file (the floor the engine already pays for its screens);
- summaries built from those trees (what the index adds when the engine shares its tree);
- summaries built from the text (parse included: a module the engine did not parse);
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


def parse_trees(files: Sequence[Tuple[Path, str]]) -> List[ast.Module]:
    trees = []
    for _, text in files:
        try:
            trees.append(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            trees.append(None)  # type: ignore[arg-type]
    return trees


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

    floor = cpu_seconds(lambda: parse_trees(files), args.repeat)
    trees = parse_trees(files)
    pairs = [(t, text) for t, (_, text) in zip(trees, files) if t is not None]
    shared = cpu_seconds(lambda: [summarize(t, text, summarizers=()) for t, text in pairs], args.repeat)
    alone = cpu_seconds(lambda: [summarize(None, text, summarizers=()) for _, text in files], args.repeat)
    paths = [str(path) for path, _ in files]

    def cold_index() -> int:
        index = ProjectIndex(tree, files=paths, summarizers=())
        graph = index.import_graph()
        on_accelerator = sum(index.runs_on_accelerator(p) for p in graph)
        return on_accelerator

    cold = cpu_seconds(cold_index, args.repeat)
    summaries = [summarize(t, text, summarizers=()) for t, text in pairs]
    payload = json.dumps([to_json(s) for s in summaries])
    codec = cpu_seconds(lambda: [from_json(d) for d in json.loads(json.dumps([to_json(s) for s in summaries]))], args.repeat)
    index = ProjectIndex(tree, files=paths, summarizers=())
    graph = index.import_graph()
    edges = sum(len(v) for v in graph.values())
    running = sum(index.runs_on_accelerator(p) for p in graph)

    def row(label: str, seconds: float) -> None:
        print(f"{label:44} {seconds:7.2f} CPU-s  {seconds / floor:5.2f}x ast.parse")

    row("ast.parse (the floor)", floor)
    row("summaries from the parsed trees", shared)
    row("ast.parse + summaries from those trees", floor + shared)
    row("summaries from text (parse included)", alone)
    row("cold index: read, summarise, graph, accel", cold)
    row("summaries to JSON and back", codec)
    print(f"JSON of all summaries: {len(payload) / 1e6:.1f} MB ({len(payload) / max(len(files), 1) / 1e3:.1f} kB a file)")
    print(f"import graph: {len(graph)} modules, {edges} edges inside the tree; {running} run on an accelerator")


if __name__ == "__main__":
    main()
