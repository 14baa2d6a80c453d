"""Where the language server lints: a few threads, each document on its own, the newest
request first, and a lint that an edit made useless stopped.

One worker thread for every lint made a 14-line file wait 46 s behind a 50,000-line
buffer. Here ``LANES`` threads take jobs newest first (the document just typed in before
the one opened a while ago), and ``cancel`` stops a job: one still waiting never starts;
one running gets ``Cancelled`` raised in its thread at its next Python instruction.
``Cancelled`` is a ``BaseException``, so the engine's handlers of rule crashes (``except
Exception``) do not take it for a crash and go on.

The threads have the large stack and recursion limit of ``workers.call_deep``: valid but
deeply nested code needs them.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from concurrent.futures import Future
from typing import Any, Callable, List, Optional

from ..workers import DEEP_RECURSION_LIMIT, DEEP_STACK_BYTES

LANES = 3


class Cancelled(BaseException):
    """Raised in a lint's thread when an edit made its result useless."""


def _raise_in(ident: int, error: Optional[type]) -> None:
    """Raise ``error`` in thread ``ident`` at its next instruction (None: clear a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(error) if error else None)


class Job:
    """One call on a lane: its future, and the thread running it once it started."""

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.future: "Future[Any]" = Future()
        self.lock = threading.Lock()
        self.thread: Optional[int] = None  # set while it runs
        self.cancelled = False


class Lanes:
    """``count`` threads running jobs, the most recently submitted first."""

    def __init__(self, count: int = LANES) -> None:
        self._waiting: List[Job] = []
        self._ready = threading.Condition()
        if sys.getrecursionlimit() < DEEP_RECURSION_LIMIT:
            sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
        try:
            previous: Optional[int] = threading.stack_size(DEEP_STACK_BYTES)
        except (ValueError, RuntimeError):  # a platform that does not let us choose
            previous = None
        try:
            for number in range(count):
                threading.Thread(target=self._serve, name=f"pytorch-perflint-lint-{number}", daemon=True).start()
        finally:
            if previous is not None:
                threading.stack_size(previous)

    def submit(self, function: Callable[[], Any]) -> Job:
        job = Job(function)
        with self._ready:
            self._waiting.append(job)
            self._ready.notify()
        return job

    def cancel(self, job: Job) -> None:
        """Stop ``job``: dropped if it waits, interrupted if it runs."""
        with self._ready:
            if job in self._waiting:
                self._waiting.remove(job)
                job.future.cancel()
                return
        with job.lock:
            job.cancelled = True
            if job.thread is not None:
                _raise_in(job.thread, Cancelled)

    def _serve(self) -> None:
        while True:
            with self._ready:
                while not self._waiting:
                    self._ready.wait()
                job = self._waiting.pop()  # the newest first
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                self._run(job)
            except Cancelled:  # arrived between the job's end and the lane's bookkeeping
                if not job.future.done():
                    job.future.set_exception(Cancelled())

    def _run(self, job: Job) -> None:
        with job.lock:
            if job.cancelled:
                job.future.set_exception(Cancelled())
                return
            job.thread = threading.get_ident()
        try:
            value = job.function()
            error: Optional[BaseException] = None
        except BaseException as raised:  # noqa: BLE001 - handed to the waiting coroutine
            value, error = None, raised
        with job.lock:
            job.thread = None
            _raise_in(threading.get_ident(), None)  # one raised after the function ended
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(value)
