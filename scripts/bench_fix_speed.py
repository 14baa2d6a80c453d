"""How long `check --fix` takes on one large file, against `check` on the same file.

Builds a file of about 50,000 lines from the installed torch package's own sources
(``torch/nn``, ``torch/optim``, ``torch/utils/data``... concatenated in path order, each
file's ``from __future__`` imports dropped since they must come first) with a small
training function full of anti-patterns inserted after every few files, so that the fixer
has work all through the file. Then runs the real CLI on a copy of it, in a subprocess each
time, and prints wall seconds, peak memory (max RSS) and the ratio:

    python scripts/bench_fix_speed.py [--lines N] [--repeat R] [--keep DIR]

``check`` is ``pytorch-perflint check --no-cache FILE``; ``fix`` is ``pytorch-perflint
check --no-cache --fix --unsafe-fixes FILE`` on a fresh copy. The fixed file must parse,
and a second ``--fix`` run must change nothing (idempotent); the script says if not.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

PACKAGES = ("nn", "optim", "utils/data", "distributions", "ao/nn", "autograd", "fx", "_dynamo")
FUTURE = re.compile(r"^from __future__ import [^\n]*\n", re.MULTILINE)
# Every rule with a fix fires here at least once (safe and unsafe), and some fixes reveal
# further findings (pinned memory makes the `.cuda()` copies TPF104 findings).
SNIPPET = '''

def _perflint_bench_train_{index}(model, dataset, optimizer, batches):
    import numpy as np
    loader = torch.utils.data.DataLoader(dataset, batch_size=32)
    model = model.cuda()
    torch.autograd.set_detect_anomaly(True)
    for epoch in range(3):
        for x, y in loader:
            x = x.cuda()
            y = y.cuda()
            optimizer.zero_grad(set_to_none=False)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    mask = torch.ones(4, 4).cuda()
    table = torch.tensor(np.zeros((3, 3)))
    return mask, table
'''


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("needs torch installed (its sources are the test input)")
    return Path(spec.origin).parent


def build(lines: int) -> str:
    """About ``lines`` lines of real code with the snippet every ~1000 lines."""
    root = torch_root()
    parts: List[str] = ["import torch\n"]
    count, since_snippet, index = 1, 0, 0
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            try:
                text = FUTURE.sub("", path.read_text(encoding="utf-8"))
                ast.parse(text)
            except (UnicodeDecodeError, SyntaxError, ValueError):
                continue
            text = text if text.endswith("\n") else text + "\n"
            parts.append(text)
            count += text.count("\n")
            since_snippet += text.count("\n")
            if since_snippet >= 1000:
                parts.append(SNIPPET.format(index=index))
                index += 1
                count += SNIPPET.count("\n")
                since_snippet = 0
            if count >= lines:
                source = "".join(parts)
                ast.parse(source)
                return source
    sys.exit(f"only {count} lines found under {root}")


def run(args: List[str]) -> Tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds and peak RSS (MB) of one CLI run in a fresh process: the larger of the
    CLI process and its worker processes (files are linted in workers)."""
    command = [sys.executable, "-c", "import resource, sys\nfrom pytorch_perflint.cli import main\ntry:\n    main(sys.argv[1:])\nfinally:\n    print(f'maxrss {max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))}', file=sys.stderr)", *args]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = re.search(r"maxrss (\d+)", proc.stderr)
    return wall, int(rss.group(1)) / 1024 if rss else float("nan"), proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the generated file (and its fixed copy) in this folder")
    options = parser.parse_args()

    source = build(options.lines)
    folder = Path(tempfile.mkdtemp(prefix="perflint-fix-speed-"))
    try:
        original = folder / "big.py"
        original.write_text(source, encoding="utf-8")
        print(f"file: {source.count(chr(10)):,} lines, {len(source):,} characters, {source.count('_perflint_bench_train_')} inserted training functions")
        checks, fixes = [], []
        for _ in range(options.repeat):
            wall, rss, proc = run(["check", "--no-cache", "--output-format", "concise", str(original)])
            checks.append((wall, rss))
            findings = len([line for line in proc.stdout.splitlines() if ": TPF" in line])
            target = folder / "fixed.py"
            shutil.copyfile(original, target)
            wall, rss, proc = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", str(target)])
            fixes.append((wall, rss))
            summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
        print(f"check: {findings} findings")
        print(f"fix:   {summary}")
        check_wall = statistics.median(w for w, _ in checks)
        fix_wall = statistics.median(w for w, _ in fixes)
        print(f"check       {check_wall:7.1f} s wall  {max(r for _, r in checks):7.0f} MB peak")
        print(f"fix+unsafe  {fix_wall:7.1f} s wall  {max(r for _, r in fixes):7.0f} MB peak")
        print(f"ratio fix/check: {fix_wall / check_wall:.2f}x")
        fixed = target.read_text(encoding="utf-8")
        ast.parse(fixed)
        again = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", str(target)])[2]
        same = target.read_text(encoding="utf-8") == fixed
        print(f"fixed file parses; a second --fix {'changes nothing' if same else 'CHANGED THE FILE (not idempotent)'}: {again.stdout.strip().splitlines()[-1] if again.stdout.strip() else ''}")
        if options.keep:
            options.keep.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, options.keep / "big.py")
            shutil.copyfile(target, options.keep / "big.fixed.py")
        return 0 if same else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
