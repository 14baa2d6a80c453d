"""Peak memory of one ``run(state)``, for scenarios whose rule is about memory.

A scenario opts in with ``Scenario(measure_memory=True)`` (TPF205, TPF206). The figure is
the memory one run needs on top of what was resident before it (the program's state, and
the other programs', which share the process):

- CUDA: ``torch.cuda.max_memory_allocated()`` during the run minus
  ``torch.cuda.memory_allocated()`` before it, after ``reset_peak_memory_stats``: the
  caching allocator's own count of tensor bytes, exact and in process.
- CPU: torch allocates host tensors outside Python's allocator, so ``tracemalloc`` sees
  none of them. Each program runs instead in a fresh process (``python memory.py``) that
  sets up, notes its peak resident set size (``ru_maxrss``), runs once and notes it again:
  the growth of the high-water mark is what the run added. It counts every page the run
  touched (the allocator's caches included), so it is an upper bound of the tensors' bytes
  and a run that stays under the setup's own peak reads 0.

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
CPU_MEASURE = "growth of the peak resident set size (ru_maxrss) of a fresh process over one run, after its setup"


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
    return max(0, int(figures["after_run"]) - int(figures["after_setup"]))


def _max_rss_bytes() -> int:
    import resource

    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value if sys.platform == "darwin" else value * 1024  # Linux counts KiB


def _child(path: str, size_json: str, seed: str) -> None:  # pragma: no cover - runs in a child
    import importlib.util

    import torch

    from pytorch_perflint.bench.loading import seed_everything

    spec = importlib.util.spec_from_file_location("perflint_memory_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seed_everything(int(seed))
    state = module.setup(json.loads(size_json), torch.device("cpu"))
    after_setup = _max_rss_bytes()
    seed_everything(int(seed))
    module.run(state)
    print(json.dumps({"after_setup": after_setup, "after_run": _max_rss_bytes()}))


if __name__ == "__main__":  # pragma: no cover
    sys.path.pop(0)  # this folder: its modules (timing.py...) must not shadow others
    _child(*sys.argv[1:4])
