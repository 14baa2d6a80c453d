"""Linting (and fixing) many files: read, decode, lint or fix, write back; in parallel.

Each file is handled on its own by ``process_file``, which never raises: a file that cannot
be read or decoded, or a crash while linting it, becomes part of that file's
``FileResult`` and the run goes on. Files are worked on in worker processes (``workers``),
so that one that hangs or crashes its process is reported and the run goes on too. Fixed
files are written by ``safe_write``: atomically, only when the file on disk is still the
one that was read, and never through a symlink that leaves the linted roots.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import gc
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type

from .config import Settings
from .decoding import Undecodable, decode
from .progress import LongFileStatus
from .types import Applicability, FileResult, RunSummary
from .cache import Stamp as _Stamp
from .run_cache import Done as _Done, LazyProjects, cache_lookup as _cache_lookup, merge as _merge, open_cache as _open_cache
from .run_cache import built_state as _built_state, prepare_projects as _prepare_projects, save_project as _save_project, stamp_of as _stamp_of
from .run_cache import in_order as _in_order, summaries_built as _summaries_built
from .fix_passes import Reads, fix_until_settled
from .tree_files import read_source, stat_key

# The project layer, the workers and the writers are imported where they are used: a warm
# run that the cache answers whole needs none of them.
if TYPE_CHECKING:
    from .project.linted import RunProjects
    from .run_summaries import Passed
    from .safe_write import NotWritten
    from .selection import Selection

# Below this many files one worker does them all: more would cost more than they save.
PARALLEL_MIN_FILES = 8
# Show a progress bar (on a terminal) from this many files on.
PROGRESS_MIN_FILES = 50


class Mode(str, enum.Enum):
    """What a run does to the files: report, fix in place, or show the fixes as a diff."""

    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"

    def __str__(self) -> str:
        return self.value


def _note(problem: NotWritten, errors: List[str], fix_errors: List[str]) -> None:
    """A write that failed is an error (exit 2); a fix skipped on purpose, a warning."""
    (errors if problem.error else fix_errors).append(problem.message)


@dataclass(frozen=True)
class Processed:
    """One file's result, plus the fixed bytes (for stdin, where they go to stdout)."""

    result: FileResult
    output: Optional[bytes] = None


def _undecodable(path: Path, reason: str, chosen: Selection) -> FileResult:
    from . import engine

    if "TPF001" not in chosen.codes:
        return FileResult(path)
    return FileResult(path, diagnostics=(engine.undecodable(path, reason),))


def process_bytes(
    data: bytes,
    path: Path,
    settings: Settings,
    mode: Mode,
    *,
    with_edits: bool = False,
    write: bool = True,
    rules: Optional[Sequence[Type]] = None,
    roots: Optional[Sequence[str]] = None,
    project=None,
    passed: Optional["Passed"] = None,
) -> Processed:
    """Lint or fix one file's bytes. With ``write`` (and mode FIX) the fix goes to ``path``,
    unless that leaves ``roots`` (see ``safe_write.write_fixed``). ``project``: the index of
    the file's project (``project.linted``), None for a file on its own. ``passed``: the
    rules the summarising phase's screens let through (a check of that same text)."""
    from . import engine, fixer
    from .run_summaries import checked
    from .safe_write import write_fixed
    from .selection import for_file
    from .transform import unified_diff

    chosen = for_file(path, settings, rules)  # once per file: nothing below works it out again
    if path.suffix == ".ipynb":
        return _process_notebook(data, path, settings, mode, with_edits=with_edits, write=write, chosen=chosen, roots=roots, project=project)
    try:
        decoded = decode(data)
    except Undecodable as error:
        return Processed(_undecodable(path, str(error), chosen), data)
    text = decoded.text
    if mode is Mode.CHECK:
        codes = passed.for_text(text) if passed is not None else None
        lint = engine.lint_source(text, path, settings, with_edits=with_edits, selection=chosen, keep_module=False, project=project, passed=codes)
        return Processed(checked(path, lint), data)

    outcome = fixer.fix_source(text, path, settings, selection=chosen, with_edits=with_edits, project=project)
    diagnostics, fixed, source = outcome.diagnostics, outcome.fixed, outcome.source
    errors, fix_errors = list(outcome.errors), list(outcome.fix_errors)
    output = data
    diff = None
    if fixed and source != text:
        encoded: Optional[bytes]
        try:
            encoded = source.encode(decoded.encoding)
        except UnicodeEncodeError as error:
            fix_errors.append(f"{path}: fix not applied: the fixed text cannot be encoded as {decoded.encoding} ({error.reason})")
            encoded = None
        if encoded is not None and mode is Mode.DIFF:
            diff = unified_diff(path.as_posix(), text, source)
        elif encoded is not None and write:
            problem = write_fixed(path, data, encoded, roots)
            if problem is not None:
                _note(problem, errors, fix_errors)
                encoded = None
        if encoded is None:
            # Nothing was applied: report what the file still has.
            lint = engine.lint_source(text, path, settings, with_edits=with_edits, selection=chosen, project=project)
            diagnostics, fixed, source = tuple(lint.diagnostics), 0, text
        else:
            output = encoded
    else:
        fixed = 0
    result = FileResult(
        path, tuple(diagnostics), fixed=fixed, diff=diff, errors=tuple(errors), fix_errors=tuple(fix_errors),
        source=source if diagnostics else None, fixes=outcome.fixes if fixed else (),
        found_before_fix=outcome.found_before if fixed else None,
    )
    return Processed(result, output)


