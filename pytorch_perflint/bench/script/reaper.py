"""Ending every process of a run, including those that left its process group.

A run starts in a session of its own, and killing that process group ends the script and
the children that stayed in it. A child that calls ``os.setsid()`` (a daemon, a detached
logger) leaves the group, and once its parent dies it is re-parented to init: it would
outlive bench and keep writing. On Linux bench therefore makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``) while a run lasts: orphans of the run are re-parented to
bench instead, so every process the run started stays a descendant of bench, and the end
of the run kills every descendant that did not exist before it began (found through
``/proc``), then reaps them. Where that is not available only the process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Dict, FrozenSet, Set

PR_SET_CHILD_SUBREAPER = 36
_PROC = "/proc"


def set_subreaper(on: bool) -> bool:
    """Make this process the subreaper of its descendants (Linux); False where it cannot."""
    if not os.path.isdir(_PROC) or not hasattr(os, "getpid"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> Dict[int, int]:
    """pid -> parent pid of every process /proc shows."""
    found: Dict[int, int] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            found[int(name)] = int(fields[1])
    return found


def descendants(pid: int) -> Set[int]:
    """Every process below ``pid`` (children, their children...)."""
    children: Dict[int, list] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: Set[int] = set()
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        if child not in found:
            found.add(child)
            todo.extend(children.get(child, ()))
    return found


def snapshot() -> FrozenSet[int]:
    """This process's descendants now: what ending a run must leave alone."""
    return frozenset(descendants(os.getpid()))


def end_run(process: subprocess.Popen, keep: FrozenSet[int], rounds: int = 100) -> int:
    """Kill the run's process group and every other process the run started (descendants
    of bench not in ``keep``); reap them. Returns how many stray processes were killed."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
        pass
    if not os.path.isdir(_PROC):
        return 0
    me = os.getpid()
    killed: Set[int] = set()
    for _ in range(rounds):
        parents = _parents()
        stray = descendants(me) - keep - {process.pid}
        if not stray:
            break
        for pid in stray:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
            if parents.get(pid) == me:
                try:
                    os.waitpid(pid, os.WNOHANG)  # a killed orphan re-parented to bench
                except ChildProcessError:
                    pass
        time.sleep(0.01)
    return len(killed)
