"""``bench SCRIPT`` from start to end: copies, fixes, interleaved runs, fingerprints, verdicts.

1. Mirror the project twice: "before" and an A/A "control" (``script_copies``).
2. Run "before" once (the warm-up round starts): it must reach ``warmup + steps`` steps, or
   bench stops with the script's own error (``ScriptFailed``, exit 2). Its run says which
   of the project's files the script ran.
3. Lint those files in the copy; mirror again for "after" and apply the fixes ``check --fix``
   would (``script_fixes``); with more than one rule fixed (or ``--per-rule``), one more
   copy per rule with only that rule's fixes. Rules whose effect needs CUDA are not run
   per rule on a machine without it ("needs CUDA", as the scenario harness says).
4. Finish the warm-up round (after, per-rule copies, control): a fixed copy that fails is a
   broken fix, reported, not timed. Then ``rounds`` measured rounds, the order reversed
   every round (``harness.ORDER``'s idea: before, the fixed copies, control).
5. Fingerprints: before against control (is the script deterministic at all?) and against
   every fixed copy, in the warm-up round, whose runs are check runs: deterministic
   algorithms and full float32 (``bootstrap.strict_settings``; on a GPU cuDNN's default
   algorithms and TF32 make two runs of one script differ). The timed rounds keep the
   script's own settings. Verdicts: ``verdicts.judge`` on the runs' step times
   (each run's mean: its throughput), paired by round: the speed-up is the ratio of the
   medians over the rounds where before, the fixed copy and the control all ran, with the
   per-round ratios as its range and the A/A ratios as the noise.
6. With ``--profile``, one more "before" run under torch.profiler.

The temporary folder is removed on every way out, Ctrl-C included.
"""

from __future__ import annotations

import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ...config import Settings
from . import copies as script_copies, fixes as script_fixes, fingerprints as script_fingerprints
from .copies import Copy, Project
from .fixes import Finding, FixResult
from .fingerprints import Agreement
from .runs import Request, Run, describe_failure, start
from ..verdicts import Verdict, judge, skipped

TEMP_PREFIX = "perflint-bench-script-"
# The round whose runs are checked (fingerprints compared), made with deterministic
# algorithms and full float32: the warm-up round, never timed.
CHECK_ROUND = 0


class ScriptFailed(Exception):
    """The user's script does not run as it is: bad input, exit 2."""


class Interrupted(Exception):
    """Ctrl-C or a termination signal: the runs were stopped and the copies removed."""


@dataclass(frozen=True)
class Options:
    rounds: int = 5  # measured rounds (the warm-up round comes on top)
    per_rule: Optional[bool] = None  # None: when more than one rule was fixed
    profile: bool = False
    max_copy_mb: float = script_copies.DEFAULT_MAX_COPY_MB


@dataclass(frozen=True)
class Program:
    """A copy to run: "before", "control", "after" (all fixes) or one rule's fixes."""

    name: str
    label: str
    fix: Optional[FixResult] = None
    skip: Optional[str] = None  # why it is not run ("needs CUDA")
    unsafe_codes: Tuple[str, ...] = ()  # the unsafe fixes it holds


@dataclass(frozen=True)
class Outcome:
    """A fixed program against "before": speed, sameness, or why it was not measured."""

    program: Program
    verdict: Verdict
    ratios: Tuple[float, ...] = ()
    agreement: Optional[Agreement] = None
    failure: Optional[str] = None  # the fixed copy did not run

    @property
    def problems(self) -> Tuple[str, ...]:
        found = []
        if self.failure:
            found.append(f"{self.program.label}: the fixed copy failed: {self.failure}")
        if self.agreement is not None and not self.agreement.ok:
            found.append(f"{self.program.label}: before and after differ: {self.agreement.detail}")
        if self.program.fix is not None:
            found.extend(f"{self.program.label}: {e}" for e in self.program.fix.errors)
        return tuple(found)


@dataclass(frozen=True)
class Session:
    """Everything one ``bench SCRIPT`` measured."""

    project: Project
    request: Request
    options: Options
    findings: Tuple[Finding, ...]
    held_back: Tuple[str, ...]  # rules with unsafe fixes left out (no --unsafe-fixes)
    outcomes: Tuple[Outcome, ...]
    runs: Tuple[Run, ...]
    determinism: Optional[Agreement]
    profile: Optional[Run] = None
    link_changes: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()
    lint_errors: Tuple[str, ...] = ()
    copies: Dict[str, str] = field(default_factory=dict)  # program -> its temporary root
    load: Tuple[Optional[Tuple[float, float, float]], ...] = ()  # load averages at start and end
    # Why the measured rounds ended early (a signal: a device check's `timeout`, Ctrl-C);
    # the rounds that finished are kept and judged.
    stopped: Optional[str] = None

    @property
    def problems(self) -> Tuple[str, ...]:
        found = [p for outcome in self.outcomes for p in outcome.problems]
        if self.determinism is not None and self.determinism.same is False:
            found.append(f"the script is not deterministic: two runs of the same copy differ ({self.determinism.detail})")
        found.extend(self.lint_errors)
        if self.stopped:
            found.append(f"the run was {self.stopped}: the verdicts use the rounds that finished")
        return tuple(found)

    @property
    def ok(self) -> bool:
        return not self.problems

    def first_run(self, program: str) -> Optional[Run]:
        return next((r for r in self.runs if r.program == program), None)