def _process_notebook(
    data: bytes,
    path: Path,
    settings: Settings,
    mode: Mode,
    *,
    with_edits: bool,
    write: bool,
    chosen: "Selection",
    roots: Optional[Sequence[str]] = None,
    project=None,
) -> Processed:
    """A notebook: its code cells are linted (and fixed) as one source, reported per cell."""
    from . import engine, fixer, notebook
    from .safe_write import write_fixed
    from .transform import unified_diff

    try:
        book = notebook.load(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, notebook.NotebookError) as error:
        return Processed(_undecodable(path, str(error), chosen), data)
    if mode is Mode.CHECK:
        lint = engine.lint_source(book.source, path, settings, with_edits=False, selection=chosen, project=project)
        diagnostics, errors, fixed, fix_errors, output, diff = lint.diagnostics, lint.errors, 0, [], data, None
    else:
        outcome = fixer.fix_source(book.source, path, settings, selection=chosen, project=project)
        diagnostics, errors, fixed = outcome.diagnostics, list(outcome.errors), outcome.fixed
        fix_errors, output, diff = list(outcome.fix_errors), data, None
        if fixed:
            try:
                new_text = notebook.dump(book, outcome.source)
            except notebook.NotebookError as error:
                new_text = None
                fix_errors.append(f"{path}: {error}")
            if new_text is not None and mode is Mode.DIFF:
                diff = unified_diff(path.as_posix(), data.decode("utf-8-sig"), new_text)
            elif new_text is not None:  # without ``write`` (stdin) the caller prints ``output``
                encoded = (b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b"") + new_text.encode("utf-8")
                problem = write_fixed(path, data, encoded, roots) if write else None
                if problem is None:
                    output = encoded
                else:
                    _note(problem, errors, fix_errors)
                    new_text = None
            if new_text is None:
                lint = engine.lint_source(book.source, path, settings, with_edits=False, selection=chosen, project=project)
                diagnostics, fixed = lint.diagnostics, 0
    # After a fix, the rows of the fixed source: a fix that adds lines moves later cells.
    mapped = notebook.cell_diagnostics(book, diagnostics, outcome.source if mode is not Mode.CHECK and fixed else None)
    result = FileResult(path, mapped, fixed=fixed, diff=diff, errors=tuple(errors), fix_errors=tuple(fix_errors))
    if mapped:  # the notebook the findings are about (fixed, with --fix or --diff): code frames
        shown = new_text if mode is not Mode.CHECK and fixed and new_text is not None else data.decode("utf-8-sig", errors="replace")
        result = dataclasses.replace(result, source=shown)
    if mode is not Mode.CHECK and fixed:
        result = dataclasses.replace(result, fixes=outcome.fixes, found_before_fix=outcome.found_before)
    return Processed(result, output)


