"""Output formats: how a run's findings are written for people and for machines.

One module per format; ``emit`` picks one. Only ``full`` (and ``--statistics`` under it)
imports rich, so the machine formats stay cheap.

Internal errors and fixes that were not applied (``FileResult.errors`` / ``fix_errors``)
are NOT written by ``emit`` into ``stream``: a machine-readable stdout must stay parseable,
and a human wants them on stderr. The CLI prints ``format_errors(results)`` to stderr.
The SARIF log also carries them, as tool execution notifications.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, TextIO

from ..config import OUTPUT_FORMATS as FORMATS  # noqa: F401  (light: the settings own the list)
from ..types import FileResult, RunSummary


def emit(
    results: Sequence[FileResult],
    fmt: str,
    stream: TextIO,
    *,
    summary: RunSummary,
    statistics: bool = False,
    show_fixes: bool = False,
    root: Optional[Path] = None,
    color: Optional[bool] = None,
    unsafe_fixes: bool = False,
    quiet: bool = False,
) -> None:
    """Write ``results`` to ``stream`` in format ``fmt``.

    - ``summary``: the run's counts for the closing lines of ``full`` and ``concise``.
    - ``statistics``: counts per code instead of findings (``full``/``concise`` as a table,
      ``json`` as a list of ``{code, name, count, fixable_count}``); the other machine
      formats ignore it, they exist for machines that want every finding.
    - ``show_fixes``: list the fixes applied per file (``full`` and ``concise``).
    - ``root``: paths are shown relative to it (default: the current directory); a file
      outside it keeps the path it was given.
    - ``color``: True forces colour, False turns it off, None colours only a terminal.
    - ``unsafe_fixes``: the run has ``--unsafe-fixes``, so unsafe fixes get the ``[*]``
      marker and count as fixable. Without it only safe fixes are marked.
    - ``quiet``: findings only, no summary lines (ruff's ``--quiet``); machine formats
      have no summary to leave out.
    """
    if color is None and os.environ.get("NO_COLOR"):
        color = False  # https://no-color.org: a terminal gets none either (--color always wins)
    if fmt == "full":
        from . import full

        full.write(
            results,
            stream,
            summary=summary,
            statistics=statistics,
            show_fixes=show_fixes,
            root=root,
            color=color,
            unsafe_fixes=unsafe_fixes,
            quiet=quiet,
        )
    elif fmt == "concise":
        from . import concise, statistics as stats

        if statistics:
            stats.write_text(stats.compute(results, unsafe_fixes=unsafe_fixes), stream)
            if not quiet:
                concise.write_summary(summary, stream, unsafe_fixes=unsafe_fixes)
        else:
            concise.write(
                results,
                stream,
                summary=summary,
                show_fixes=show_fixes,
                root=root,
                unsafe_fixes=unsafe_fixes,
                quiet=quiet,
                color=color if color is not None else _isatty(stream),
            )
    elif fmt == "json":
        from . import json as json_format, statistics as stats

        if statistics:
            json_format.dump(stats.objects(stats.compute(results, unsafe_fixes=unsafe_fixes)), stream)
        else:
            json_format.write(results, stream)
    elif fmt == "json-lines":
        from . import json_lines

        json_lines.write(results, stream)
    elif fmt == "junit":
        from . import junit

        junit.write(results, stream, root=root)
    elif fmt == "github":
        from . import github

        github.write(results, stream, root=root)
    elif fmt == "gitlab":
        from . import gitlab

        gitlab.write(results, stream, root=root)
    elif fmt == "pylint":
        from . import pylint

        pylint.write(results, stream, root=root)
    elif fmt == "sarif":
        from . import sarif

        sarif.write(results, stream, summary=summary, root=root)
    else:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def format_errors(results: Sequence[FileResult]) -> List[str]:
    """Lines for stderr: ``error: ...`` for internal errors, ``warning: ...`` for fixes
    that were not applied. Each message already names its file."""
    lines: List[str] = []
    for result in sorted(results, key=lambda r: str(r.path)):
        lines.extend(f"error: {text}" for text in result.errors)
        lines.extend(f"warning: {text}" for text in result.fix_errors)
    return lines


__all__ = ["FORMATS", "emit", "format_errors"]
