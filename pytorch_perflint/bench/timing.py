"""Timing ``run(state)`` with torch.utils.benchmark, interleaved block by block.

Clocks: on a CPU, process CPU time by default (on a machine shared with other jobs it counts
only this process's work, not the time others held the cores); wall time for programs whose
point is waiting (DataLoader workers, I/O), since that is what the user waits. On CUDA, a
measured block is timed with CUDA events recorded around it on the current stream, after a
``torch.cuda.synchronize()`` (so no earlier work is counted) and read after another (so all
of its queued kernels are); the warm-up round uses the wall clock read after
``torch.cuda.synchronize()``. The intra-op thread count is explicit and recorded.

Warm-up: each program first runs once in the equivalence check, then (on CUDA) twice more,
synchronised (``cuda_warmup``): cuDNN's autotuner (``cudnn.benchmark``), the caching
allocator, lazy module loading and kernel compilation all happen there, outside any timed
round. Then a full ``Timer.blocked_autorange`` round that is discarded; it also fixes each
program's block size (runs per timed block).

Only APIs torch has had since 1.x are used (``torch.utils.benchmark.Timer``,
``torch.cuda.Event``, ``torch.cuda.synchronize``), so the harness runs on a device image's
torch 2.11 as on the pinned 2.13.

Measured rounds interleave *blocks*: before, after, control, before, after, control, ...
(the order reversed every round) until each program has run ``min_run_time``; a block lasts
about a tenth of that, so each round holds ten or more blocks of each program. Timing each
program for a whole second in turn, as one ``blocked_autorange`` per program would, lets
slow drift on a shared machine (another job's burst) land on one program and not the other;
interleaving short blocks puts all three under the same drift.
"""

from __future__ import annotations

import statistics
import time
import timeit
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Sequence, Tuple

from torch.utils.benchmark import Timer
from torch.utils.benchmark.utils.common import set_torch_threads

from .loading import Program
from .scenario import Clock


@dataclass(frozen=True)
class Timing:
    """One program in one round: seconds per ``run(state)``.

    ``times`` holds the per-run time of each timed block (a block runs ``number_per_run``
    calls back to back); ``median`` is their median.
    """

    median: float
    mean: float
    iqr: float
    times: Tuple[float, ...]
    number_per_run: int
    clock: str

    @property
    def runs(self) -> int:
        return len(self.times) * self.number_per_run


def clock_name(clock: Clock, device_type: str) -> str:
    if device_type == "cuda":
        return "cuda events (synchronised)"
    return "process-cpu" if clock is Clock.CPU else "wall"


def synchronised() -> float:
    """The wall clock, read once every queued CUDA kernel has finished."""
    import torch

    torch.cuda.synchronize()
    return time.perf_counter()


def timer_function(clock: Clock, device_type: str) -> Callable[[], float]:
    if device_type == "cuda":
        return synchronised
    return time.process_time if clock is Clock.CPU else timeit.default_timer


CUDA_WARMUP_RUNS = 2


def cuda_warmup(program: Program, runs: int = CUDA_WARMUP_RUNS) -> None:
    """Runs outside any timed round, so autotuning and first-call costs are not timed."""
    import torch

    with program.active():
        for _ in range(runs):
            program.run(program.state)
        torch.cuda.synchronize()


def _timing(times: Sequence[float], number: int, clock: str) -> Timing:
    values = tuple(float(t) for t in times)
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return Timing(
        median=float(statistics.median(values)),
        mean=float(statistics.fmean(values)),
        iqr=float(quartiles[2] - quartiles[0]),
        times=values,
        number_per_run=number,
        clock=clock,
    )


def autorange(program: Program, clock: Clock, device_type: str, num_threads: int, min_run_time: float) -> Timing:
    """One program with ``Timer.blocked_autorange``: the warm-up round, and the block size."""
    timer = Timer(
        stmt="run(state)",
        globals={"run": program.run, "state": program.state},
        timer=timer_function(clock, device_type),
        num_threads=num_threads,
        label=program.label,
    )
    with program.active():
        measurement = timer.blocked_autorange(min_run_time=min_run_time)
    return _timing(measurement.times, int(measurement.number_per_run), clock_name(clock, device_type))


def block_size(seconds_per_run: float, min_run_time: float, blocks: int = 10) -> int:
    """Runs per block so that a block lasts about ``min_run_time / blocks``.

    Blocks of equal *duration* (not equal run counts) keep the three programs' blocks
    equally exposed to drift even when the fix makes one of them 100x faster.
    """
    target = min_run_time / blocks
    return max(1, min(1_000_000, int(round(target / max(seconds_per_run, 1e-9)))))


def _block(program: Program, number: int, clock: Callable[[], float]) -> float:
    """Seconds per run over one block of ``number`` back-to-back runs."""
    run, state = program.run, program.state
    if clock is synchronised:
        return _cuda_block(run, state, number)
    start = clock()
    for _ in range(number):
        run(state)
    return (clock() - start) / number


def _cuda_block(run: Callable[[Any], Any], state: Any, number: int) -> float:
    """One block on CUDA, timed with events: the GPU's own clock from the first run's start to
    the last one's end (host gaps included, as the GPU waits through them)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(number):
        run(state)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000.0 / number


def interleaved(
    programs: Mapping[str, Program],
    order: Sequence[str],
    block_sizes: Mapping[str, int],
    clock: Clock,
    device_type: str,
    num_threads: int,
    min_run_time: float,
    min_blocks: int = 3,
) -> Dict[str, Timing]:
    """One measured round: blocks in ``order``, cycled until every program has run
    ``min_run_time`` seconds and at least ``min_blocks`` blocks."""
    read = timer_function(clock, device_type)
    times: Dict[str, list] = {name: [] for name in order}
    spent = {name: 0.0 for name in order}
    with set_torch_threads(num_threads):
        while any(spent[n] < min_run_time or len(times[n]) < min_blocks for n in order):
            for name in order:
                with programs[name].active():
                    per_run = _block(programs[name], block_sizes[name], read)
                times[name].append(per_run)
                spent[name] += per_run * block_sizes[name]
    label = clock_name(clock, device_type)
    return {name: _timing(times[name], block_sizes[name], label) for name in order}