def process_file(
    path: Path,
    settings: Settings,
    mode: Mode = Mode.CHECK,
    with_edits: bool = False,
    rules: Optional[Sequence[Type]] = None,
    roots: Optional[Sequence[str]] = None,
    project=None,
    passed: Optional["Passed"] = None,
) -> FileResult:
    """One file, start to end; never raises (a crash becomes the file's error)."""
    try:
        data = read_source(path, settings.max_file_size if path.suffix != ".ipynb" else 0)
    except OSError as error:
        return FileResult(path, errors=(f"{path}: cannot read: {error.strerror or error}",))
    if isinstance(data, int):  # too large: not read (a notebook's code is measured when joined)
        from .unanalysed import too_large_result

        return too_large_result(path, data, settings, rules)
    try:
        return process_bytes(data, path, settings, mode, with_edits=with_edits, rules=rules, roots=roots, project=project, passed=passed).result
    except MemoryError:
        raise  # past the worker's cap: the workers report it (TPF003)
    except Exception as error:  # noqa: BLE001 - one file's crash must not stop the run
        return FileResult(path, errors=(_internal_error(path, error),))


def _lint_task(path: Path, **options) -> _Done:
    """``_linted``, with the count of the summaries built for it (the run's accounting)."""
    return dataclasses.replace(_linted(path, **options), summarised=_summaries_built(None, own_only=True))


def _linted(
    path: Path,
    settings: Settings,
    mode: Mode,
    with_edits: bool,
    rules: Optional[Sequence[Type]],
    roots: Optional[Sequence[str]],
    projects: Optional[RunProjects],
    stamped: bool = False,
    passed: Optional[Mapping[Path, "Passed"]] = None,
) -> _Done:
    """``process_file`` with the index of the file's project, recording the project modules
    the rules read (for the cache, with the file's stat key and digest). ``passed``: what
    the screens of the summarising phase let through, by file."""
    project = projects.for_file(path) if projects is not None else None
    key = stat_key(str(path))  # before the read: a change meanwhile shows next run
    if project is None:  # a file of no project: its result depends on its text alone
        result = process_file(path, settings, mode, with_edits, rules, roots)
        if not stamped or result.errors:
            return _Done(result)
        try:
            data = path.read_bytes()
        except OSError:
            return _Done(result)
        return _Done(result, _Stamp(key, hashlib.sha256(data).hexdigest()) if stat_key(str(path)) == key else None)
    inherited = project.graph_state() is not None
    with project.recording() as used:
        result = process_file(path, settings, mode, with_edits, rules, roots, project=project, passed=passed.get(path) if passed else None)
    # The text last linted is the file's now (fixed and written, or as it was read).
    project.settle(path, stat_key(str(path)) if result.fixed else key)
    if mode is Mode.FIX:  # what the findings read, for the next pass (``fix_passes``)
        return _Done(result, reads=Reads.of(used, project.root))
    if not stamped or result.errors:
        return _Done(result)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return _Done(result)
    if stat_key(str(path)) != key:
        return _Done(result)  # changed while it was linted: not cached
    stamped_as = _stamp_of(projects, project, path, key, digest, used)  # type: ignore[arg-type]
    summaries = (project.root, projects.new_entries(project))  # type: ignore[union-attr]
    if stamped_as is None:  # not kept, but the project's state is when this lint built it
        state = None if inherited else _built_state(project, used)
        return _Done(result, None, summaries, (project.root, state) if state is not None else None)
    stamp, state = stamped_as
    return _Done(result, stamp, summaries, (project.root, state) if state is not None and not inherited else None)


def _internal_error(path: Path, error: BaseException) -> str:
    import traceback

    detail = "".join(traceback.format_exception_only(type(error), error)).strip()
    return f"{path}: internal error: {detail}"


def _time_limit(settings: Settings) -> Optional[float]:
    return settings.file_timeout or None


