"""Running scenarios: check, load, compare, time in interleaved rounds, decide.

For each scenario and device:

1. build the programs (``programs.build``): the rule fires on "before", the tool's fix makes
   "after", the rule is silent on it;
2. load three programs in fresh modules: before, after, and a control (a second copy of
   before, for the A/A noise estimate); set each up from the same seed;
3. run each once from the same seed and compare the results (before vs after must agree;
   before vs control shows the program is deterministic at all), with deterministic
   algorithms and full float32 unless the program chose otherwise (``bench.strict``: on a
   GPU, cuDNN's nondeterministic algorithms and TF32 convolutions otherwise blur the check).
   These runs double as warm-up;
4. unless the device cannot show the effect, time ``rounds + 1`` rounds of before, after and
   control, the order reversed every round, the first round discarded as warm-up;
5. decide the verdict from the measured rounds (``verdicts.judge``): the speed-up is
   median(before) / median(after) of the rounds' figures, as the table's columns show.

A failure in one scenario is recorded on its result and the run goes on.
"""

from __future__ import annotations

import gc
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .machine import load_average
from .programs import Programs, build
from .scenario import Scenario
from .verdicts import Verdict, judge, skipped, unjudged

# The order of the first round; every other round runs it reversed. The control sits on the
# far side of "after" from "before", so the A/A pair is never closer in time than the A/B
# pair: the noise estimate errs on the wide side.
ORDER = ("before", "after", "control")


@dataclass(frozen=True)
class Options:
    """How hard to measure. ``quick`` is for CI: small sizes, short timings, few rounds."""

    quick: bool = False
    rounds: Optional[int] = None  # measured rounds (a warm-up round comes on top)
    num_threads: int = 1
    min_run_time: Optional[float] = None  # seconds per measurement
    seed: int = 0
    # Only check (fire/fix/equivalence): no timing at all. The tests use it.
    check_only: bool = False

    @property
    def measured_rounds(self) -> int:
        return self.rounds if self.rounds is not None else (3 if self.quick else 5)

    @property
    def base_run_time(self) -> float:
        return self.min_run_time if self.min_run_time is not None else (0.05 if self.quick else 0.4)


@dataclass(frozen=True)
class RoundResult:
    """One round: the three programs' timings, in the order they ran, and the machine's load."""

    index: int
    warmup: bool
    order: Tuple[str, ...]
    timings: Dict[str, Any]  # name -> Timing
    load: Optional[Tuple[float, float, float]]

    @property
    def ratio(self) -> float:
        """before / after: above 1 means the fix is faster."""
        return self.timings["before"].median / self.timings["after"].median

    @property
    def aa_ratio(self) -> float:
        """before / control: two copies of the same program; its spread is the noise."""
        return self.timings["before"].median / self.timings["control"].median


@dataclass(frozen=True)
class ScenarioResult:
    """Everything known about one rule on one device."""

    scenario: Scenario
    rule_name: str
    device: str
    size: Dict[str, Any]
    programs: Programs
    verdict: Verdict
    equivalence: Any = None  # Equivalence of before vs after, when the programs ran
    determinism: Any = None  # Equivalence of before vs control (same program twice)
    result_shape: Tuple[str, ...] = ()
    rounds: Tuple[RoundResult, ...] = ()
    clock: str = ""
    num_threads: int = 1
    min_run_time: float = 0.0
    load_before: Optional[Tuple[float, float, float]] = None
    load_after: Optional[Tuple[float, float, float]] = None
    error: Optional[str] = None
    warnings: Tuple[str, ...] = ()  # what the programs warned about (once each)
    seconds: float = 0.0
    memory: Any = None  # memory.Peak, for scenarios with measure_memory
    orders: Any = None  # bench.orders.Orders, for an orders scenario

    @property
    def code(self) -> str:
        return self.scenario.code

    @property
    def measured(self) -> Tuple[RoundResult, ...]:
        return tuple(r for r in self.rounds if not r.warmup)

    @property
    def problems(self) -> Tuple[str, ...]:
        """Failed checks: the rule, the fix, equivalence, or a crash. Not speed."""
        found = list(self.programs.check.problems)
        if self.equivalence is not None and not self.equivalence.ok:
            found.append(f"before and after differ: {self.equivalence.detail}")
        if self.determinism is not None and not self.determinism.ok:
            found.append(f"the program is not deterministic: {self.determinism.detail}")
        if self.orders is not None and not self.orders.ok:
            found.append(f"epoch orders: {self.orders.describe()}")
        if self.error:
            found.append(self.error)
        return tuple(found)

    @property
    def ok(self) -> bool:
        return not self.problems


