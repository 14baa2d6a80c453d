"""What ``bench SCRIPT`` shows: the rich tables, the JSON record and the chart's rows.

The tables follow the scenario harness's (``report``): the same verdict words and colours,
the same "speed-up [range]" and "noise" columns, the machine named underneath.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ... import __version__ as tool_version
from . import evidence as script_evidence
from ..machine import Machine
from ..report import _STYLES, format_seconds
from .fingerprints import Agreement, reasons
from .session import Outcome, Session
from .startup import startup_notes
from ..verdicts import MEANINGFUL, MIN_ROUNDS, NOISE_FLOOR, Kind, Verdict, as_dict, speedup_text

SCHEMA_VERSION = 2  # as the scenario harness's: the speed-up is the ratio of the medians


def machine_of(session: Session) -> Machine:
    """The machine, with the torch facts the script's own process reported."""
    import os
    import platform

    from ..machine import _cpu_model, _memory_gb

    facts = (session.first_run("before") or session.runs[0]).torch or {}
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return Machine(
        cpu_model=_cpu_model(),
        cpu_count=os.cpu_count() or 1,
        cpus_available=available,
        memory_gb=_memory_gb(),
        gpus=tuple(facts.get("gpus") or ()),
        torch_version=str(facts.get("version") or "not imported"),
        cuda_version=facts.get("cuda_version"),
        cudnn_version=facts.get("cudnn"),
        python_version=platform.python_version(),
        platform=platform.platform(),
        default_num_threads=int(facts.get("num_threads") or 0),
    )


def device_of(session: Session) -> str:
    first = session.first_run("before")
    return "cuda" if first is not None and first.cuda_used else "cpu"


def _verdict_text(verdict: Verdict) -> str:
    label = f"[{_STYLES[verdict.kind]}]{verdict.kind}[/]"
    if verdict.kind is Kind.SKIPPED and verdict.reason:
        label += f": {verdict.reason}"
    return label


def agreement_text(agreement: Optional[Agreement]) -> str:
    if agreement is None or agreement.same is None:
        return "-"
    if agreement.same:
        return "[green]same[/]"
    if agreement.explained_by:
        return f"[yellow]differs: {', '.join(agreement.explained_by)}[/]"
    return "[red]differs[/]"


def _label(outcome: Outcome) -> str:
    fix = outcome.program.fix
    if outcome.program.name == "after" and fix is not None:
        more = f" + {fix.follow_ups} follow-up" if fix.follow_ups else ""
        return f"all fixes ({', '.join(fix.codes)}{more})"
    from ... import registry

    rule = registry.rule_by_code(outcome.program.label)
    return f"{outcome.program.label} {rule.name}" if rule is not None else outcome.program.label


def speed_table(session: Session) -> Any:
    from rich.table import Table

    out = Table(title=f"pytorch-perflint bench {session.project.script_rel}: before / after the tool's fixes")
    out.add_column("fixes", no_wrap=True)
    out.add_column("before", justify="right", no_wrap=True)
    out.add_column("after", justify="right", no_wrap=True)
    out.add_column("speed-up \\[range]", justify="right", no_wrap=True)  # "\\[": not rich markup
    out.add_column("noise", justify="right", no_wrap=True)
    out.add_column("verdict")
    out.add_column("result", no_wrap=True)
    for outcome in session.outcomes:
        verdict = outcome.verdict
        noise = f"±{100 * (verdict.threshold - 1):.1f}%" if verdict.threshold else "-"
        out.add_row(
            _label(outcome),
            format_seconds(verdict.before_s),
            format_seconds(verdict.after_s),
            speedup_text(verdict),
            noise,
            _verdict_text(verdict),
            agreement_text(outcome.agreement),
        )
    return out


def _measured_for(session: Session, finding) -> str:
    """What the runs say about a finding's rule: its own row's verdict, or why there is none."""
    from .session import device_skip

    for outcome in session.outcomes:
        if outcome.program.name == finding.code:
            ratio = f" {outcome.verdict.speedup:.2f}x" if outcome.verdict.speedup else ""
            return _verdict_text(outcome.verdict) + ratio
    reason = device_skip(finding.code, session.first_run("before"))
    if reason is not None:
        return f"[dim]{reason}[/]"
    everything = next((o for o in session.outcomes if o.program.name == "after"), None)
    if everything is not None and everything.program.fix is not None and finding.code in everything.program.fix.codes:
        return "in all fixes"
    return "-"


