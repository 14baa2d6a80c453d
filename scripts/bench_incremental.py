"""Where users wait, measured in one run on one tree (issue 25's table): one file with no
cache, the file just edited checked alone in a warm project (pre-commit), the whole tree
after a comment added to a widely imported module, the language server's first
diagnostics (warm on-disk cache and cold), a tree with no project marker run twice, the
peak memory of ``check -j 1 --no-cache``, and the cold run's CPU time against
``ast.parse`` of the same files.

    python scripts/bench_incremental.py [TREE] [--file REL] [--open REL] [--work DIR]

TREE (default: the installed torch package) is copied twice under ``--work`` (default: a
temporary folder): once with an empty ``.git`` marking the project, once without any
marker. ``--file`` is the module edited (default ``torch/nn/modules/conv.py``, imported by
most of the package), ``--open`` the file the server opens (one with findings). Every
command runs as users run it, as a subprocess; wall times are single runs (the machine's
load shows in them: say what it was), CPU times and peak memory come from
``RUSAGE_CHILDREN`` of a wrapper process. The targets of issue 25 are printed beside each
ratio.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

PYTHON = sys.executable
_MEASURE = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "wall = time.perf_counter() - start\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(wall, use.ru_utime + use.ru_stime, use.ru_maxrss)\n"
)


def with_bytecode() -> Dict[str, str]:
    """The environment of every run, with Python's bytecode cache on: an installed package
    has its ``.pyc`` files, and compiling the linter's own modules on every run
    (``PYTHONDONTWRITEBYTECODE``, set on some machines) would be most of a warm run."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measured(args: Sequence[str], cwd: Path) -> Tuple[float, float, float]:
    """(wall s, CPU s, peak RSS in MB) of ``pytorch-perflint ARGS`` run in ``cwd``."""
    command = [PYTHON, "-c", _MEASURE, PYTHON, "-m", "pytorch_perflint", *args]
    out = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True, env=with_bytecode()).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]) / 1024


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed: pass a TREE")
    return Path(spec.origin).parent


def ast_cpu(tree: Path) -> float:
    """CPU seconds of ``ast.parse`` of every .py file (the floor a linter is held to)."""
    start = time.process_time()
    for path in sorted(tree.rglob("*.py")):
        try:
            ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
    return time.process_time() - start


# -- the language server, driven as an editor would ---------------------------------------


