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

``--project``: instead, the tree as one project (copied under a temporary root with a
``pyproject.toml``), default rules, through the CLI as users run it: cold runs (no cache)
with one worker and with ``-j JOBS``, their CPU time (the CLI's and its workers') against
``ast.parse`` of the same files, then warm runs on the unchanged tree and the warm/cold
ratio. With one worker the CPU time is the work; with two workers on a 2-core machine each
also runs slower (they share the cores' caches), so its CPU time is higher for the same
work. Each file linted alone in this process (no project index) is printed for scale.

    python scripts/bench_lint_speed.py --project [TREE] [--jobs J] [--repeat R]

``--torchfix EXE``: the CPU time of this tool and of TorchFix (the ``torchfix`` program
EXE, installed apart: it is not a dependency) on ``torch/optim`` and ``torch/utils/data``
copied under one project root, both cold and on one core: ``check --no-cache -j 1
--select ALL --preview`` against ``torchfix --select ALL -j 1``, each as a subprocess
(its CPU read from ``RUSAGE_CHILDREN``), the median of R runs, and their ratio.

    python scripts/bench_lint_speed.py --torchfix /path/to/torchfix [--repeat R]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gc
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def project_copy(tree: Path, files: Sequence[Tuple[Path, str]], into: Path) -> Path:
    """The tree's loaded files under ``into/<name>``, with a ``pyproject.toml`` at ``into``."""
    (into / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
    for path, text in files:
        target = into / tree.name / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return into


def _with_bytecode() -> dict:
    """The environment for the CLI runs, with Python's bytecode cache on: an installed
    package has its ``.pyc`` files, and compiling the linter's own modules on every run
    (``PYTHONDONTWRITEBYTECODE``, set on some machines) would be most of a warm run."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed_cli(root: Path, jobs: int) -> Tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its workers) of one ``check`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "pytorch_perflint", "check", "--exit-zero", "--output-format", "concise", "-j", str(jobs), "."]
    subprocess.run(command, cwd=root, stdout=subprocess.DEVNULL, check=True, env=_with_bytecode())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def child_cpu(command: Sequence[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one subprocess run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_with_bytecode())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def torchfix_main(torch: Path, torchfix: str, repeat: int) -> None:
    parts = ("optim", "utils/data")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        for part in parts:
            shutil.copytree(torch / part, root / "torch" / part, ignore=shutil.ignore_patterns("__pycache__"))
        files = sorted(root.rglob("*.py"))
        lines = sum(p.read_text(encoding="utf-8").count("\n") + 1 for p in files)
        ours = [sys.executable, "-m", "pytorch_perflint", "check", "--exit-zero", "--no-cache", "-j", "1", "--select", "ALL", "--preview", "torch"]
        theirs = [torchfix, "--select", "ALL", "-j", "1", "torch"]
        child_cpu(ours, root)  # the first run writes the bytecode caches
        print(f"torch/optim + torch/utils/data: {len(files)} files, {lines} lines")
        mine = statistics.median(child_cpu(ours, root) for _ in range(repeat))
        other = statistics.median(child_cpu(theirs, root) for _ in range(repeat))
        print(f"pytorch-perflint check --no-cache -j 1 --select ALL --preview {mine:8.2f} CPU-s")
        print(f"torchfix --select ALL -j 1                                  {other:8.2f} CPU-s")
        print(f"TorchFix takes {other / mine:.1f}x the CPU time (target: 20x)")


def project_main(tree: Path, files: Sequence[Tuple[Path, str]], jobs: int, repeat: int) -> None:
    from pytorch_perflint.cache import CACHE_DIR

    lines = sum(text.count("\n") + 1 for _, text in files)
    with tempfile.TemporaryDirectory() as folder:
        root = project_copy(tree, files, Path(folder))
        copied = [(root / tree.name / p.relative_to(tree), text) for p, text in files]
        print(f"tree: {tree} ({len(files)} files, {lines} lines) as one project at {root}")

        def lint_alone() -> int:
            return sum(len(lint_source(text, path, Settings(), with_edits=False, keep_module=False).diagnostics) for path, text in copied)

        # The floor is measured again before each run and the ratios use their median: on
        # a shared machine the load moves both, and a floor from another minute misleads.
        floors = [cpu_seconds(parse_all(copied), 1)]
        alone = cpu_seconds(lint_alone, repeat)
        timed_cli(root, 1)  # untimed: the first run writes the linter's bytecode caches
        colds: dict = {1: [], jobs: []}
        paired: dict = {1: [], jobs: []}  # each cold run against the floor measured just before it
        warms = []
        for _ in range(repeat):
            for count in sorted(colds):
                floors.append(cpu_seconds(parse_all(copied), 1))
                shutil.rmtree(root / CACHE_DIR, ignore_errors=True)
                colds[count].append(timed_cli(root, count))
                paired[count].append(colds[count][-1][1] / floors[-1])
            warms.append(timed_cli(root, jobs))
            warms.append(timed_cli(root, jobs))
        floor = statistics.median(floors)
        print(f"ast.parse floor (median of {len(floors)})          {floor:8.2f} CPU-s (from {min(floors):.2f} to {max(floors):.2f})")
        print(f"default rules, each file alone, in process {alone:8.2f} CPU-s {alone / floor:6.2f}x ast.parse")
        for count, runs in sorted(colds.items()):
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"CLI -j {count}, cold (no cache)                {wall:8.2f} s wall {cpu:8.2f} CPU-s {cpu / floor:6.2f}x ast.parse (target: 5x)")
            ratios = ", ".join(f"{r:.2f}x" for r in paired[count])
            print(f"    each run against the floor just before it: {ratios} (median {statistics.median(paired[count]):.2f}x)")
        cold_wall = statistics.median(w for w, _ in colds[jobs])
        cold_cpu = statistics.median(c for _, c in colds[jobs])
        warm_wall = statistics.median(w for w, _ in warms)
        warm_cpu = statistics.median(c for _, c in warms)
        print(f"CLI -j {jobs}, warm (unchanged tree)         {warm_wall:8.2f} s wall {warm_cpu:8.2f} CPU-s")
        print(f"warm is {cold_wall / warm_wall:.0f}x faster than cold (-j {jobs}) by wall time, {cold_cpu / warm_cpu:.0f}x by CPU (target: 100x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="lint at most N files (0: all)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--project", action="store_true", help="cold and warm runs of the tree as one project")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes for --project's CLI runs")
    parser.add_argument("--torchfix", metavar="EXE", help="compare with TorchFix (the torchfix program) on torch.optim + torch.utils.data")
    args = parser.parse_args()
    if args.torchfix:
        torchfix_main(args.tree or torch_tree(), args.torchfix, args.repeat)
        return
    tree = args.tree or torch_tree()
    files = load(tree, args.limit)
    if args.project:
        project_main(tree, files, args.jobs, args.repeat)
        return
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
