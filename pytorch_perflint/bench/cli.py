"""``pytorch-perflint bench``: the click command. Wiring only; torch is imported inside it.

The main CLI mounts this command lazily, so ``pytorch-perflint --help`` and linting never
import torch; ``python -m pytorch_perflint.bench`` runs it standalone.

Exit codes: 0 every check held (the rule fired, the fix applied, before and after agree);
1 a check failed; 2 usage error or torch/matplotlib missing. Verdicts (faster, slower...)
are measurements, not failures, and do not change the exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import click

from .needs import MATPLOTLIB_MISSING, TORCH_MISSING
from .script.cli import ScriptDispatch


@click.command("bench", cls=ScriptDispatch)  # `bench SCRIPT` goes to script/cli.py
@click.option("--rule", "rules", multiple=True, metavar="CODE", help="Only this rule's scenario (repeatable).")
@click.option(
    "--device",
    "devices",
    multiple=True,
    type=click.Choice(["auto", "cpu", "cuda"], case_sensitive=False),
    help="Where to run (repeatable). auto: CUDA when available, else the CPU.",
)
@click.option("--quick", is_flag=True, help="Small sizes and short timings (CI): checks the harness, not the speed.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write every round's raw figures here.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), help="Write a PNG chart of the speed-ups here.")
@click.option("--rounds", type=click.IntRange(2, 100), help="Measured rounds (a warm-up round comes on top). Default 5, --quick 3.")
@click.option("--threads", type=click.IntRange(1, 1024), default=1, show_default=True, help="torch intra-op threads while timing.")
@click.option("--min-run-time", type=click.FloatRange(0.001, 60.0), help="Seconds each program runs per round. Default 0.4, --quick 0.05.")
@click.option("--check-only", is_flag=True, help="Only check that rules fire, fixes apply and results agree; no timing.")
@click.pass_context
def bench(
    ctx: click.Context,
    rules: Tuple[str, ...],
    devices: Tuple[str, ...],
    quick: bool,
    json_path: Optional[Path],
    plot_path: Optional[Path],
    rounds: Optional[int],
    threads: int,
    min_run_time: Optional[float],
    check_only: bool,
) -> None:
    """Measure that each rule's fix makes its scenario faster, and still computes the same.

    For every rule: lint a small PyTorch program written with the anti-pattern, apply the
    tool's own fix, check both compute the same result, then time them interleaved against
    an A/A control that sets the noise floor.
    """
    for flag, path in (("--json", json_path), ("--plot", plot_path)):
        problem = unwritable(path) if path is not None else None
        if problem is not None:  # say so now, not after minutes of measuring
            click.echo(f"error: {flag} {path}: {problem}", err=True)
            ctx.exit(2)
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))  # logs and CI: keep rows on one line
    try:
        import torch  # noqa: F401
    except ImportError:
        click.echo(TORCH_MISSING, err=True)
        ctx.exit(2)
    if plot_path is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            click.echo(MATPLOTLIB_MISSING, err=True)
            ctx.exit(2)

    import datetime

    from . import export, harness, machine, report, scenario
    from .plot import write_plot
    from .record import Recorder, StopSignals, Stopped, describe_stop, json_writer, planned_runs, progress_fields, stop_reason

    try:
        scenarios = scenario.select(rules)
        device_list = harness.resolve_devices(devices)
    except (scenario.ScenarioError, harness.DeviceError) as error:
        click.echo(f"error: {error}", err=True)
        ctx.exit(2)
    options = harness.Options(quick=quick, rounds=rounds, num_threads=threads, min_run_time=min_run_time, check_only=check_only)
    info = machine.describe()
    load_start = machine.load_average()
    started = datetime.datetime.now().astimezone()
    # The JSON is rewritten after every finished scenario, and a stop (SIGTERM from a
    # device check's `timeout`, SIGHUP, Ctrl-C) keeps what finished: bench/record.py.
    signals = StopSignals().install()
    recorder = Recorder(
        planned_runs(scenarios, device_list),
        json_writer(json_path, info, options, started, load_start) if json_path is not None else None,
        signals,
    )
    try:
        _run_with_progress(console, scenarios, device_list, options, recorder.add)
    except (Stopped, KeyboardInterrupt) as error:
        recorder.stopped = stop_reason(error)
    finally:
        signals.hold()  # the files below are written whatever comes next
    results = recorder.results
    finished = datetime.datetime.now().astimezone()
    if recorder.stopped is not None:
        console.print(describe_stop(recorder), markup=False, highlight=False)
    report.print_report(console, results, info, options)
    if json_path is not None:
        data = export.run_dict(results, info, options, started, finished, load_start, machine.load_average(), progress_fields(recorder))
        export.write(json_path, data)
        console.print(f"[dim]JSON written to {json_path}[/]")
    if plot_path is not None and results:
        title = f"pytorch-perflint bench (micro-benchmarks) on {info.gpus[0] if info.gpus and 'cuda' in device_list else info.cpu_model}"
        write_plot(plot_path, results, title)
        console.print(f"[dim]chart written to {plot_path}[/]")
    signals.restore()
    ctx.exit(0 if recorder.complete and all(r.ok for r in results) else 1)


def unwritable(path: Path) -> Optional[str]:
    """Why ``path`` cannot be written (None: it can), found by trying: the nearest existing
    folder on its way must take a new file, and an existing file must open for writing."""
    import os
    import tempfile

    if path.is_dir():
        return "is a folder"
    if path.exists():
        try:
            with open(path, "ab"):
                return None
        except OSError as error:
            return f"cannot be written: {error.strerror or error}"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    try:
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as error:
        return f"cannot write in {ancestor}: {error.strerror or error}"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot write in {ancestor}"
    return None


def _run_with_progress(console, scenarios, devices, options, on_result):
    """A live bar on a terminal; in a log (CI, a device run) one line per scenario as it
    finishes, with a time left that only counts down. ``on_result`` hears of each result
    first (it keeps it and rewrites the JSON)."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import harness
    from .eta import Eta, eta_text
    from .report import format_seconds
    from .verdicts import speedup_text

    total = len(scenarios) * len(devices) * harness.steps_for(options)
    count = len(scenarios) * len(devices)
    eta = Eta()
    done = [0, 0]  # steps, scenarios

    def line(result) -> None:
        on_result(result)
        done[1] += 1
        verdict = result.verdict
        figures = ""
        if verdict.speedup is not None:
            figures = f" {format_seconds(verdict.before_s)} -> {format_seconds(verdict.after_s)}, {speedup_text(verdict)}"
        left = eta_text(eta.update(done[1], count))
        console.print(
            f"[{done[1]}/{count}] {result.code} {result.device}: {verdict.label}{figures} ({result.seconds:.1f} s; {left})",
            markup=False,
            highlight=False,
        )

    if not console.is_terminal:
        console.print(f"bench: {count} scenario run(s) on {', '.join(devices)}", markup=False, highlight=False)
        started = time.monotonic()
        results = harness.run_all(scenarios, devices, options, None, line)
        console.print(f"bench: done in {time.monotonic() - started:.0f} s", markup=False, highlight=False)
        return results
    with Progress(
        TextColumn("[progress.description]{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[left]}"),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("bench", total=total, left="")

        def advance(steps: int, text: str) -> None:
            done[0] += steps
            progress.update(task, advance=steps, description=text, left=eta_text(eta.update(done[0], total)) if steps else progress.tasks[0].fields["left"])

        return harness.run_all(scenarios, devices, options, advance, on_result)


def main() -> None:  # pragma: no cover - python -m pytorch_perflint.bench
    bench(prog_name="pytorch-perflint bench")