def _isolated(files: Sequence[Path], work: Callable[[Path], _Done], jobs: int, settings: Settings) -> Iterator[_Done]:
    """Results in the order of ``files``, each file worked on in a worker process that is
    stopped when it passes the time limit (see ``workers``)."""
    from .unanalysed import failed_result
    from .workers import Failure, memory_limit_for, run_tasks

    values = run_tasks(work, files, jobs=jobs, time_limit=_time_limit(settings), memory_limit=memory_limit_for(settings.max_file_size))
    try:
        for path, value in zip(files, values):
            yield _Done(failed_result(path, value, settings)) if isinstance(value, Failure) else value
    finally:
        values.close()  # stop the workers now, also when the run is cut short


def _stdin_work(path: Path, data: bytes, settings: Settings, mode: Mode, with_edits: bool, project=None) -> Processed:
    try:
        return process_bytes(data, path, settings, mode, with_edits=with_edits, write=False, project=project)
    except Exception as error:  # noqa: BLE001 - reported as this file's error
        return Processed(FileResult(path, errors=(_internal_error(path, error),)), data)


def process_stdin(data: bytes, path: Path, settings: Settings, mode: Mode, *, with_edits: bool = False) -> Processed:
    """Lint or fix bytes read from stdin (nothing is written), under the same time limit
    and in the same kind of worker as files. The text counts as the module at ``path`` of
    its project (``--stdin-filename``), whose other modules are read from disk."""
    from . import registry
    from .project.linted import RunProjects
    from .unanalysed import failed_result
    from .workers import Failure, memory_limit_for, run_tasks

    registry.all_rules()  # once, here: the forked worker inherits them
    project = RunProjects(settings).for_file(path)
    work = functools.partial(_stdin_work, data=data, settings=settings, mode=Mode(mode), with_edits=with_edits, project=project)
    values = run_tasks(work, [path], jobs=1, time_limit=_time_limit(settings), memory_limit=memory_limit_for(settings.max_file_size))
    try:
        (value,) = list(values)
    finally:
        values.close()
    if isinstance(value, Failure):
        return Processed(failed_result(path, value, settings), data)
    return value


