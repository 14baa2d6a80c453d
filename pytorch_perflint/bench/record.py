"""Keeping a scenario run's results as they come, so a run that is stopped loses nothing.

A device check gives ``bench`` a hard time limit (``timeout`` sends SIGTERM, then SIGKILL):
the first GPU run lost 17 finished scenarios because the JSON was written only at the end.
Now the JSON is rewritten (atomically: a temporary file renamed over it) after every finished
scenario, marked ``"complete": false`` with the scenario runs still to come, and once more at
the end. SIGTERM and SIGHUP stop the run the way Ctrl-C does (``Stopped``); the command then
writes the JSON and the chart of what finished, saying it was stopped and what did not run.
Even SIGKILL leaves the JSON of every scenario finished before it.
"""

from __future__ import annotations

import datetime
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import export
from .harness import Options, ScenarioResult
from .machine import load_average


class Stopped(BaseException):
    """A termination signal arrived: stop the run, keep what finished.

    A ``BaseException``, like ``KeyboardInterrupt``, so the harness's ``except Exception``
    around a scenario's programs does not take it for a broken program.
    """


@dataclass
class StopSignals:
    """SIGTERM and SIGHUP raise ``Stopped`` in the main thread while installed."""

    received: Optional[str] = None
    _previous: Dict[int, Any] = field(default_factory=dict)
    _pid: int = 0

    def install(self) -> "StopSignals":
        self._pid = os.getpid()
        for name in ("SIGTERM", "SIGHUP"):
            number = getattr(signal, name, None)
            if number is None:
                continue
            try:
                self._previous[number] = signal.signal(number, self._handle)
            except ValueError:  # not the main thread (a test runner's worker): no trap
                pass
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if os.getpid() != self._pid:  # a forked DataLoader worker inherited the trap: end it as the default would
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        first = self.received is None
        self.received = signal.Signals(signum).name
        if first:
            raise Stopped(self.received)

    def hold(self) -> None:
        """While the results are written: a second signal is noted, not raised."""
        for number in self._previous:
            signal.signal(number, self._note)

    def _note(self, signum: int, frame: Any) -> None:
        self.received = self.received or signal.Signals(signum).name

    def restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()


@dataclass
class Recorder:
    """The results so far, and the JSON that holds them after each one."""

    planned: Tuple[Tuple[str, str], ...]  # (code, device) in run order
    write_json: Optional[Callable[["Recorder"], None]] = None
    signals: Optional[StopSignals] = None
    results: List[ScenarioResult] = field(default_factory=list)
    stopped: Optional[str] = None  # why the run ended early, in words

    def add(self, result: ScenarioResult) -> None:
        """A finished scenario. A result that ends in an error after a stop signal came is
        the stop's doing (a DataLoader worker killed by the same signal), not the program's:
        it is dropped and the scenario counts as not run."""
        if self.signals is not None and self.signals.received is not None:
            if result.error is None:
                self.results.append(result)
            raise Stopped(self.signals.received)
        self.results.append(result)
        if self.write_json is not None:
            self.write_json(self)

    @property
    def not_run(self) -> List[Tuple[str, str]]:
        done = {(r.code, r.device) for r in self.results}
        return [pair for pair in self.planned if pair not in done]

    @property
    def complete(self) -> bool:
        return self.stopped is None and not self.not_run


def stop_reason(error: BaseException) -> str:
    if isinstance(error, Stopped):
        return f"stopped by {error.args[0] if error.args else 'a signal'}"
    return "interrupted (Ctrl-C)"


def progress_fields(recorder: Recorder) -> Dict[str, Any]:
    """What the JSON says about how far the run got (``export.run_dict``'s ``progress``)."""
    return {
        "complete": recorder.complete,
        "stopped": recorder.stopped,
        "planned": [f"{code} {device}" for code, device in recorder.planned],
        "not_run": [f"{code} {device}" for code, device in recorder.not_run],
    }


def json_writer(path: Path, info: Any, options: Options, started: datetime.datetime, load_start: Any) -> Callable[[Recorder], None]:
    """A ``Recorder.write_json`` that writes the whole run dictionary to ``path``."""
    def write(recorder: Recorder) -> None:
        now = datetime.datetime.now().astimezone()
        data = export.run_dict(recorder.results, info, options, started, now, load_start, load_average(), progress_fields(recorder))
        export.write(path, data)

    return write


def describe_stop(recorder: Recorder) -> str:
    """One line for the log: what finished, what did not."""
    missing = ", ".join(f"{code} {device}" for code, device in recorder.not_run) or "none"
    return f"bench: {recorder.stopped} after {len(recorder.results)} of {len(recorder.planned)} scenario run(s); not run: {missing}"


def planned_runs(scenarios: Sequence[Any], devices: Sequence[str]) -> Tuple[Tuple[str, str], ...]:
    return tuple((scenario.code, device) for scenario in scenarios for device in devices)
