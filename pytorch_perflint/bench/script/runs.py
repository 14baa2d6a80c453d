"""One run of a user's script: a fresh process in its copy, and what it measured.

Each run starts ``bootstrap.py`` with the interpreter running bench, in a new session
(its own process group), with stdin closed: a script that asks for input fails at once
instead of hanging. Its output goes to files, so a chatty script cannot fill a pipe. Every
Python process of the run writes through ``guard.py`` (copy on write for the copy's links).
When the run ends (done, failed, past ``--timeout``, or Ctrl-C in bench), its process group
and every other process it started, ``os.setsid()`` daemons included, are killed
(``reaper``), so DataLoader workers and other children never outlive it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from . import guard, reaper
from ..strict import CUBLAS_CONFIG
from .copies import Copy

BOOTSTRAP = Path(__file__).resolve().with_name("bootstrap.py")
STDERR_TAIL_LINES = 15


@dataclass(frozen=True)
class Request:
    """How every run is made: the same for all programs."""

    steps: int
    warmup: int
    unit: str  # "step" or "forward"
    timeout: float  # seconds per run
    args: Tuple[str, ...] = ()
    argv0: str = ""  # the script as the user named it (sys.argv[0])
    seed: int = 0
    threads: Optional[int] = None  # intra-op threads; None: the script's own choice


@dataclass(frozen=True)
class Run:
    """One program's run in one round."""

    program: str
    round: int  # 0 is the warm-up round; -1 the profiled run
    status: str  # done, ended, exited, crashed (from the bootstrap), timeout, no-output
    returncode: Optional[int]
    wall_s: float
    step_times: Tuple[float, ...] = ()
    clock: str = "wall"
    steps_done: int = 0
    fingerprint: Optional[Dict[str, Any]] = None
    modules: Tuple[str, ...] = ()
    torch: Optional[Dict[str, Any]] = None
    profile: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "done" and bool(self.step_times)

    @property
    def step_time(self) -> Optional[float]:
        """The run's figure: the timed steps' total time over their number. Not the median:
        a pipelined loader delivers batches in bursts (four workers, four batches at once),
        so most steps are instant and one waits; only the mean is the throughput."""
        return self.mean

    @property
    def median(self) -> Optional[float]:
        return statistics.median(self.step_times) if self.step_times else None

    @property
    def mean(self) -> Optional[float]:
        return statistics.fmean(self.step_times) if self.step_times else None

    @property
    def cuda_used(self) -> bool:
        return bool(self.torch and self.torch.get("cuda_used"))


def start(copy: Copy, program: str, index: int, request: Request, folder: Path, profile: bool = False, strict: bool = False) -> Run:
    """Run ``copy``'s script once; never raises for a failing script (KeyboardInterrupt
    passes through, after the process group is killed). ``strict``: a check run, with
    deterministic algorithms and full float32 (``bootstrap.strict_settings``) and
    deterministic cuBLAS (``CUBLAS_WORKSPACE_CONFIG``, unless set): its fingerprint is
    compared, its time is not."""
    stem = folder / f"{program}-{'profile' if index < 0 else index}"
    out = Path(f"{stem}.result.json")
    config = {
        "script": str(copy.script),
        "argv0": request.argv0 or str(copy.project.script_rel),
        "args": list(request.args),
        "root": str(copy.root),
        "out": str(out),
        "unit": request.unit,
        "warmup": request.warmup,
        "steps": request.steps,
        "seed": request.seed,
        "profile_out": profile,
        "threads": request.threads,
        "strict": strict,
    }
    config_path = Path(f"{stem}.config.json")
    config_path.write_text(json.dumps(config), encoding="utf-8")
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", str(request.seed))
    # Modules imported from linked (not copied) folders must not get __pycache__ written
    # into the user's tree.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if strict:
        env.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_CONFIG)
    if request.threads:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(request.threads)
    shim = guard.write_shim(str(folder / "guard"))
    env["PYTHONPATH"] = os.pathsep.join([shim] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PERFLINT_BENCH_COPY_ROOT"] = str(copy.root)
    stdout_path, stderr_path = Path(f"{stem}.stdout"), Path(f"{stem}.stderr")
    subreaper = reaper.set_subreaper(True)
    keep = reaper.snapshot()
    started = time.perf_counter()
    timed_out = False
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(BOOTSTRAP), str(config_path)],
            cwd=str(copy.workdir),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=env,
            start_new_session=True,
        )
        try:
            process.wait(timeout=request.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            reaper.end_run(process, keep)
            if subreaper:
                reaper.set_subreaper(False)
    wall = time.perf_counter() - started
    tail = _tail(stderr_path)
    data = _read(out)
    if data is None:
        status = "timeout" if timed_out else "no-output"
        return Run(program, index, status, process.returncode, wall, stderr_tail=tail)
    return Run(
        program,
        index,
        str(data.get("status")),
        process.returncode,
        wall,
        step_times=tuple(float(t) for t in data.get("step_times_s") or ()),
        clock=str(data.get("clock") or "wall"),
        steps_done=int(data.get("steps_done") or 0),
        fingerprint=data.get("fingerprint"),
        modules=tuple(data.get("modules") or ()),
        torch=data.get("torch"),
        profile=data.get("profile"),
        error=data.get("error") or data.get("fingerprint_error"),
        stderr_tail=tail,
    )


def _read(path: Path) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_bytes()[-20000:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if not line.startswith("USDT:")]  # profiler chatter
    return "\n".join(kept[-lines:])


def describe_failure(run: Run, request: Request) -> str:
    """Why a run did not deliver its steps, in words, with the last lines of its stderr."""
    unit = "optimizer step" if request.unit == "step" else "forward call of a torch.nn.Module"
    wanted = request.warmup + request.steps
    if run.status == "timeout":
        head = f"the script ran past --timeout {request.timeout:g} s"
    elif run.status == "crashed":
        head = f"the script crashed: {run.error}"
    elif run.status == "exited":
        head = f"the script exited early ({run.error}) after {run.steps_done} {unit}(s)"
    elif run.status == "ended" and run.steps_done == 0:
        head = f"the script finished without a single {unit}"
        if request.unit == "step":
            head += " (an evaluation or inference script? count forward calls with --unit forward)"
    elif run.status == "ended":
        head = (
            f"the script finished after {run.steps_done} {unit}s, fewer than --warmup {request.warmup} "
            f"+ --steps {request.steps} = {wanted}: ask for fewer steps, or give the script "
            f"arguments for a longer run after `--`"
        )
    elif run.status == "done":
        head = "the run measured no steps"
    else:
        head = f"the script's process ended without its figures (exit status {run.returncode})"
    hint = _hint(run.stderr_tail)
    parts = [head + (f"; {hint}" if hint else "")]
    if run.stderr_tail.strip():
        parts.append("last lines of its stderr:\n" + "\n".join("  " + line for line in run.stderr_tail.splitlines()))
    return "\n".join(parts)


def _hint(stderr: str) -> str:
    if "EOFError" in stderr:
        return "it read from standard input, which bench closes: give it its answers as arguments after `--`"
    if "FileNotFoundError" in stderr or "No such file or directory" in stderr:
        return (
            "a file it needs is missing; relative paths resolve from the folder bench was started in, "
            "through links to your project's non-code files, so check the path exists there"
        )
    if "ModuleNotFoundError" in stderr:
        return f"a module it imports is not installed for {sys.executable}"
    return ""
