"""``check --watch``: lint once, then again after every change to a Python file, a notebook
or a config file, until Ctrl-C (ruff's watch mode, on ``watchfiles``)."""

from __future__ import annotations

import datetime
import os
import sys
from typing import Callable, List, Optional, Sequence

from .config import STANDALONE_NAMES
from .discovery import PYTHON_SUFFIXES

CONFIG_NAMES = frozenset((*STANDALONE_NAMES, "pyproject.toml"))
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


def relevant(path: str) -> bool:
    """Whether a change to ``path`` can change the report: its own findings, or settings."""
    name = os.path.basename(path)
    return name.endswith(PYTHON_SUFFIXES) or name in CONFIG_NAMES


def _note(message: str, quiet: bool) -> None:
    if not quiet:
        stamp = datetime.datetime.now().strftime("%H:%M:%S")
        print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


# Cursor home, clear the screen, clear the scrollback (xterm's E3): what ruff's watch mode
# writes (the `clearscreen` crate). Without the last, terminals that scroll a cleared screen
# into their history (VS Code's, tmux) kept every earlier report above the new one.
CLEAR_SCREEN = "\x1b[H\x1b[2J\x1b[3J"


def _clear_screen() -> None:
    """Clear the terminal before a run's report; never when the report is not going to a
    terminal (a pipe or a file keeps every report, with no escape codes)."""
    if sys.stdout.isatty():
        sys.stdout.write(CLEAR_SCREEN)
        sys.stdout.flush()


def watch(
    paths: Sequence[str],
    config_path: Optional[str],
    run: Callable[[], None],
    *,
    quiet: bool = False,
    debounce_ms: int = 300,
) -> int:
    """Run ``run`` now and after each batch of relevant changes under ``paths`` (and to the
    config file); returns the exit code once Ctrl-C stops it."""
    try:
        import watchfiles
    except ImportError:  # pragma: no cover - a declared dependency
        print("error: --watch needs watchfiles: pip install watchfiles", file=sys.stderr)
        return 2

    class _Filter(watchfiles.DefaultFilter):
        def __call__(self, change: "watchfiles.Change", path: str) -> bool:
            return relevant(path) and super().__call__(change, path)

    targets: List[str] = [p for p in paths if os.path.exists(p)]
    if config_path and os.path.exists(config_path):
        targets.append(config_path)
    try:
        _clear_screen()
        _note("Starting linter in watch mode...", quiet)
        run()
        sys.stdout.flush()
        for _changes in watchfiles.watch(*targets, watch_filter=_Filter(), debounce=debounce_ms, raise_interrupt=True):
            _clear_screen()
            _note("File change detected...", quiet)
            run()
            sys.stdout.flush()
    except KeyboardInterrupt:
        _note("Stopped.", quiet)
        return EXIT_INTERRUPTED
    return 0
