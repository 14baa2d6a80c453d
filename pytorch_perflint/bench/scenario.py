"""What a scenario is, and finding them: one module per rule under ``bench.scenarios``.

A scenario's program is *source text*, not a function: the tool has to lint and fix it like
any user file. The text defines the workload with two functions the harness calls:

``setup(size, device)``
    builds the state (model, data, loader arguments) from the ``size`` mapping on the
    ``torch.device`` given; not timed.
``run(state)``
    the part that is timed; returns the result (tensor, number, or a tuple/list/dict of
    them) that must be the same before and after the fix.

Adding a rule's scenario touches only its own module: ``discover`` finds every module in
``bench.scenarios`` that defines ``SCENARIO``. Nothing here imports torch.
"""

from __future__ import annotations

import enum
import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple


class Clock(str, enum.Enum):
    """What a measurement counts on a CPU (on CUDA it is always CUDA events around synchronised blocks).

    Process CPU time ignores other tenants of a shared machine, so it is the default; wall
    time is for programs whose point is waiting (DataLoader workers, sleeping I/O), which
    process CPU time would not see.
    """

    CPU = "cpu"
    WALL = "wall"

    def __str__(self) -> str:
        return self.value


class Need(str, enum.Enum):
    """Where a rule's effect can be measured at all."""

    ANY = "any"  # CPU or GPU
    CUDA = "cuda"  # the effect exists only on a GPU: a CPU number would mean nothing
    MULTI_GPU = "multi-gpu"  # 2+ GPUs

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Scenario:
    """One rule's benchmark program and how to run it.

    ``after`` is None when the tool's own fix makes the "after" program (the rule's fix,
    unsafe included); display-only rules have no fix, so they ship a hand-written ``after``
    that follows the rule's message.
    """

    code: str
    title: str
    before: str
    # size name -> parameters passed to setup(): "quick" (CI), "cpu" (full CPU run),
    # "cuda" (realistic sizes on a GPU; falls back to "cpu").
    sizes: Mapping[str, Mapping[str, Any]]
    after: Optional[str] = None
    clock: Clock = Clock.CPU
    needs: Need = Need.ANY
    # Tolerance of the before/after equivalence check (torch.allclose semantics).
    rtol: float = 1e-5
    atol: float = 1e-6
    # Why the workload is shaped the way it is (shown in JSON and the docs).
    rationale: str = ""
    # Scales the harness's min_run_time for programs whose single run is long.
    run_time_scale: float = 1.0
    # The timed run is the flagged operation and nothing else (TPF401: one array copy): its
    # speed-up bounds what a program gains from the fix, and a program doing other work
    # gains far less. Reports mark it; `bench SCRIPT` measures what a user's script gains.
    operation_alone: bool = False
    # Peak memory is part of the rule's point (TPF205, TPF206): the harness records each
    # program's peak (CUDA: torch.cuda.max_memory_allocated; CPU: the peak resident size of
    # a fresh process running it, see bench/memory.py) and reports it beside the times.
    measure_memory: bool = False
    # A correctness scenario about data order (``bench.orders``): ``run`` returns the order
    # of two epochs; before must repeat it, after must not. Checked, never timed.
    orders: bool = False
    # Filled by discovery: the module that defined the scenario.
    module: str = field(default="", compare=False)

    @property
    def hand_written(self) -> bool:
        return self.after is not None

    def size_for(self, quick: bool, device_type: str) -> Dict[str, Any]:
        """The parameters for one run: ``quick`` wins, then the device's own sizes."""
        if quick:
            key = "quick"
        elif device_type == "cuda" and "cuda" in self.sizes:
            key = "cuda"
        else:
            key = "cpu"
        return dict(self.sizes[key])

    def skip_reason(self, device_type: str, gpu_count: int) -> Optional[str]:
        """Why this scenario's timing means nothing on this device, or None."""
        if self.needs is Need.CUDA and device_type != "cuda":
            return "needs CUDA"
        if self.needs is Need.MULTI_GPU:
            if device_type != "cuda" or gpu_count < 2:
                return "needs 2+ GPUs"
            return "needs torchrun: DDP runs one process per GPU, outside this in-process harness"
        return None


class ScenarioError(ValueError):
    """A scenario module that does not follow the contract, or an unknown code."""


@functools.lru_cache(maxsize=None)
def discover() -> Tuple[Scenario, ...]:
    """Every scenario, sorted by rule code."""
    from . import scenarios as package

    found: Dict[str, Scenario] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        scenario = getattr(module, "SCENARIO", None)
        if scenario is None:
            continue
        if not isinstance(scenario, Scenario):
            raise ScenarioError(f"{module.__name__}.SCENARIO is not a Scenario")
        for key in ("quick", "cpu"):
            if key not in scenario.sizes:
                raise ScenarioError(f"{module.__name__}: sizes lack {key!r}")
        if scenario.code in found:
            raise ScenarioError(f"two scenarios for {scenario.code}: {found[scenario.code].module} and {module.__name__}")
        found[scenario.code] = _with_module(scenario, module.__name__)
    return tuple(found[code] for code in sorted(found))


def _with_module(scenario: Scenario, name: str) -> Scenario:
    import dataclasses

    return dataclasses.replace(scenario, module=name)


def select(codes: Tuple[str, ...] = ()) -> Tuple[Scenario, ...]:
    """The scenarios for ``codes`` (all of them when empty); an unknown code is an error."""
    every = discover()
    if not codes:
        return every
    by_code = {s.code: s for s in every}
    chosen = []
    for code in codes:
        scenario = by_code.get(code.strip().upper())
        if scenario is None:
            raise ScenarioError(f"no benchmark scenario for {code!r}; known: {', '.join(by_code)}")
        if scenario not in chosen:
            chosen.append(scenario)
    return tuple(chosen)
