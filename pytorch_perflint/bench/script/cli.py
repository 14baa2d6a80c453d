"""``pytorch-perflint bench SCRIPT``: measure the tool's fixes on the user's own script.

Wiring only (the work is in ``script_session``). ``bench`` without a script stays the scenario
harness: ``ScriptDispatch`` is the scenario command's class and hands the arguments to this
command when they name a script. This module imports neither torch nor rich at import time.

This mode RUNS the user's code (in temporary copies, several times), which ``check`` never
does: it runs only when asked for by name.

Exit codes, as the scenario harness: 0 every check held (each fixed copy ran and computed
the same as before, or differs only as its unsafe fixes explain); 1 a check failed; 2 a
usage error, torch missing, or a script that does not run as it is. 130 on Ctrl-C.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import click

EXIT_INTERRUPTED = 130


class ScriptDispatch(click.Command):
    """The scenario harness's ``bench`` command, which becomes ``bench SCRIPT`` (the command
    below) when its arguments hold a positional one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.epilog:
            self.epilog = "\b\nTo measure the fixes on your own training script (this runs it):\n  pytorch-perflint bench SCRIPT [OPTIONS] [-- SCRIPT_ARGS]...\n  pytorch-perflint bench SCRIPT --help"

    def make_context(self, info_name, args, parent=None, **extra):  # type: ignore[override]
        if names_a_script(args, (self, bench_script)):
            return bench_script.make_context(info_name, args, parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.command is not self:  # standalone main() calls self.invoke on the script's context
            return ctx.command.invoke(ctx)
        return super().invoke(ctx)


def names_a_script(args: Sequence[str], commands: Sequence[click.Command]) -> bool:
    """Whether ``args`` hold a positional argument (options and their values skipped)."""
    takes_value = set()
    for command in commands:
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and not param.count:
                takes_value.update(param.opts)
                takes_value.update(param.secondary_opts)
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            return next(tokens, None) is not None
        if token.startswith("-") and token != "-":
            if "=" not in token and token in takes_value:
                next(tokens, None)
            continue
        return True
    return False


def _split(values: Sequence[str]) -> Optional[Tuple[str, ...]]:
    if not values:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def output_problem(path: Optional[Path], flag: str) -> Optional[str]:
    """Why ``path`` cannot be written, checked before minutes of runs; None when it can."""
    if path is None:
        return None
    if path.is_dir():
        return f"{flag} {path}: is a folder"
    parent = Path(os.path.abspath(path)).parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{flag} {path}: {parent} is not a folder"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{flag} {path}: not writable"
    return None


@click.command("bench", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SCRIPT_ARGS]...")
@click.option("--steps", type=click.IntRange(1, 1_000_000), default=30, show_default=True, help="Steps timed per run, after the warm-up steps.")
@click.option("--warmup", type=click.IntRange(1, 1_000_000), default=5, show_default=True, help="Steps run before timing starts, in every run.")
@click.option("--unit", type=click.Choice(["step", "forward"]), default="step", show_default=True, help="What a step is: an optimizer.step() call, or a forward call of the outermost module (evaluation and inference scripts).")
@click.option("--rounds", type=click.IntRange(1, 100), default=5, show_default=True, help="Measured rounds of interleaved runs (a warm-up round comes on top).")
@click.option("--timeout", type=click.FloatRange(1, 86400), default=600, show_default=True, help="Seconds one run may take before it is stopped.")
@click.option("--threads", type=click.IntRange(1, 1024), default=None, help="torch intra-op threads in every run (OMP_NUM_THREADS too). Default: the script's own.")
@click.option("--per-rule/--no-per-rule", default=None, help="Also measure each rule's fixes alone (default: when more than one rule was fixed).")
@click.option("--profile", is_flag=True, help="One more run under torch.profiler: the share of step time behind each finding.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Apply the unsafe fixes too, as `check --fix --unsafe-fixes`.")
@click.option("--select", multiple=True, metavar="CODES", help="Rules to enable, as in check.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable.")
@click.option("--preview/--no-preview", default=None, help="Enable preview rules.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=str), default=None, help="A config file to use instead of the discovered one.")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write every run's figures here.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), help="Write a PNG chart of the speed-ups here.")
@click.option("--max-copy-mb", type=click.FloatRange(0.1, 100_000), default=100.0, show_default=True, help="Most Python source to copy per program.")
@click.option("--link-above-mb", type=click.FloatRange(0.001, 1_000_000), default=16.0, show_default=True, help="Files larger than this are linked into the copies, not copied; a write to one copies it first.")
@click.pass_context
def bench_script(
    ctx: click.Context,
    script: Path,
    script_args: Tuple[str, ...],
    steps: int,
    warmup: int,
    unit: str,
    rounds: int,
    timeout: float,
    threads: Optional[int],
    per_rule: Optional[bool],
    profile: bool,
    unsafe_fixes: Optional[bool],
    select: Tuple[str, ...],
    extend_select: Tuple[str, ...],
    ignore: Tuple[str, ...],
    preview: Optional[bool],
    config_file: Optional[str],
    json_path: Optional[Path],
    plot_path: Optional[Path],
    max_copy_mb: float,
    link_above_mb: float,
) -> None:
    """Measure what the tool's fixes buy on SCRIPT, your own training script.

    RUNS YOUR SCRIPT (in temporary copies; your files are not changed, and every process a
    run starts ends with it): a "before" copy, an "after" copy with the fixes `check --fix`
    would apply, and an identical A/A control, each a fresh process, interleaved over
    --rounds. Each run stops after --warmup +
    --steps optimizer steps. The report gives the median step time, the speed-up with its
    range and verdict, and whether before and after trained to the same weights. Pass the
    script's own arguments after `--`.
    """
    import importlib.util

    from ...cli import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
    from ..needs import MATPLOTLIB_MISSING, TORCH_MISSING

    def fail(message: str) -> None:
        click.echo(f"error: {message}", err=True)
        ctx.exit(EXIT_ERROR)

    if script.suffix == ".ipynb":
        fail(f"{script}: bench runs Python scripts; export the notebook first (jupyter nbconvert --to script {script})")
    if importlib.util.find_spec("torch") is None:
        click.echo(TORCH_MISSING, err=True)
        ctx.exit(EXIT_ERROR)
    if plot_path is not None and importlib.util.find_spec("matplotlib") is None:
        click.echo(MATPLOTLIB_MISSING, err=True)
        ctx.exit(EXIT_ERROR)
    for path, flag in ((json_path, "--json"), (plot_path, "--plot")):
        problem = output_problem(path, flag)
        if problem:
            fail(problem)

    from ...config import ConfigError, load_settings

    script = Path(os.path.abspath(script))
    overrides = {
        "select": _split(select),
        "extend_select": _split(extend_select),
        "ignore": _split(ignore),
        "preview": preview,
        "unsafe_fixes": unsafe_fixes,
    }
    try:
        settings = load_settings([str(script)], config_file, overrides)
    except ConfigError as error:
        fail(str(error))

    from . import copies as script_copies, session as script_session
    from .runs import Request

    cwd = Path(os.getcwd())
    root = script_copies.project_root(script, settings.project_root, settings.config_path is not None, cwd)
    try:
        project = script_copies.find_project(script, root, cwd, _code_files(root, settings), max_copy_mb, link_above_mb)
    except script_copies.CopyError as error:
        fail(str(error))
    argv0 = os.path.relpath(script, cwd) if script.is_relative_to(cwd) else str(script)
    request = Request(steps=steps, warmup=warmup, unit=unit, timeout=timeout, args=tuple(script_args), argv0=argv0, threads=threads)
    options = script_session.Options(rounds=rounds, per_rule=per_rule, profile=profile, max_copy_mb=max_copy_mb)
    import datetime

    started = datetime.datetime.now().astimezone()
    session = _run(ctx, project, settings, request, options)
    _output(session, json_path, plot_path, started)
    if session.stopped:  # a signal in the measured rounds: what finished is written above
        ctx.exit(EXIT_INTERRUPTED)
    ctx.exit(EXIT_OK if session.ok else EXIT_FINDINGS)


def _code_files(root: Path, settings: Any) -> List[Path]:
    """The files ``check`` would lint under the root: those are copied, the rest linked."""
    import dataclasses

    from ...discovery import discover

    found = discover([str(root)], dataclasses.replace(settings, project_root=str(root)))
    return [Path(os.path.abspath(p)) for p in found.files]


def _console() -> Any:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))
    return console