def _fix_text(session: Session, applicability: Optional[str], code: str) -> str:
    if applicability is None or applicability == "display-only":
        return applicability or "none"
    if code in session.held_back:
        return "unsafe (not applied)"
    return applicability


def findings_table(session: Session, found: Sequence[script_evidence.Evidence]) -> Any:
    from rich.table import Table

    out = Table(title="Findings in the code the script ran")
    out.add_column("rule", no_wrap=True)
    out.add_column("where", no_wrap=True)
    out.add_column("fix", no_wrap=True)
    out.add_column("measured", no_wrap=True)
    if session.profile is not None:
        out.add_column("share of step time", justify="right", no_wrap=True)
        out.add_column("runtime evidence")
    out.add_column("message", overflow="fold")
    for finding in session.findings:
        row = [finding.code, finding.where, _fix_text(session, finding.applicability, finding.code), _measured_for(session, finding)]
        if session.profile is not None:
            mine = script_evidence.for_finding(found, finding)
            share = max((e.share for e in mine), default=None)
            row.append(f"{100 * share:.1f}%" if share is not None else "-")
            row.append("; ".join(f"{e.what} {100 * e.share:.1f}%" for e in mine) or "-")
        row.append(finding.message)
        out.add_row(*row)
    return out


def print_report(console: Any, session: Session, machine: Machine) -> None:
    copy_root = session.copies.get("before", "")
    found = script_evidence.evidence(session.profile.profile if session.profile else None, session.findings, copy_root)
    if session.outcomes:
        console.print(speed_table(session))
    if session.findings:
        console.print(findings_table(session, found))
    for item in script_evidence.unexplained(found):
        console.print(f"[yellow]runtime:[/] {item.what}: {100 * item.share:.1f}% of step time" + (f" at {item.where}" if item.where else "") + ", no finding explains it")
    if session.profile is not None and not (session.profile.profile or {}).get("window_s"):
        console.print("[yellow]the profiled run gave no figures[/]" + (f": {session.profile.error}" if session.profile.error else ""))
    request, options = session.request, session.options
    gpus = ", ".join(machine.gpus) if machine.gpus else "none"
    clock = (session.first_run("before").clock if session.first_run("before") else "wall")
    console.print(
        f"[dim]{machine.cpu_model}, {machine.cpus_available}/{machine.cpu_count} CPUs, GPUs: {gpus}; torch "
        f"{machine.torch_version}; {_threads(request, machine)}; {request.unit}s: {request.warmup} warm-up + {request.steps} timed per run, "
        f"{options.rounds} round{'s' if options.rounds != 1 else ''} + 1 warm-up, a fresh process per run; step time = {clock} time from one step's end "
        f"to the next, mean per run, median over rounds; speed-up = median before / median after over the rounds, \\[range] = lowest-highest per-round ratio; noise = widest A/A deviation[/]"
    )
    for note in session.notes:
        console.print(f"note: {note}")
    for note in startup_notes(session):
        console.print(f"note: {note}")
    busy = max((load[0] for load in session.load if load), default=0.0)
    if not request.threads and busy > machine.cpus_available and machine.default_num_threads > 1:
        console.print(
            f"note: the machine was busy (load {busy:.1f} on {machine.cpus_available} CPUs): runs with "
            f"{machine.default_num_threads} intra-op threads wait on each other when cores are shared, "
            f"which makes compute slow and noisy; --threads 1 steadies them"
        )
    for outcome in session.outcomes:
        agreement = outcome.agreement
        if agreement is not None and agreement.same is False and agreement.explained_by:
            console.print(f"[yellow]{_label(outcome)}: results differ ({agreement.detail}), as expected from unsafe fixes: {reasons(agreement.explained_by)}[/]")
    if session.held_back and session.outcomes:
        console.print(f"note: unsafe fixes for {', '.join(session.held_back)} were not applied: add --unsafe-fixes to measure them")
    if session.link_changes:
        shown = ", ".join(session.link_changes[:5]) + (" ..." if len(session.link_changes) > 5 else "")
        console.print(
            f"[bold yellow]warning:[/] files the copies link to changed while bench ran (the script may have "
            f"written into your project through a link, or another program did): {shown}"
        )
    for problem in session.problems:
        console.print(f"[red]problem:[/] {problem}")


