"""Per-file work in worker processes that the run can stop: a time limit, crashes, Ctrl-C.

Why not ``ProcessPoolExecutor``: it cannot stop a task that is running, so one file that
never finishes stalls the whole run, and a Ctrl-C can leave it waiting on its workers
forever. Here each worker works on one task at a time, with the next one waiting in its
own pipe, and says when it starts one, so the parent knows which file every worker is on
and since when. A worker past the time limit is stopped (its file is reported, a fresh
worker takes the tasks that were waiting); a file whose worker died is retried once in a
fresh worker; Ctrl-C stops every worker at once. Workers ignore SIGINT (a
terminal sends it to the whole process group): only the parent decides what stops.

Every run goes through workers, a run of one file or of stdin included, so that the limit
holds everywhere. On Linux workers are forked: they start in milliseconds and inherit the
loaded rules and the work function (nothing is pickled but tasks and results). Elsewhere they
are spawned. Where no process can be started at all, the work is done in this process,
without a time limit.

Inside a worker, tasks run in a thread with a large stack and a high recursion limit: valid
Python can nest deeper than the default limit of 1,000 frames lets LibCST walk (a long
implicit string concatenation is a chain of nested nodes).
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, TypeVar, Union

T = TypeVar("T")
R = TypeVar("R")

# The stack of the thread that runs the work (reserved, not used, until deep code needs it)
# and the recursion limit in it: deep enough for anything CPython itself compiles.
DEEP_STACK_BYTES = 256 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000
# How long stopping the workers may take before they are killed outright.
STOP_GRACE_SECONDS = 1.0
# A file whose worker died is tried this many times in all.
CRASH_ATTEMPTS = 2
# Tasks given to a worker ahead: the next one is there when it finishes one, so it never
# waits for a busy parent.
QUEUE_DEPTH = 2


# How often a worker checks that its parent is still there (where the kernel cannot say).
PARENT_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Failure:
    """Why a task gave no result: it ran past the time limit, its worker died, or it ran
    out of the memory allowed per task (``out_of_memory``: a file too large or complex)."""

    timed_out: bool
    detail: str
    out_of_memory: bool = False


def memory_limit_for(max_file_size: int) -> Optional[int]:
    """The memory a worker may add to what it started with, in bytes: 1.5 GiB per MiB of
    the largest file analysed (linting needs about 0.9 GB of address space per MB), at
    least 6 GiB; None (no limit) when file sizes are not limited either."""
    if not max_file_size:
        return None
    return max(6 << 30, max_file_size * 1536)


def _cap_memory(extra: Optional[int]) -> None:
    """Cap this process's address space at its present size plus ``extra`` bytes (Linux):
    past it an allocation fails (MemoryError, or LibCST's native parser aborts) instead of
    the machine swapping or its OOM killer choosing a victim."""
    if extra is None or not sys.platform.startswith("linux"):
        return
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as handle:
            size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + extra
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if soft == resource.RLIM_INFINITY or cap < soft:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        pass


def _die_with_parent(parent: int) -> None:
    """End this worker when the process that started it dies (``kill -9`` included): on
    Linux the kernel sends SIGTERM (PR_SET_PDEATHSIG); everywhere a thread watches the
    parent's pid. Without it a worker whose parent was killed finished its queue and
    then waited forever (its siblings hold the pipe open)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the above took effect
        _on_terminate(signal.SIGTERM, None)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                _on_terminate(signal.SIGTERM, None)

    threading.Thread(target=watch, name="pytorch-perflint-parent-watch", daemon=True).start()


def call_deep(function: Callable[..., R], *args: Any) -> R:
    """``function(*args)`` in a thread with a large stack and a high recursion limit;
    returns its result or raises its exception."""
    outcome: List[Any] = []

    def target() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            outcome.append((False, error))

    if sys.getrecursionlimit() < DEEP_RECURSION_LIMIT:
        sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
    try:
        previous = threading.stack_size(DEEP_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that does not let us choose
        previous = None
    try:
        thread = threading.Thread(target=target, name="pytorch-perflint-deep", daemon=True)
        thread.start()
    finally:
        if previous is not None:
            threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


# -- sections a stop must not cut -------------------------------------------------------

# Held while a file is being replaced; a worker told to stop waits for it.
_WRITING = threading.Lock()
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """A section that must run to its end once begun (replacing a file): a worker told to
    stop (SIGTERM) exits only after it, and in this thread Ctrl-C waits until it ends."""
    masked = hasattr(signal, "pthread_sigmask")
    with _WRITING:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if masked else None
        try:
            yield
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _on_terminate(signum: int, frame: Any) -> None:
    with _WRITING:  # a write in progress ends first
        os._exit(128 + signum)


# -- the worker side ---------------------------------------------------------------------

_STOP = None
_STARTED, _DONE = "started", "done"


def _worker_main(conn: Any, work: Callable[[Any], Any], parent: int, memory: Optional[int] = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_terminate)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent(parent)
    call_deep(_serve, conn, work, memory)


def _serve(conn: Any, work: Callable[[Any], Any], memory: Optional[int] = None) -> None:
    _cap_memory(memory)  # here: the deep stack is reserved already, it is not the file's
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is _STOP:
            return
        index, task = message
        try:
            conn.send((_STARTED, index, None))  # the time limit runs from here
        except (EOFError, OSError):
            return
        try:
            value = work(task)
        except MemoryError:
            value = Failure(False, "it ran out of the memory allowed per file", out_of_memory=True)
        except Exception as error:  # noqa: BLE001 - the parent reports it for this task
            value = Failure(False, "".join(traceback.format_exception_only(type(error), error)).strip())
        try:
            conn.send((_DONE, index, value))
        except (EOFError, OSError):
            return
        except Exception as error:  # noqa: BLE001 - a result that does not pickle
            conn.send((_DONE, index, Failure(False, f"the result could not be sent back: {error}")))


# -- the parent side ---------------------------------------------------------------------


def _context() -> Any:
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back while a worker is forked, so the child never sees it before it
    has learnt to ignore it; a Ctrl-C meanwhile reaches this process right after."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Worker:
    """One worker process, the tasks it was given (at most ``QUEUE_DEPTH``, so it never
    waits for the next one) and when the one it is on started."""

    def __init__(self, context: Any, work: Callable[[Any], Any], memory: Optional[int] = None) -> None:
        self.memory = memory
        self.conn, child = context.Pipe()
        args = (child, work, os.getpid(), memory)
        self.process = context.Process(target=_worker_main, args=args, daemon=True, name="pytorch-perflint-worker")
        try:
            with _sigint_blocked():
                self.process.start()
        finally:
            child.close()
        self.queue: Deque[int] = collections.deque()  # indices given, oldest first
        self.started: Optional[int] = None  # the index it said it began
        self.deadline: Optional[float] = None

    @property
    def busy(self) -> bool:
        return bool(self.queue)

    def give(self, index: int, task: Any) -> None:
        self.conn.send((index, task))
        self.queue.append(index)

    def receive(self, time_limit: Optional[float], done: Dict[int, Any]) -> bool:
        """Take in every message waiting; False when the worker is gone."""
        try:
            while self.conn.poll():
                kind, index, value = self.conn.recv()
                if kind == _STARTED:
                    self.started = index
                    self.deadline = time.monotonic() + time_limit if time_limit else None
                else:
                    done[index] = value
                    self.queue.remove(index)
                    self.started = self.deadline = None
        except (EOFError, OSError):
            return False
        return self.process.is_alive() or not self.queue

    def how_it_ended(self) -> str:
        self.process.join(STOP_GRACE_SECONDS)
        code = self.process.exitcode
        if code is None:
            return "it stopped answering"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"


def _stop(workers: Sequence[_Worker]) -> None:
    """Stop every worker within about a second: idle ones are asked, busy ones are
    terminated, and whatever is still alive after the grace period is killed."""
    for worker in workers:
        try:
            if not worker.busy and worker.process.is_alive():
                worker.conn.send(_STOP)
            elif worker.process.is_alive():
                worker.process.terminate()
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for worker in workers:
        worker.process.join(max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """A Ctrl-C while the workers shut down must not cut that short, nor be lost: it is
    held and delivered once they are down (unless one is already on its way out). Lost, a
    Ctrl-C between two phases of a run (summarising, then linting) let the run finish."""
    held: List[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held and callable(previous):
        previous(signal.SIGINT, None)  # the CLI's handler: raises its KeyboardInterrupt


def run_tasks(
    work: Callable[[T], R],
    tasks: Sequence[T],
    *,
    jobs: int,
    time_limit: Optional[float],
    memory_limit: Optional[int] = None,
) -> Iterator[Union[R, Failure]]:
    """``work(task)`` for every task in up to ``jobs`` worker processes; the values in the
    order of ``tasks``. A task past ``time_limit`` seconds (None: no limit), whose worker
    died twice, or past ``memory_limit`` bytes (more than the worker started with; None:
    no limit) gives a ``Failure`` in its place. ``work`` must not raise (an exception is
    turned into a ``Failure`` too)."""
    count = len(tasks)
    if not count:
        return
    context = _context()
    workers: List[_Worker] = []
    try:
        for _ in range(max(1, min(jobs, count))):
            workers.append(_Worker(context, work, memory_limit))
    except OSError:  # no processes here: do the work in this process, without a limit
        _stop(workers)
        for task in tasks:
            yield call_deep(work, task)
        return

    pending: Deque[int] = collections.deque(range(count))
    attempts: Dict[int, int] = collections.defaultdict(int)
    done: Dict[int, Union[R, Failure]] = {}
    next_out = 0
    try:
        while next_out < count:
            for slot, worker in enumerate(workers):
                while len(worker.queue) < QUEUE_DEPTH and pending:
                    index = pending.popleft()
                    try:
                        worker.give(index, tasks[index])
                    except (OSError, ValueError):  # it died: hand its tasks on, replace it
                        pending.appendleft(index)
                        pending.extendleft(reversed(worker.queue))
                        workers[slot] = worker = _replace(worker, context, work)
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            if next_out >= count:
                break
            busy = [w for w in workers if w.busy]
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
            for slot, worker in enumerate(workers):
                if not worker.busy:
                    continue
                if worker.conn in ready or worker.process.sentinel in ready:
                    if worker.receive(time_limit, done):
                        continue
                    # Died: the task it was on is charged; the ones waiting go back.
                    how = worker.how_it_ended()
                    # One that died before it began any is charged with its first: a
                    # worker that cannot start is not replaced forever.
                    charged = worker.started if worker.started is not None else (worker.queue[0] if worker.queue else None)
                    waiting = [i for i in worker.queue if i != charged]
                    pending.extendleft(reversed(waiting))
                    workers[slot] = _replace(worker, context, work)
                    # Past a memory cap LibCST's native parser aborts: no second try.
                    starved = memory_limit is not None and worker.process.exitcode == -signal.SIGABRT
                    if charged is not None:
                        attempts[charged] += 1
                        if starved:
                            done[charged] = Failure(False, f"it ran out of the memory allowed per file ({how})", out_of_memory=True)
                        elif attempts[charged] < CRASH_ATTEMPTS:
                            pending.appendleft(charged)
                        else:
                            done[charged] = Failure(False, f"the worker process died while on it ({how})")
                elif worker.deadline is not None and time.monotonic() >= worker.deadline:
                    charged = worker.started
                    waiting = [i for i in worker.queue if i != charged]
                    pending.extendleft(reversed(waiting))
                    workers[slot] = _replace(worker, context, work)
                    if charged is not None:
                        done[charged] = Failure(True, f"it took longer than {time_limit:g} s")
    finally:
        with _sigint_ignored():
            _stop(workers)


def _replace(worker: _Worker, context: Any, work: Callable[[Any], Any]) -> _Worker:
    """A fresh worker in place of one that died or ran past the limit (stopped first: a
    write it is in ends, then it exits; killed if it does not within the grace period)."""
    if worker.process.is_alive():
        worker.process.terminate()
        worker.process.join(STOP_GRACE_SECONDS)
    if worker.process.is_alive():
        worker.process.kill()
    worker.process.join()
    worker.conn.close()
    return _Worker(context, work, worker.memory)