class Server:
    """``pytorch-perflint server`` with a minimal client: messages in arrival order."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "-m", "pytorch_perflint", "server"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=with_bytecode(),
        )
        self.arrived: List[Tuple[float, Dict[str, Any]]] = []
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(out.read(length))
            with self.lock:
                self.arrived.append((time.perf_counter(), message))
                self.lock.notify_all()
            if message.get("method") == "window/workDoneProgress/create":
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def send(self, message: Dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def wait(self, test, timeout: float = 600) -> Optional[Tuple[float, Dict[str, Any]]]:
        end = time.perf_counter() + timeout
        with self.lock:
            while True:
                for item in self.arrived:
                    if test(item[1]):
                        return item
                left = end - time.perf_counter()
                if left <= 0:
                    return None
                self.lock.wait(left)

    def start(self, root: Path) -> None:
        capabilities = {"window": {"workDoneProgress": True}, "textDocument": {"publishDiagnostics": {}}}
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities}})
        self.wait(lambda m: m.get("id") == 1)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def open(self, path: Path) -> float:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}},
            }
        )
        return time.perf_counter()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def server_times(root: Path, opened: Path) -> Tuple[Optional[float], Optional[float], bool]:
    """(seconds from start to the opened file's first diagnostics, to the end of the
    indexing progress (None: none shown), whether the file was answered first)."""
    started = time.perf_counter()
    server = Server(root)
    try:
        server.start(root)
        server.open(opened)
        uri = opened.as_uri()
        diagnostics = server.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        # Indexing, when the server does it, begins right after the first answer.
        began = server.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "begin", timeout=10)
        ended = server.wait(
            lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end",
            timeout=600 if began is not None else 0,
        )
    finally:
        server.close()
    first = diagnostics[0] - started if diagnostics else None
    return first, (ended[0] - started if ended else None), bool(diagnostics and (began is None or diagnostics[0] <= began[0]))


# -- the table ----------------------------------------------------------------------------


def copy_tree(source: Path, root: Path, marker: bool) -> Path:
    shutil.copytree(source, root / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    if marker:
        (root / ".git").mkdir()
    return root


def append_comment(path: Path) -> None:
    before = os.stat(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("# an edit that changes no fact\n")
    os.utime(path, ns=(before.st_atime_ns, max(before.st_mtime_ns + 1_000_000_000, time.time_ns())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", nargs="?", type=Path, default=None)
    parser.add_argument("--file", default="torch/nn/modules/conv.py", help="the module edited (relative to the copy's root)")
    parser.add_argument("--open", default="torch/testing/_internal/common_nn.py", help="the file the server opens")
    parser.add_argument("--work", type=Path, default=None, help="where the copies go (default: a temporary folder)")
    options = parser.parse_args()
    tree = (options.tree or torch_tree()).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-incremental-", dir=options.work))
    try:
        project = copy_tree(tree, work / "project", marker=True)
        loose = copy_tree(tree, work / "loose", marker=False)
        edited, opened = project / options.file, project / options.open
        rows: List[Tuple[str, str]] = []
        floor = ast_cpu(project)
        rows.append(("ast.parse of every file (CPU)", f"{floor:.1f} s"))
        _, cpu, rss = measured(["check", ".", "-j", "1", "--no-cache", "--exit-zero", "-q"], project)
        rows.append(("peak memory, check -j 1 --no-cache (target < 1024 MB)", f"{rss:.0f} MB"))
        wall, cpu, _ = measured(["check", ".", "--exit-zero", "-q"], project)
        rows.append(("whole tree, cold (wall; CPU vs ast.parse, target <= 5x)", f"{wall:.1f} s; {cpu:.1f} s CPU = {cpu / floor:.1f}x"))
        warm, _, _ = measured(["check", ".", "--exit-zero", "-q"], project)
        rows.append(("whole tree, warm", f"{warm:.2f} s"))
        alone, _, _ = measured(["check", options.file, "--no-cache", "--exit-zero", "-q"], project)
        rows.append(("one file, no cache", f"{alone:.2f} s"))
        unedited, _, _ = measured(["check", options.file, "--exit-zero", "-q"], project)
        rows.append(("one unedited file, warm project", f"{unedited:.2f} s"))
        append_comment(edited)
        precommit, _, _ = measured(["check", options.file, "--exit-zero", "-q"], project)
        rows.append(("the file just edited, alone, warm project (target <= 1.5x no cache)", f"{precommit:.2f} s = {precommit / alone:.2f}x"))
        append_comment(edited)
        after, _, _ = measured(["check", ".", "--exit-zero", "-q"], project)
        rows.append(("whole tree after a comment in that file (target <= 3x warm)", f"{after:.2f} s = {after / warm:.2f}x"))
        first, _, _ = server_times(project, opened)
        rows.append(("server, warm on-disk cache: first diagnostics (target <= 2 s)", f"{first:.2f} s" if first else "none"))
        shutil.rmtree(project / ".pytorch_perflint_cache")
        first, indexed, first_answered = server_times(project, opened)
        cold = f"{first:.2f} s" if first else "none"
        done = f"{indexed:.1f} s" if indexed else "no progress shown"
        rows.append(("server, no cache: first diagnostics; indexing ended", f"{cold}; {done}; file answered first: {first_answered}"))
        first_run, _, _ = measured(["check", ".", "--exit-zero", "-q"], loose)
        second_run, _, _ = measured(["check", ".", "--exit-zero", "-q"], loose)
        rows.append(("no marker: first run, second run (target >= 50x)", f"{first_run:.1f} s, {second_run:.2f} s = {first_run / second_run:.0f}x"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    modules = sum(1 for _ in tree.rglob("*.py"))
    print(f"{tree} ({modules} modules), Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
