"""The command line: click commands wired to config, discovery, runner and output.

No linting logic lives here. Heavy modules (libcst, rich, the rules, the harness) are
imported inside the commands, so ``--version`` and ``--help`` stay fast.

Exit codes: 0 nothing left to report; 1 findings remain (or ``--diff`` has a diff);
2 a usage, config or internal error (a rule crash, an unreadable or missing path);
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import gc
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional, Sequence, TextIO, Tuple

import click

from . import __version__
from .config import OUTPUT_FORMATS  # light: no rich, no libcst

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT

# Commands that live in optional modules: name -> (module, attribute, short help). They are
# imported only when invoked, never for --help or --version.
LAZY_COMMANDS: Dict[str, Tuple[str, str, str]] = {
    "bench": ("pytorch_perflint.bench.cli", "bench", "Measure each fix's speed-up on this machine."),
    "server": ("pytorch_perflint.lsp.command", "server", "Run the language server (LSP) on stdin/stdout."),
    "clean": ("pytorch_perflint.clean", "clean_command", "Remove the lint caches of this folder, its subfolders and its project."),
}


def _lazy_available(name: str) -> bool:
    module = LAZY_COMMANDS[name][0]
    relative = Path(*module.split(".")[1:]).with_suffix(".py")
    return (Path(__file__).resolve().parent / relative).is_file()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a command. A subclass on purpose: CPython remembers a plain
    KeyboardInterrupt that passed through certain frames and then, under ``python -m``,
    ends the process by SIGINT instead of with the exit code chosen here."""


def _interrupted(signum: int, frame: Any) -> None:
    raise Interrupted()


class LazyGroup(click.Group):
    """A group whose optional commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name in LAZY_COMMANDS if _lazy_available(name))
        return sorted(names)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        command = super().get_command(ctx, name)
        if command is not None or name not in LAZY_COMMANDS or not _lazy_available(name):
            return command
        import importlib

        module_name, attribute, _ = LAZY_COMMANDS[name]
        try:
            command = getattr(importlib.import_module(module_name), attribute)
        except Exception as error:  # noqa: BLE001 - say what is missing, exit 2
            click.echo(f"error: the {name} command is not available: {error}", err=True)
            ctx.exit(EXIT_ERROR)
        if not isinstance(command, click.Command):
            click.echo(f"error: {module_name}.{attribute} is not a click command", err=True)
            ctx.exit(EXIT_ERROR)
        self.add_command(command, name)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C exits 130, as shells expect of an interrupted command (click's own
        handling says "Aborted!" and exits 1, the code for "findings remain")."""
        try:
            previous = signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # not the main thread (an embedding program): leave it be
            previous = None
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\nerror: interrupted", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        for name in names:
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append((name, LAZY_COMMANDS[name][2]))
                continue
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="pytorch-perflint", message="%(prog)s %(version)s")
def main() -> None:
    """Find, fix and measure PyTorch performance anti-patterns."""


# ----------------------------------------------------------------------------------------
# check


def _split(values: Sequence[str]) -> Optional[Tuple[str, ...]]:
    """``--select A,B --select C`` -> ("A", "B", "C"); None when the flag was not given."""
    if not values:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# How much a run prints: -s nothing (the exit code says it), -q the findings only, else all.
SILENT, QUIET, DEFAULT = 0, 1, 2

# Flags that cannot go together (ruff's conflicts): each pair is refused with exit 2.
_CONFLICTS = (
    ("exit_zero", "exit_non_zero_on_fix"),
    ("show_files", "show_settings"),
    ("show_files", "watch"),
    ("show_settings", "watch"),
    ("show_files", "statistics"),
    ("show_settings", "statistics"),
    ("statistics", "watch"),
    ("statistics", "diff"),
    ("watch", "diff"),
    ("quiet", "silent"),
)


def _refuse_conflicts(given: Dict[str, Any]) -> None:
    for first, second in _CONFLICTS:
        if given.get(first) and given.get(second):
            _fail(f"--{first.replace('_', '-')} cannot be used with --{second.replace('_', '-')}")


@dataclass(frozen=True)
class _Reporting:
    """How a run's results are shown: decided once from the flags, used for every run
    (``--watch`` runs many)."""

    output_file: Optional[str]
    color: Optional[bool]  # None: colour a terminal only
    verbosity: int
    statistics: bool
    show_fixes: bool
    fix_only: bool
    diff: bool
    exit_zero: bool
    exit_non_zero_on_fix: bool


