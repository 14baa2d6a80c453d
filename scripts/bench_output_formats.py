"""What each output format costs over ``concise`` on one large file.

``json`` and ``sarif`` carry each fix's text edits, which the other formats do not compute;
this prints, per format, the CPU-seconds of linting the file as ``check --output-format X``
does (with edits where the format wants them) and writing the report, and the ratio to
``concise``. The budget is 1.5x. The default file is the installed torch's
``testing/_internal/distributed/distributed_test.py`` (11k lines, about 460 KB), where
JSON once took 21x concise because every fix re-rendered and re-diffed the whole file.
With ``--tree`` every ``.py`` file under the folder is linted (default: the torch package).

    python scripts/bench_output_formats.py [FILE] [--repeat R] [--select CODES] [--preview]
    python scripts/bench_output_formats.py --tree [FOLDER] [--repeat R]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import io
import statistics
import sys
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from pytorch_perflint.config import Settings
from pytorch_perflint.output import emit
from pytorch_perflint.runner import Mode, process_bytes, summarize

FORMATS = ("concise", "full", "github", "json", "sarif")
WITH_EDITS = ("json", "sarif")  # as the CLI decides


def default_file() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed: pass a FILE")
    return Path(spec.origin).parent / "testing" / "_internal" / "distributed" / "distributed_test.py"


def one_run(files: Sequence[Tuple[Path, bytes]], settings: Settings, fmt: str) -> float:
    """CPU-seconds of one `check --output-format fmt` of the files, in this process."""
    start = time.process_time()
    results = [
        process_bytes(data, path, settings, Mode.CHECK, with_edits=fmt in WITH_EDITS, write=False).result
        for path, data in files
    ]
    emit(results, fmt, io.StringIO(), summary=summarize(results, settings, Mode.CHECK), root=files[0][0].parent, color=False)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="the file (or with --tree the folder) to lint")
    parser.add_argument("--tree", action="store_true", help="lint every .py file under PATH (default: the torch package)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per format; the median is shown")
    parser.add_argument("--select", default=None, help="rule selectors, comma-separated (default: the default set)")
    parser.add_argument("--preview", action="store_true")
    args = parser.parse_args()
    if args.tree:
        root = args.path or default_file().parents[2]
        paths = sorted(root.rglob("*.py"))
    else:
        paths = [args.path or default_file()]
    files = [(path, path.read_bytes()) for path in paths]
    # distributed_test.py is a test file by its name: lint it like any file, as before the
    # test-files policy (which skips test files by default).
    settings = Settings(preview=args.preview, test_files="lint")
    if args.select:
        settings = dataclasses.replace(settings, select=tuple(args.select.split(",")))
    findings = sum(len(process_bytes(data, path, settings, Mode.CHECK, write=False).result.diagnostics) for path, data in files)
    lines = sum(data.count(b"\n") for _, data in files)
    size = sum(len(data) for _, data in files) // 1024
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files under {args.path or default_file().parents[2]}"
    print(f"{where}: {lines} lines, {size} KB, {findings} findings; one process, median of {args.repeat}")
    medians = {}
    for fmt in FORMATS:
        times: List[float] = [one_run(files, settings, fmt) for _ in range(args.repeat)]
        medians[fmt] = statistics.median(times)
    for fmt in FORMATS:
        ratio = medians[fmt] / medians["concise"]
        print(f"{fmt:8} {medians[fmt]:8.2f} CPU-s   {ratio:5.2f}x concise{'' if ratio <= 1.5 else '   OVER the 1.5x budget'}")


if __name__ == "__main__":
    main()