def _run(ctx: click.Context, project, settings, request, options):
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ...cli import EXIT_ERROR
    from ..eta import Eta, eta_text
    from . import copies as script_copies, session as script_session

    console = _console()
    eta = Eta()
    done = [0]

    def status(text: str, planned: int) -> str:
        """``planned`` (runs still to come) grows once the fixes are known: the time left,
        which only counts down, is what the line shows."""
        done[0] += 1
        return f"run {done[0]}: {text} ({eta_text(eta.update(done[0] - 1, done[0] - 1 + planned))})"

    try:
        if not console.is_terminal:  # a log: one line per run

            def log(text: str, planned: int) -> None:
                console.print(status(text, planned), markup=False, highlight=False)

            return script_session.run(project, settings, request, options, log)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True) as bar:
            task = bar.add_task("copying", total=None)

            def progress(text: str, planned: int) -> None:
                bar.update(task, description=status(text, planned))

            return script_session.run(project, settings, request, options, progress)
    except script_session.ScriptFailed as error:
        click.echo(f"error: {project.script_rel} does not run as it is, so nothing was measured: {error}", err=True)
        ctx.exit(EXIT_ERROR)
    except script_copies.CopyError as error:
        click.echo(f"error: {error}", err=True)
        ctx.exit(EXIT_ERROR)
    except script_session.Interrupted as error:
        click.echo(str(error), err=True)
        ctx.exit(EXIT_INTERRUPTED)


def _output(session, json_path: Optional[Path], plot_path: Optional[Path], started) -> None:
    import datetime

    from .. import export
    from . import report as script_report

    console = _console()
    machine = script_report.machine_of(session)
    script_report.print_report(console, session, machine)
    now = datetime.datetime.now().astimezone()
    if json_path is not None:
        export.write(json_path, script_report.run_dict(session, machine, started, now))
        console.print(f"[dim]JSON written to {json_path}[/]")
    if plot_path is not None and session.outcomes:
        from ..plot import write_plot

        title = f"pytorch-perflint bench {session.project.script_rel} on {machine.gpus[0] if machine.gpus else machine.cpu_model}"
        write_plot(plot_path, script_report.chart_rows(session), title)  # type: ignore[arg-type]
        console.print(f"[dim]chart written to {plot_path}[/]")
