"""The run's schedule on the monotonic clock: each phase's window (start and end in seconds from the load's start),
its rate and its faults, and a wait that wakes for progress ticks and stops early on request.

Phases follow each other back to back on the schedule, not on the time the previous phase's work took: if applying
a fault takes 2 s, the phase still ends at its planned moment (the events record what happened when)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.scenario import FaultSpec, Scenario
from harness.scenario.search import SearchSpec

TICK_S = 0.25


@dataclass(frozen=True)
class PhaseWindow:
    index: int
    name: str
    start_s: float
    end_s: float
    rate: float | None
    faults: list[FaultSpec] = field(default_factory=list)
    search: SearchSpec | None = None
    """the phase's sustainable-rate search; `rate` is then its first step's"""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def build_timeline(scenario: Scenario) -> list[PhaseWindow]:
    """Phase windows of a resolved scenario (the warm-up is its first phase)."""
    out, t = [], 0.0
    rate = scenario.load.rate
    for i, p in enumerate(scenario.phases):
        rate = p.rate if p.rate is not None else scenario.load.rate
        if p.search is not None and p.search.start is not None:
            rate = p.search.start
        out.append(PhaseWindow(i, p.name, t, t + p.duration, rate, list(p.faults), p.search))
        t += p.duration
    return out


class Clock:
    """Seconds since `start()` on the monotonic clock, and waits against it."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def start(self) -> None:
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def wait_until(self, t_s: float, stop: threading.Event | None = None,
                   tick: Callable[[], None] | None = None, tick_s: float = TICK_S) -> bool:
        """Wait until `t_s` on this clock; calls `tick` about every `tick_s`. False when `stop` was set first."""
        while True:
            left = t_s - self.now()
            if left <= 0:
                return True
            if stop is not None and stop.is_set():
                return False
            if tick is not None:
                tick()
            step = min(left, tick_s)
            if stop is not None:
                if stop.wait(step):
                    return False
            else:
                time.sleep(step)
