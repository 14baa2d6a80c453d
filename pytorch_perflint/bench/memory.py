"""Peak memory of one ``run(state)``, for scenarios whose rule is about memory.

A scenario opts in with ``Scenario(measure_memory=True)`` (TPF205, TPF206). The figure is
the memory one run needs on top of what was resident before it (the program's state, and
the other programs', which share the process):

- CUDA: ``torch.cuda.max_memory_allocated()`` during the run minus
  ``torch.cuda.memory_allocated()`` before it, after ``reset_peak_memory_stats``: the
  caching allocator's own count of tensor bytes, exact and in process.
- CPU: torch allocates host tensors outside Python's allocator, so ``tracemalloc`` sees
  none of them. Each program runs instead in a fresh process (``python memory.py``) that
  sets up, notes its resident set size, resets the kernel's high-water mark (``5`` into
  ``/proc/self/clear_refs``), runs once and reads the mark (``VmHWM``): the peak over the
  run minus the size before it. It counts every page the run touched (the allocator's
  caches included), so it is an upper bound of the tensors' bytes. Where the mark cannot be
  reset (not Linux), the growth of ``ru_maxrss`` over the run stands in; it reads low when
  the setup's own transient peak was higher.

Nothing here is timed; memory is measured after the timed rounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

CUDA_MEASURE = "torch.cuda.max_memory_allocated during one run, above what was allocated before it"
CPU_MEASURE = "peak resident set size of a fresh process during one run, above its size after setup (Linux VmHWM reset before the run)"


@dataclass(frozen=True)
class Peak:
    """What one run of each program added at its peak, in bytes (None: not measured)."""

    before: Optional[int]
    after: Optional[int]
    measure: str
    error: Optional[str] = None

    def as_dict(self) -> Dict[str, Any]:
        return {"before_bytes": self.before, "after_bytes": self.after, "measure": self.measure, "error": self.error}


def cuda_peak(program: Any, seed: int) -> int:
    """Bytes one run of a loaded program adds at its peak on the current CUDA device."""
    import torch

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    output = program.run_once(seed)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del output
    return max(0, int(peak - base))


def cpu_peak(path: Path, size: Dict[str, Any], seed: int, timeout: float = 300.0) -> int:
    """Bytes one run of the program file at ``path`` adds to a fresh process's peak RSS."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), str(path), json.dumps(size), str(seed)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise RuntimeError(f"the memory run failed: {tail[0]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return max(0, int(figures["peak"]) - int(figures["base"]))


def _max_rss_bytes() -> int:
    import resource

    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value if sys.platform == "darwin" else value * 1024  # Linux counts KiB


def _status_bytes(field: str) -> Optional[int]:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM) in bytes; None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak() -> bool:
    """Reset the kernel's resident high-water mark (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _child(path: str, size_json: str, seed: str) -> None:  # pragma: no cover - runs in a child
    import gc
    import importlib.util

    import torch

    from pytorch_perflint.bench.loading import seed_everything

    spec = importlib.util.spec_from_file_location("perflint_memory_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seed_everything(int(seed))
    state = module.setup(json.loads(size_json), torch.device("cpu"))
    seed_everything(int(seed))
    gc.collect()
    base = _status_bytes("VmRSS")
    if base is not None and _reset_peak():
        module.run(state)
        peak = _status_bytes("VmHWM")
    else:
        base = _max_rss_bytes()
        module.run(state)
        peak = _max_rss_bytes()
    print(json.dumps({"base": base, "peak": peak}))


if __name__ == "__main__":  # pragma: no cover
    sys.path.pop(0)  # this folder: its modules (timing.py...) must not shadow others
    _child(*sys.argv[1:4])