def run(
    files: Sequence[Path],
    settings: Settings,
    *,
    mode: Mode = Mode.CHECK,
    jobs: Optional[int] = None,
    with_edits: bool = False,
    progress: bool = False,
    rules: Optional[Sequence[Type]] = None,
    use_cache: bool = False,
    roots: Optional[Sequence[str]] = None,
    reads: Optional[Dict[Path, Reads]] = None,
) -> Tuple[List[FileResult], RunSummary]:
    """Lint (or fix) every file; results in the order of ``files``.

    ``jobs`` worker processes (default: one per CPU); one for few files. Every file is
    linted in a worker, so that one that passes ``settings.file_timeout`` can be stopped
    (``workers``). ``rules`` are test-only rule classes (forked workers inherit them).
    ``progress`` shows a bar on stderr when it is a terminal and there are many files.
    ``roots``: the paths the run was asked to lint; a fix is never written through a
    symlink that leads out of them (None: each file is its own root). Each file is linted
    with the index of its project (one per root, made here, inherited by the workers).
    With the cache, unchanged files are answered from ``stat`` alone. A fix run goes pass
    after pass (``fix_passes``); ``reads``: one pass, noting what each file's rules read.
    """
    mode = Mode(mode)
    if mode is Mode.FIX and reads is None:
        again = functools.partial(run, settings=settings, mode=mode, jobs=jobs, with_edits=with_edits, progress=progress, rules=rules, roots=roots)
        results = fix_until_settled(files, lambda batch, noted: again(batch, reads=noted)[0])
        return results, summarize(results, settings, mode)
    jobs = max(1, jobs or os.cpu_count() or 1)
    built = _summaries_built(None)  # from here on, this run's
    cache = None
    lazy = LazyProjects(settings)
    if use_cache and mode is Mode.CHECK and rules is None and files:
        cache = _open_cache(settings, with_edits, [Path(r) for r in roots] if roots else list(files), lazy)
    cached: dict = {}
    todo = list(files)
    if cache is not None:
        todo = []
        for path in files:
            hit = _cache_lookup(cache, path)
            if hit is None:
                todo.append(path)
            else:
                cached[path] = hit
    if cache is not None and not todo:  # the warm path: nothing else is imported or made
        results = [cached[path] for path in files]
        cache.save()
        return results, dataclasses.replace(summarize(results, settings, mode), summarised=_summaries_built(built))
    from .run_summaries import Passed, Screen, summarise_projects
    from .safe_write import real_roots

    real = real_roots(roots) if roots is not None else None
    projects = lazy.get()
    if todo:
        # Import the engine and discover the rules once, here: forked workers inherit them.
        from . import engine, fixer, registry  # noqa: F401

        registry.all_rules()
        if cache is not None:
            _prepare_projects(projects, todo, cache, many=len(todo) >= PARALLEL_MIN_FILES)
    workers = min(jobs, len(todo)) if len(todo) >= PARALLEL_MIN_FILES else 1
    screened: Dict[Path, _Done] = {}
    passed: Dict[Path, Passed] = {}
    if len(todo) >= PARALLEL_MIN_FILES:
        screen = Screen(settings, with_edits, rules, cache is not None) if mode is Mode.CHECK else None
        screened, passed, count = summarise_projects(projects, todo, workers, _time_limit(settings), screen)
        built.append(count)
    projects.hand_over()
    # The indexes live for the whole run: out of the collector's sight (here and in the
    # workers forked now), or every full collection scans their millions of objects.
    frozen = bool(todo) and projects.indexes and gc.isenabled()
    if frozen:
        gc.freeze()
    work = functools.partial(
        _lint_task,
        settings=settings,
        mode=mode,
        with_edits=with_edits,
        rules=rules,
        roots=real,
        projects=projects,
        stamped=cache is not None,
        passed=passed,
    )
    fresh = _isolated([p for p in todo if p not in screened], work, workers, settings)
    states: Dict[str, object] = {}
    stream = _merge(files, cached, _in_order(todo, screened, fresh, reads, built), cache, projects, states)
    show = progress and len(files) >= PROGRESS_MIN_FILES and sys.stderr.isatty()
    # Few files: while a long one is worked on, a status line says so instead of the bar.
    status = LongFileStatus("Fixing" if mode is Mode.FIX else "Checking") if progress and not show and sys.stderr.isatty() else None
    results: List[FileResult] = []
    try:
        if show:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("Fixing" if mode is Mode.FIX else "Checking", total=len(files))
                for result in stream:
                    results.append(result)
                    bar.advance(task)
        elif status is not None:
            with status:
                for path in files:
                    status.waiting(path)
                    results.append(next(stream))
        else:
            results.extend(stream)
    finally:
        fresh.close()  # on Ctrl-C: stop the workers before the interrupt goes on
        if frozen:
            gc.unfreeze()
    if cache is not None:
        if todo:
            _save_project(projects, cache, states)
        cache.save()
    counts = {"linted": len(todo), "summarised": _summaries_built(built)}
    return results, dataclasses.replace(summarize(results, settings, mode), **counts)


def summarize(results: Sequence[FileResult], settings: Settings, mode: Mode) -> RunSummary:
    """Counts for the summary line and the exit code."""
    fixable = None  # every code's fixes may be applied: the selectors are not expanded
    if settings.fixable is not None or settings.unfixable:
        from .selection import fixable_codes

        fixable = fixable_codes(settings)
    safe = unsafe = remaining = 0
    for result in results:
        remaining += len(result.diagnostics)
        for diagnostic in result.diagnostics:
            fix = diagnostic.fix
            if fix is None or fix.applicability is Applicability.DISPLAY_ONLY:
                continue
            if fixable is not None and diagnostic.code not in fixable:
                continue
            if fix.applicability is Applicability.SAFE or settings.unsafe_fixes:
                safe += 1
            else:
                unsafe += 1
    return RunSummary(
        files_checked=len(results),
        fixed=sum(r.fixed for r in results),
        found_before_fix=sum(len(r.diagnostics) + r.fixed if r.found_before_fix is None else r.found_before_fix for r in results),
        remaining=remaining,
        fixable_safe=safe,
        fixable_unsafe=unsafe,
        errors=sum(len(r.errors) for r in results),
        fix_mode=mode is Mode.FIX,
        diff_mode=mode is Mode.DIFF,
    )