Progress = Callable[[str, int], None]  # (what is running, runs still planned)


def run(
    project: Project,
    settings: Settings,
    request: Request,
    options: Options,
    progress: Optional[Progress] = None,
    temp_parent: Optional[str] = None,
) -> Session:
    """Measure the fixes on the project's script. Raises ScriptFailed, Interrupted,
    script_copies.CopyError; the temporary folder is gone whichever way it returns."""
    report = progress or (lambda text, planned: None)
    folder = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=temp_parent))
    received: List[str] = []
    previous = _trap_termination(received)
    try:
        return _measure(project, settings, request, options, folder, report, received)
    except KeyboardInterrupt:
        raise Interrupted("interrupted: the runs were stopped and the temporary copies removed") from None
    finally:
        script_copies.remove(folder)
        _restore(previous)


def _trap_termination(received: List[str]):
    """SIGTERM and SIGHUP end bench the way Ctrl-C does: runs killed, copies removed. The
    signal's name goes into ``received``."""

    def handler(signum, frame):
        received.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is None:
            continue
        try:
            previous[number] = signal.signal(number, handler)
        except ValueError:  # not the main thread
            pass
    return previous


def _restore(previous) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)


def _measure(
    project: Project, settings: Settings, request: Request, options: Options, folder: Path, report: Progress, received: Sequence[str] = ()
) -> Session:
    runs_folder = folder / "runs"
    runs_folder.mkdir()
    skip = [folder]

    def mirror(name: str) -> Copy:
        return script_copies.make_copy(project, folder / name, name, skip)

    from ..machine import load_average

    load_start = load_average()
    copies: Dict[str, Copy] = {"before": mirror("before"), "control": mirror("control")}
    watch = script_copies.LinkWatch(script_copies.linked_entries(copies["before"]))
    runs: List[Run] = []
    per_round = 3

    def run_one(name: str, index: int, profile: bool = False) -> Run:
        report(f"{name}, round {index}" if index >= 0 else f"{name}, profiled", planned())
        # The warm-up round is the check round: deterministic, full float32 (strict); its
        # fingerprints are compared, and the timed rounds keep the script's own settings.
        outcome = start(copies[name], name, index, request, runs_folder, profile, strict=index == CHECK_ROUND)
        runs.append(outcome)
        return outcome

    def planned() -> int:
        total = per_round * (options.rounds + 1) + (1 if options.profile else 0)
        return max(0, total - len(runs))

    first = run_one("before", 0)
    if not first.ok:
        raise ScriptFailed(describe_failure(first, request))
    ran = first.modules or (str(project.script_rel),)
    findings, lint_errors = script_fixes.lint(copies["before"], ran, settings)
    held_back = script_fixes.held_back_codes(findings, settings.unsafe_fixes)
    unsafe = {f.code for f in findings if f.applicability == "unsafe"}
    programs: List[Program] = []
    notes = list(project.notes)
    if script_fixes.applicable_codes(findings, settings.unsafe_fixes):
        copies["after"] = mirror("after")
        fixed = script_fixes.fix(copies["after"], ran, settings, findings, "all fixes")
        if fixed.fixed:
            programs.append(Program("after", "all fixes", fixed, None, tuple(sorted(unsafe & set(fixed.codes)))))
            programs.extend(_per_rule(fixed, findings, settings, options, first, ran, mirror, copies, notes))
    # Nothing fixed: nothing to compare, so no control either.
    names = ["before"] + [p.name for p in programs if p.skip is None] + ["control"] if programs else ["before"]
    per_round = len(names)
    for name in names[1:]:
        run_one(name, 0)
    control = next((r for r in runs if r.program == "control"), None)
    if control is not None and not control.ok:
        raise ScriptFailed("a second, identical run of the script failed: " + describe_failure(control, request))
    broken = {r.program: describe_failure(r, request) for r in runs if not r.ok}
    measured = [n for n in names if n not in broken]
    stopped: Optional[str] = None
    if programs and len(measured) > 2:
        try:
            _rounds(options, measured, broken, run_one, request)
        except KeyboardInterrupt:  # a stop in the measured rounds keeps the rounds that finished
            signal_name = received[-1] if received else "SIGINT (Ctrl-C)"
            live = [n for n in measured if n not in broken]
            complete = sum(all(any(r.program == n and r.round == i for r in runs) for n in live) for i in range(1, options.rounds + 1))
            stopped = f"stopped by {signal_name} after {complete} of {options.rounds} measured rounds"
    profile_run = run_one("before", -1, profile=True) if options.profile and stopped is None else None
    reference = first.fingerprint
    determinism = _agreement(runs, ("before", "control"), reference)
    deterministic = determinism is None or determinism.same is not False
    outcomes = tuple(_outcome(p, runs, reference if deterministic else None, broken.get(p.name)) for p in programs)
    if not programs:
        notes.append(_nothing_to_fix(findings, held_back))
    return Session(
        project=project,
        request=request,
        options=options,
        findings=tuple(findings),
        held_back=tuple(held_back),
        outcomes=outcomes,
        runs=tuple(runs),
        determinism=determinism,
        profile=profile_run,
        link_changes=tuple(watch.changes()),
        notes=tuple(notes),
        lint_errors=tuple(lint_errors),
        copies={name: str(copy.root) for name, copy in copies.items()},
        load=(load_start, load_average()),
        stopped=stopped,
    )