class DeviceError(ValueError):
    """A device that was asked for and is not there."""


def resolve_devices(requested: Sequence[str]) -> List[str]:
    """``auto`` is CUDA when a GPU is present, else the CPU; ``cuda`` without one is an error."""
    import torch

    devices: List[str] = []
    for name in requested or ("auto",):
        name = name.lower()
        if name == "auto":
            name = "cuda" if torch.cuda.is_available() else "cpu"
        if name == "cuda" and not torch.cuda.is_available():
            raise DeviceError("--device cuda: no CUDA device is available to this torch build")
        if name not in ("cpu", "cuda"):
            raise DeviceError(f"unknown device {name!r}")
        if name not in devices:
            devices.append(name)
    return devices


def steps_for(options: Options) -> int:
    """Progress units for one scenario on one device: checks, then each round."""
    return 1 + (0 if options.check_only else options.measured_rounds + 1)


Progress = Callable[[int, str], None]
Finished = Callable[[ScenarioResult], None]


def run_all(
    scenarios: Sequence[Scenario],
    devices: Sequence[str],
    options: Options,
    progress: Optional[Progress] = None,
    finished: Optional[Finished] = None,
) -> List[ScenarioResult]:
    """Every scenario on every device, in that order; ``finished`` hears of each result as
    it comes (a log's line per scenario)."""
    import torch

    from .loading import Workspace

    report = progress or (lambda advance, text: None)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(options.num_threads)
    results: List[ScenarioResult] = []
    try:
        with Workspace() as workspace:
            for scenario in scenarios:
                programs = build(scenario)
                for device in devices:
                    results.append(run_one(programs, device, options, workspace, report))
                    if finished is not None:
                        finished(results[-1])
                    _release()  # the finished scenario's programs and tensors
    finally:
        torch.set_num_threads(previous_threads)
    return results