def _threads(request: Any, machine: Machine) -> str:
    if request.threads:
        return f"{request.threads} thread(s) (--threads)"
    return f"{machine.default_num_threads} thread(s) (the script's own)"


# ----------------------------------------------------------------------------------------
# JSON


def _agreement_dict(agreement: Optional[Agreement]) -> Optional[Dict[str, Any]]:
    if agreement is None:
        return None
    return {"same": agreement.same, "kind": agreement.kind, "detail": agreement.detail, "explained_by": list(agreement.explained_by)}


def run_dict(session: Session, machine: Machine, started: datetime.datetime, finished: datetime.datetime) -> Dict[str, Any]:
    """The whole session as plain data: every run's step times and fingerprint included."""
    copy_root = session.copies.get("before", "")
    found = script_evidence.evidence(session.profile.profile if session.profile else None, session.findings, copy_root)
    project = session.project
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "script",
        "benchmark": "your script: what the fixes gain on it",
        "tool": {"name": "pytorch-perflint", "version": tool_version},
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "machine": {**dataclasses.asdict(machine), "gpus": list(machine.gpus)},
        "device": device_of(session),
        "project": {
            "root": str(project.root),
            "script": str(project.script_rel),
            "workdir": str(project.workdir),
            "args": list(session.request.args),
            "code_files": len(project.code),
            "code_bytes": project.code_bytes,
        },
        "options": {
            "steps": session.request.steps,
            "warmup": session.request.warmup,
            "unit": session.request.unit,
            "rounds": session.options.rounds,
            "warmup_rounds": 1,
            "timeout_s": session.request.timeout,
            "per_rule": session.options.per_rule,
            "profile": session.options.profile,
            "seed": session.request.seed,
            "threads": session.request.threads,
        },
        "thresholds": {"noise_floor": NOISE_FLOOR, "meaningful": MEANINGFUL, "min_rounds": MIN_ROUNDS},
        "findings": [
            {
                **dataclasses.asdict(f),
                "evidence": [
                    {"what": e.what, "seconds": e.seconds, "share": e.share, "where": e.where} for e in script_evidence.for_finding(found, f)
                ],
            }
            for f in session.findings
        ],
        "unexplained_runtime": [{"what": e.what, "seconds": e.seconds, "share": e.share, "where": e.where} for e in script_evidence.unexplained(found)],
        "held_back_unsafe": list(session.held_back),
        "results": [
            {
                "program": o.program.name,
                "label": _label(o),
                "fix": dataclasses.asdict(o.program.fix) if o.program.fix else None,
                "skip": o.program.skip,
                "verdict": as_dict(o.verdict),
                "ratios": list(o.ratios),
                "fingerprint": _agreement_dict(o.agreement),
                "failure": o.failure,
            }
            for o in session.outcomes
        ],
        "determinism": _agreement_dict(session.determinism),
        "runs": [
            {
                "program": r.program,
                "round": r.round,
                "warmup": r.round == 0,
                "status": r.status,
                "returncode": r.returncode,
                "wall_s": r.wall_s,
                "median_s": r.median,
                "mean_s": r.mean,
                "step_times_s": list(r.step_times),
                "clock": r.clock,
                "steps_done": r.steps_done,
                "fingerprint": r.fingerprint,
                "error": r.error,
            }
            for r in session.runs
        ],
        "profile": session.profile.profile if session.profile else None,
        "load_average": [list(load) if load else None for load in session.load],
        "link_changes": list(session.link_changes),
        "notes": list(session.notes),
        "measurement_notes": startup_notes(session),
        "stopped": session.stopped,
        "problems": list(session.problems),
        "ok": session.ok,
    }


# ----------------------------------------------------------------------------------------
# The chart: the scenario harness's plot takes rows with a code, a device and a verdict.


@dataclass(frozen=True)
class ChartRow:
    code: str
    device: str
    verdict: Verdict


def chart_rows(session: Session) -> List[ChartRow]:
    device = device_of(session)
    return [ChartRow(_label(o), device, o.verdict) for o in session.outcomes]