def _open_output(path: Optional[str]) -> Optional[TextIO]:
    """The ``--output-file``, created with its folders; exit 2 if it cannot be."""
    if path is None:
        return None
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return open(path, "w", encoding="utf-8")
    except OSError as error:
        _fail(f"{path}: cannot write the output file: {error.strerror or error}")


def _lint_and_report(paths: Tuple[str, ...], settings, use_stdin: bool, stdin_filename: Optional[str], jobs: Optional[int], no_cache: bool, report: _Reporting) -> int:
    """Lint (or fix) once, print the report, and return the exit code."""
    import dataclasses

    from . import runner
    from .discovery import discover, display_path
    from .output import emit, format_errors
    from .output.summary import fix_only_sentence, summary_lines

    loud = report.verbosity >= DEFAULT
    mode = runner.Mode.DIFF if report.diff else (runner.Mode.FIX if settings.fix else runner.Mode.CHECK)
    output = _open_output(report.output_file)
    report_stream = output or (sys.stderr if (use_stdin and mode is runner.Mode.FIX) else sys.stdout)
    fmt = settings.output_format or ("full" if report_stream.isatty() else "concise")
    with_edits = fmt in ("json", "json-lines", "sarif")

    discovery_errors: Tuple[str, ...] = ()
    if use_stdin:
        path = display_path(Path(stdin_filename)) if stdin_filename else Path("-")
        data = sys.stdin.buffer.read()
        processed = runner.process_stdin(data, path, settings, mode, with_edits=with_edits)
        results = [processed.result]
        summary = runner.summarize(results, settings, mode)
        if mode is runner.Mode.FIX:
            sys.stdout.flush()
            sys.stdout.buffer.write(processed.output if processed.output is not None else data)
            sys.stdout.flush()
    else:
        found = discover(list(paths) or ["."], settings)
        discovery_errors = found.errors
        if loud:
            for warning in found.warnings:
                click.echo(f"warning: {warning}", err=True)
            if not found.files and not found.errors:
                click.echo("warning: no Python files found under the given paths", err=True)
        results, summary = runner.run(
            found.files,
            settings,
            mode=mode,
            jobs=jobs,
            with_edits=with_edits,
            progress=loud,
            use_cache=not no_cache,
            roots=list(paths) or ["."],
        )

    for line in format_errors(results):
        if line.startswith("error:") or loud:
            click.echo(line, err=True)
    for message in discovery_errors:
        click.echo(f"error: {message}", err=True)
    summary = dataclasses.replace(summary, errors=summary.errors + len(discovery_errors))

    if report.verbosity == SILENT:
        pass
    elif mode is runner.Mode.DIFF:
        for result in results:
            if result.diff:
                sys.stdout.write(result.diff)
        sys.stdout.flush()
        if loud:
            for line in summary_lines(summary, unsafe_fixes=settings.unsafe_fixes):
                click.echo(line.text, err=True)
    elif report.fix_only:
        if loud and summary.fixed:
            click.echo(fix_only_sentence(summary), err=True)
    else:
        color = report.color if output is None else False  # a file never gets colour codes (ruff)
        emit(
            results,
            fmt,
            report_stream,
            summary=summary,
            statistics=report.statistics,
            show_fixes=report.show_fixes,
            root=Path.cwd(),
            color=color,
            unsafe_fixes=settings.unsafe_fixes,
            quiet=not loud,
        )
        report_stream.flush()
    if output is not None:
        output.close()

    if summary.errors:
        return EXIT_ERROR
    if report.exit_zero:
        return EXIT_OK
    if report.exit_non_zero_on_fix and summary.fixed and mode is runner.Mode.FIX:
        return EXIT_FINDINGS
    if report.fix_only:
        return EXIT_OK
    if mode is runner.Mode.DIFF:
        return EXIT_FINDINGS if summary.fixed else EXIT_OK
    return EXIT_FINDINGS if summary.remaining else EXIT_OK


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, metavar="CODES", help="Rules to enable (codes, prefixes, names or ALL), comma-separated; replaces the configured set.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules to disable.")
@click.option("--fixable", multiple=True, metavar="CODES", help="Rules whose fixes may be applied (default: all).")
@click.option("--unfixable", multiple=True, metavar="CODES", help="Rules whose fixes are never applied.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None, help="How to report (default: full on a terminal, concise otherwise; or $PYTORCH_PERFLINT_OUTPUT_FORMAT).")
@click.option("-o", "--output-file", default=None, metavar="PATH", envvar="PYTORCH_PERFLINT_OUTPUT_FILE", help="Write the report to this file instead of stdout (no colour).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain (errors still exit 2).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when any file was fixed, even if no findings remain.")
@click.option("--statistics", is_flag=True, help="Show counts per rule.")
@click.option("--config", "config_args", multiple=True, metavar="PATH | KEY=VALUE", help="A pyproject.toml or pytorch-perflint.toml to use instead of the discovered one, or a TOML `key = value` that overrides one setting (repeatable).")
@click.option("--target-torch-version", default=None, metavar="X.Y", help="The torch version the code runs on, e.g. 2.1 or 1.13.")
@click.option("--preview/--no-preview", default=None, help="Enable preview rules.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N", help="Processes to use (default: one per CPU).")
@click.option("--fix/--no-fix", default=None, help="Apply safe fixes.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply (with --fix) or count unsafe fixes.")
@click.option("--fix-only", is_flag=True, help="Apply fixes and report nothing else; exit 0 unless an error.")
@click.option("--diff", is_flag=True, help="Show the fixes as a unified diff instead of writing them; exit 1 if there is one.")
@click.option("--show-fixes", is_flag=True, help="List the fixes that were applied, per file and rule.")
@click.option("--ignore-noqa", is_flag=True, help="Report findings on lines with a `# noqa` comment too.")
@click.option("--stdin-filename", default=None, metavar="PATH", help="The name of the file read from stdin (for config, per-file-ignores and messages).")
@click.option("--force-exclude/--no-force-exclude", default=None, help="Apply excludes to paths named on the command line too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files that .gitignore ignores (default: on).")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOBS", help="Globs to exclude, replacing the defaults.")
@click.option("--extend-exclude", multiple=True, metavar="GLOBS", help="Globs to exclude on top of the defaults.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the lint cache (.pytorch_perflint_cache).")
@click.option("--file-timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS", help="Report a file that takes longer as not linted (default: 120; 0: no limit).")
@click.option("-w", "--watch", is_flag=True, help="Lint again whenever a file changes (Ctrl-C stops).")
@click.option("--show-settings", is_flag=True, help="Show the settings used for the first file, and exit.")
@click.option("--show-files", is_flag=True, help="List the files that would be linted, and exit.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only: no summary, progress bar, notes or warnings.")
@click.option("-s", "--silent", is_flag=True, help="Print nothing but errors; the exit code still tells findings apart.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True, help="Colour the report: on a terminal only, always, or never.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding (files only); exit 0.")
def check(paths: Tuple[str, ...], **flags: Any) -> None:
    """Lint PATHS (default: the current folder); `-` reads stdin."""
    from .config import ConfigError, load_settings, parse_config_arguments

    _refuse_conflicts(flags)
    stdin_filename: Optional[str] = flags["stdin_filename"]
    use_stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not use_stdin:
        _fail("`-` (stdin) cannot be combined with other paths")
    if use_stdin and (flags["watch"] or flags["show_files"] or flags["show_settings"]):
        _fail("stdin cannot be watched or listed; name the files instead")
    overrides: Dict[str, Any] = {name: _split(flags[name]) for name in ("select", "extend_select", "ignore", "fixable", "unfixable", "exclude", "extend_exclude")}
    overrides.update(
        output_format=flags["output_format"],
        target_torch_version=flags["target_torch_version"],
        preview=flags["preview"],
        fix=True if flags["fix_only"] else flags["fix"],
        unsafe_fixes=flags["unsafe_fixes"],
        force_exclude=flags["force_exclude"],
        respect_gitignore=flags["respect_gitignore"],
        ignore_noqa=True if flags["ignore_noqa"] else None,
        file_timeout=flags["file_timeout"],
    )
    config_start = [stdin_filename] if use_stdin and stdin_filename else list(paths)
    verbosity = SILENT if flags["silent"] else QUIET if flags["quiet"] else DEFAULT

    def settings_now():
        """The settings, read afresh (``--watch`` re-reads them after each change)."""
        config_file, inline = parse_config_arguments(flags["config_args"])
        return load_settings(config_start, config_file, overrides, inline=inline)

    try:
        settings = settings_now()
    except ConfigError as error:
        _fail(str(error))
    if verbosity >= DEFAULT:
        _warn_ineffective_selections(settings)
    if flags["add_noqa"]:
        conflicts = bool(flags["fix"] or flags["fix_only"] or flags["diff"] or flags["watch"])
        _add_noqa(paths, settings, use_stdin=use_stdin, conflicts=conflicts, quiet=verbosity < DEFAULT)
    if flags["show_files"] or flags["show_settings"]:
        sys.exit(_show(paths, settings, show_settings=flags["show_settings"]))

    report = _Reporting(
        output_file=flags["output_file"],
        color={"always": True, "never": False}.get(flags["color"]),
        verbosity=verbosity,
        statistics=flags["statistics"],
        show_fixes=flags["show_fixes"],
        fix_only=flags["fix_only"],
        diff=flags["diff"],
        exit_zero=flags["exit_zero"],
        exit_non_zero_on_fix=flags["exit_non_zero_on_fix"],
    )
    jobs, no_cache = flags["jobs"], flags["no_cache"]
    if flags["watch"]:
        from .watch import watch

        def run_again() -> None:
            try:
                fresh = settings_now()
            except ConfigError as error:
                click.echo(f"error: {error}", err=True)
                return
            _lint_and_report(paths, fresh, False, None, jobs, no_cache, report)

        sys.exit(watch(list(paths) or ["."], settings.config_path, run_again, quiet=verbosity < DEFAULT))
    code = _lint_and_report(paths, settings, use_stdin, stdin_filename, jobs, no_cache, report)
    # What the run built (a project's summaries, millions of objects) is out of the cyclic
    # collector's sight from here: Python's shutdown would otherwise spend a full
    # collection (a second on the torch package) finding no cycle in it.
    gc.freeze()
    sys.exit(code)


def _warn_ineffective_selections(settings) -> None:
    selectors = (*(settings.select or ()), *settings.extend_select)
    if not selectors or settings.preview:
        return  # nothing to warn about, and the rule catalogue is not loaded
    from . import registry

    for selector in registry.ineffective_selectors(selectors, settings.preview):
        click.echo(f"warning: Selection `{selector}` has no effect because preview is not enabled.", err=True)


def _show(paths: Tuple[str, ...], settings, *, show_settings: bool) -> int:
    """``--show-files`` / ``--show-settings``: print what a run would use; lint nothing."""
    from .discovery import discover
    from .show import files_lines, settings_lines

    found = discover(list(paths) or ["."], settings)
    for message in found.errors:
        click.echo(f"error: {message}", err=True)
    if show_settings:
        if not found.files:
            if not found.errors:
                click.echo("error: no Python files found under the given paths", err=True)
            return EXIT_ERROR
        lines = settings_lines(settings, found.files[0])
    else:
        lines = files_lines(found.files)
    for line in lines:
        click.echo(line)
    return EXIT_ERROR if found.errors else EXIT_OK


def _add_noqa(paths: Tuple[str, ...], settings, *, use_stdin: bool, conflicts: bool, quiet: bool) -> None:
    """``check --add-noqa``: suppress every finding in place; exit 0 (2 on an error)."""
    if use_stdin:
        _fail("--add-noqa changes files in place; it cannot read stdin")
    if conflicts:
        _fail("--add-noqa cannot be combined with --fix, --fix-only, --diff or --watch")
    from .discovery import discover
    from .noqa_edits import add_noqa

    found = discover(list(paths) or ["."], settings)
    done = add_noqa(found.files, settings)
    errors = [*found.errors, *(item.error for item in done if item.error)]
    for message in errors:
        click.echo(f"error: {message}", err=True)
    added = sum(item.added for item in done)
    skipped = sum(item.skipped for item in done)
    if not quiet:
        click.echo(f"Added {_plural(added, 'noqa directive')}.", err=True)
        if skipped:
            click.echo(f"warning: {_plural(skipped, 'finding')} left: no comment can end the lines they are on", err=True)
    sys.exit(EXIT_ERROR if errors else EXIT_OK)


# ----------------------------------------------------------------------------------------
# rules / rule


@main.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", help="Text (a table on a wide terminal, a list otherwise), or a JSON list of objects.")
def rules_command(output_format: str) -> None:
    """List every rule."""
    from .rules_list import rule_infos

    infos = rule_infos()
    if output_format == "json":
        import json

        click.echo(json.dumps(infos, indent=2))
        return
    from rich.console import Console

    from .rules_list import show

    show(infos, Console(highlight=False))


@main.command("rule")
@click.argument("code")
def rule_command(code: str) -> None:
    """Explain one rule, by code (TPF501) or name (data-parallel)."""

    from .rules_list import rule_page

    text = rule_page(code)
    if text is None:
        _fail(f"unknown rule {code!r}; `pytorch-perflint rules` lists them")
    assert text is not None
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        click.echo(text, nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
