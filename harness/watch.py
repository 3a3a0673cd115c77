"""`RunWatch`: what stops a run from inside the harness, and the one line that says why.

The parts of a run that write its records (the load's recorder, the consumers, the collectors, the read-back, the
events file) or carry its load (the load's processes) report a failure here from whatever thread they run in. The
first failure sets the run's stop event (the phase wait wakes at once), is written as an event (`harness_failed`:
what, error, phase, at_s) and becomes the run's error:

    runs/<id>: no space left on device writing request rows to runs/<id>/requests at 2.1 s of phase healthy;
    the run was stopped; rows up to then are in requests/

A signal (Ctrl-C, SIGTERM) goes through the same door (`interrupt`), so the wind-down does not care which it was.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

NS_PER_S = 1_000_000_000
WHERE_ROWS_ARE = {"load": "requests/", "consumers": "consumes/", "metrics": "metrics/", "read-back": "readback/",
                  "events": "events.jsonl"}


class HarnessFailed(Exception):
    """Raised in the runner's thread once a part of the harness failed (the one line is its message)."""


class RunWatch:
    """Failures of one run's parts, first one wins."""

    def __init__(self, run_root: Path, stop: threading.Event) -> None:
        self.run_root = run_root
        self.stop = stop
        self.failure: str | None = None
        self.failure_ns: int | None = None
        self.part: str | None = None
        self.signal: str | None = None
        self._phase: tuple[str, int] | None = None  # (name, wall ns of its start)
        self._lock = threading.Lock()
        self._events: Any = None

    def attach(self, rd: Any) -> None:
        """Where `harness_failed` goes (the run directory's event writer)."""
        self._events = rd

    def phase_started(self, name: str, wall_ns: int) -> None:
        self._phase = (name, wall_ns)

    @property
    def phase(self) -> tuple[str, int] | None:
        """(name, wall ns of its start) of the phase the run is in, if one has started."""
        return self._phase

    def interrupt(self, signal_name: str) -> None:
        with self._lock:
            if self.signal is None:
                self.signal = signal_name
        self.stop.set()

    def fail(self, part: str, error: str, at_ns: int | None = None, **extra: Any) -> None:
        """`part` (load, consumers, metrics, read-back, events) failed with `error` (one line) at wall `at_ns`."""
        at_ns = at_ns or time.time_ns()
        with self._lock:
            if self.failure is not None:
                return
            where = ""
            phase, at_s = None, None
            if self._phase is not None:
                phase, start = self._phase
                at_s = max(0.0, (at_ns - start) / NS_PER_S)
                where = f" at {at_s:.1f} s of phase {phase}"
            rows = WHERE_ROWS_ARE.get(part)
            self.failure = (f"{self.run_root}: {error}{where}; the run was stopped"
                            + (f"; rows up to then are in {rows}" if rows else ""))
            self.part = part
            self.failure_ns = at_ns
        self.stop.set()
        if self._events is not None and part != "events":
            try:
                self._events.event("harness_failed", part=part, error=error, phase=phase, at_s=at_s, **extra)
            except OSError:
                pass  # the events file is what failed, or its disk is full too: the line still says it

    def check(self) -> None:
        """Raise `HarnessFailed` when a part has failed (call it in the runner's thread)."""
        if self.failure is not None:
            raise HarnessFailed(self.failure)