def _rounds(options: Options, measured: List[str], broken: Dict[str, str], run_one, request: Request) -> None:
    """The measured rounds, the order reversed every round; a fixed copy that fails is not
    run again, a failing before or control stops everything (``ScriptFailed``)."""
    for index in range(1, options.rounds + 1):
        order = measured if index % 2 == 0 else list(reversed(measured))
        for name in order:
            if name in broken:  # failed earlier in this round's order: not run again
                continue
            result = run_one(name, index)
            if not result.ok and name in ("before", "control"):
                raise ScriptFailed(f"round {index}: " + describe_failure(result, request))
            if not result.ok:
                broken[name] = describe_failure(result, request)


def _per_rule(fixed: FixResult, findings, settings, options: Options, first: Run, ran, mirror, copies, notes) -> List[Program]:
    """One program per rule the "after" copy fixed, when asked or when several were."""
    wanted = options.per_rule if options.per_rule is not None else len(fixed.codes) > 1
    if not wanted:
        return []
    if len(fixed.codes) == 1:
        notes.append(f"one rule was fixed ({fixed.codes[0]}): the all-fixes row is its row")
        return []
    unsafe = {f.code for f in findings if f.applicability == "unsafe"}
    programs = []
    for code in fixed.codes:
        reason = device_skip(code, first)
        if reason is not None:
            programs.append(Program(code, code, None, reason))
            continue
        copies[code] = mirror(code)
        result = script_fixes.fix(copies[code], ran, settings, findings, code, only=code)
        programs.append(Program(code, code, result, None, (code,) if code in unsafe else ()))
    return programs


def device_skip(code: str, first: Optional[Run]) -> Optional[str]:
    """The scenario harness's reason (needs CUDA, 2+ GPUs) when this run cannot show the
    rule's effect: its scenario says where the effect exists."""
    from ..scenario import ScenarioError, select

    try:
        scenario = select((code,))[0]
    except ScenarioError:
        return None
    cuda = first is not None and first.cuda_used
    gpus = len((first.torch or {}).get("gpus") or ()) if cuda else 0
    return scenario.skip_reason("cuda" if cuda else "cpu", gpus)


def _agreement(runs: Sequence[Run], names: Sequence[str], reference) -> Optional[Agreement]:
    """The first disagreement of a check run of ``names`` with the reference, else agreement.
    Only the check round counts: timed runs keep the script's settings, under which a GPU
    script need not repeat itself bit for bit."""
    worst: Optional[Agreement] = None
    for run_ in runs:
        if run_.program not in names or not run_.ok or run_.round != CHECK_ROUND:
            continue
        agreement = script_fingerprints.compare(reference, run_.fingerprint)
        if agreement.same is False:
            return agreement
        if worst is None or agreement.same is None:
            worst = agreement
    return worst


def _outcome(program: Program, runs: Sequence[Run], reference, failure: Optional[str]) -> Outcome:
    if program.skip is not None:
        return Outcome(program, skipped(program.skip))
    # No reference: the script is not deterministic, so before and after cannot be compared.
    agreement = _agreement(runs, (program.name,), reference) if reference is not None else None
    if agreement is not None:
        agreement = script_fingerprints.explain(agreement, program.unsafe_codes)
    if failure is not None:
        return Outcome(program, skipped("the fixed copy failed"), agreement=agreement, failure=failure)
    by_round: Dict[int, Dict[str, Run]] = {}
    for run_ in runs:
        if run_.round > 0 and run_.ok:
            by_round.setdefault(run_.round, {})[run_.program] = run_
    before, after, control = [], [], []
    for index in sorted(by_round):
        group = by_round[index]
        if {"before", "control", program.name} <= set(group):
            before.append(group["before"].step_time)
            after.append(group[program.name].step_time)
            control.append(group["control"].step_time)
    ratios = [b / a for b, a in zip(before, after)]
    if agreement is not None and not agreement.ok:
        verdict = skipped("check failed: before and after differ")
        return Outcome(program, verdict, tuple(ratios), agreement)
    return Outcome(program, judge(before, after, control), tuple(ratios), agreement)


def _nothing_to_fix(findings: Sequence[Finding], held_back: Sequence[str]) -> str:
    if held_back:
        return (
            f"no safe fix applies to the code this script ran; unsafe fixes for {', '.join(held_back)} "
            f"were left out: add --unsafe-fixes to measure them"
        )
    if findings:
        return "the findings in the code this script ran have no fix to apply: nothing to measure"
    return "no findings in the code this script ran: nothing to measure"