def run_one(programs: Programs, device: str, options: Options, workspace: Any, report: Progress) -> ScenarioResult:
    """One scenario on one device; never raises for a failing program."""
    import time

    import torch

    from .equivalence import compare, shape_of
    from .timing import autorange, block_size, clock_name, cuda_warmup, interleaved

    scenario = programs.scenario
    started = time.perf_counter()
    torch_device = torch.device(device)
    gpu_count = torch.cuda.device_count() if device == "cuda" else 0
    device_skip = scenario.skip_reason(device, gpu_count)
    # A scenario this device cannot time is only checked: its quick sizes are enough.
    size = scenario.size_for(options.quick or device_skip is not None, device)
    rule = _rule_name(scenario.code)
    min_run_time = options.base_run_time * scenario.run_time_scale
    base = dict(
        scenario=scenario,
        rule_name=rule,
        device=device,
        size=size,
        programs=programs,
        clock=clock_name(scenario.clock, device),
        num_threads=options.num_threads,
        min_run_time=min_run_time,
        load_before=load_average(),
    )
    remaining = steps_for(options)
    loaded: Dict[str, Any] = {}

    def finish(verdict: Verdict, **values: Any) -> ScenarioResult:
        report(remaining, f"{scenario.code} {device}: {verdict.kind}")
        warned = tuple(dict.fromkeys(w for program in loaded.values() for w in program.warnings))
        return ScenarioResult(
            verdict=verdict,
            load_after=load_average(),
            warnings=warned,
            seconds=time.perf_counter() - started,
            **{**base, **values},
        )

    check = programs.check
    report(0, f"{scenario.code} {device}: checking")
    stem = scenario.code.lower()
    names = ("before", "after", "control")
    if programs.after == programs.before:
        # Nothing to compare: still run "before" once, so a broken scenario shows.
        reason = f"check failed: {check.problems[0]}" if check.problems else "no after program"
        names = ("before",)
    try:
        for name in names:
            source = programs.after if name == "after" else programs.before
            loaded[name] = workspace.load(source, f"{stem}_{name}", f"{scenario.code} {name}")
        for program in loaded.values():
            program.setup(size, torch_device, options.seed)
        # The check's runs: deterministic algorithms, full float32 (bench/strict.py), so
        # before, after and control differ only by what the fix changes; timing below keeps
        # the defaults.
        outputs = {name: program.run_once(options.seed, strict=True) for name, program in loaded.items()}
    except Exception as error:  # noqa: BLE001 - a broken program is a result, not a crash
        return finish(skipped("error"), error=_describe(error))
    if programs.after == programs.before:
        return finish(skipped(reason), result_shape=shape_of(outputs["before"]))
    if scenario.orders:
        verdict, values = _orders_result(outputs, scenario)
        return finish(verdict, **values)
    equivalence = compare(outputs["before"], outputs["after"], scenario.rtol, scenario.atol)
    determinism = compare(outputs["before"], outputs["control"], scenario.rtol, scenario.atol)
    values: Dict[str, Any] = dict(equivalence=equivalence, determinism=determinism, result_shape=shape_of(outputs["before"]))
    del outputs
    report(1, f"{scenario.code} {device}: checked")
    remaining -= 1

    reason = device_skip
    if reason is None and not check.ok:
        reason = f"check failed: {check.problems[0]}"
    if reason is None and not equivalence.ok:
        reason = "check failed: before and after differ"
    if reason is None and not determinism.ok:
        reason = "check failed: the program is not deterministic"
    if reason is None and options.check_only:
        reason = "check only"
    if reason is not None:
        return finish(skipped(reason), **values)

    rounds: List[RoundResult] = []
    try:
        if device == "cuda":  # autotuning and first calls, outside every timed round
            for name in ORDER:
                cuda_warmup(loaded[name])
        # Warm-up round: blocked_autorange per program, discarded; it sets the block sizes.
        warm = {name: autorange(loaded[name], scenario.clock, device, options.num_threads, min_run_time) for name in ORDER}
        rounds.append(RoundResult(0, True, ORDER, warm, load_average()))
        sizes = {name: block_size(timing.median, min_run_time) for name, timing in warm.items()}
        sizes["control"] = sizes["before"]  # the same program: the A/A pair gets the same protocol
        report(1, f"{scenario.code} {device}: warm-up")
        remaining -= 1
        for index in range(1, options.measured_rounds + 1):
            order = ORDER if index % 2 == 0 else tuple(reversed(ORDER))
            timings = interleaved(loaded, order, sizes, scenario.clock, device, options.num_threads, min_run_time)
            rounds.append(RoundResult(index, False, order, timings, load_average()))
            report(1, f"{scenario.code} {device}: round {index}/{options.measured_rounds}")
            remaining -= 1
    except Exception as error:  # noqa: BLE001
        return finish(skipped("error"), error=_describe(error), rounds=tuple(rounds), **values)
    memory = _peak_memory(loaded, device, size, options.seed) if scenario.measure_memory else None
    measured = [r for r in rounds if not r.warmup]
    verdict = judge(*([r.timings[name].median for r in measured] for name in ("before", "after", "control")))
    if options.quick:
        verdict = unjudged(verdict)
    return finish(verdict, rounds=tuple(rounds), memory=memory, **values)


def _peak_memory(loaded: Dict[str, Any], device: str, size: Dict[str, Any], seed: int) -> Any:
    """Peak memory of one run of before and of after (``memory``), after the timed rounds."""
    from pathlib import Path

    from . import memory

    try:
        if device == "cuda":
            figures = [memory.cuda_peak(loaded[name], seed) for name in ("before", "after")]
            return memory.Peak(figures[0], figures[1], memory.CUDA_MEASURE)
        figures = [memory.cpu_peak(Path(loaded[name].module.__file__), size, seed) for name in ("before", "after")]
        return memory.Peak(figures[0], figures[1], memory.CPU_MEASURE)
    except Exception as error:  # noqa: BLE001 - a failed measurement is reported, not fatal
        return memory.Peak(None, None, memory.CUDA_MEASURE if device == "cuda" else memory.CPU_MEASURE, _describe(error))


def _orders_result(outputs: Dict[str, Any], scenario: Scenario) -> Tuple[Verdict, Dict[str, Any]]:
    """An orders scenario: the epoch orders decide, and nothing is timed (``bench.orders``)."""
    from .equivalence import compare, shape_of
    from .orders import REASON, check_orders

    orders = check_orders(outputs["before"], outputs["after"])
    determinism = compare(outputs["before"], outputs["control"], scenario.rtol, scenario.atol)
    return skipped(REASON), dict(orders=orders, determinism=determinism, result_shape=shape_of(outputs["before"]))


def _rule_name(code: str) -> str:
    from .. import registry

    rule = registry.rule_by_code(code)
    return rule.name if rule is not None else ""


def _describe(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = next((f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(frames) if "perflint-bench-" in f.filename), "")
    text = f"{type(error).__name__}: {error}".strip()
    return f"{text} (at {where})" if where else text


def _release() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass
