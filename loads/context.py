"""`LoadContext`: the load's state inside one Locust process that runs users (a local runner or one worker).

It holds what all users of the process share: the spec and its current plan (rates per client), the phase book,
the sequence of send numbers (the `<seq>` of the harness key `<run_id>:<worker>:<seq>`), the producers, the request
recorder, the open-model schedules of the live users (so a rate change reaches every one of them) and their
`ScheduleKeeper` (spare senders, dropped slots), the precise alarm, and the counters of sends fired and in flight.
`drain()` is the orderly end: no new sends, the sends in flight finish (or are abandoned after the drain timeout),
the slots that came due unsent are counted, every row is written. A recorder that cannot write (a full disk, an
I/O error) ends the sending at once and says why (`failure`, and `on_failure`).
"""
from __future__ import annotations

import gevent

import gc
import itertools
import logging
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from analysis.contract import RunLayout
from loads.alarm import PreciseAlarm
from loads.keeper import ScheduleKeeper
from loads.phasebook import PhaseBook
from loads.producers import MessageFactory, ProducerPool
from loads.recorder import RequestRecorder, harness_key, highest_seq
from loads.schedule import OpenSchedule
from loads.spec import ClientPlan, LoadSpec
from loads.tally import BatchSummary

log = logging.getLogger(__name__)

DRAIN_POLL_S = 0.01

_contexts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def context_of(environment: object) -> LoadContext:
    """The context attached to a Locust environment (raises when the load plugin was not attached)."""
    try:
        return _contexts[environment]
    except KeyError:
        raise RuntimeError("no load context on this Locust environment: attach it with loads.plugin.attach()") \
            from None


def attach_context(environment: object, ctx: LoadContext) -> None:
    _contexts[environment] = ctx


class LoadContext:
    """Shared state of the users of one process."""

    def __init__(self, spec: LoadSpec, run_dir: str | Path, run_id: str, worker: str,
                 on_batch: Callable[[BatchSummary], None] | None = None,
                 on_rows: Callable[[list[tuple]], Callable[[], None] | None] | None = None,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self.spec, self.run_id, self.worker = spec, run_id, worker
        layout = RunLayout.of(run_dir)
        layout.requests.mkdir(parents=True, exist_ok=True)
        self.clients = {c.name: c for c in spec.clients}
        self.messages = {c.name: MessageFactory(spec.topic, c) for c in spec.clients}
        self.phases = PhaseBook(spec.initial_phase)
        self.rate = spec.rate
        self.plans: dict[str, ClientPlan] = spec.plan(phase=spec.initial_phase)
        self.key_prefix = harness_key(run_id, worker, "")
        self._seq = itertools.count(highest_seq(layout.requests, worker) + 1)
        self.fired = 0
        self.in_flight = 0
        self.draining = False
        self.producers = ProducerPool(spec)
        self.keeper = ScheduleKeeper(self)
        self.failure: str | None = None
        self.on_failure = on_failure
        self.recorder = RequestRecorder(layout.requests, run_id, worker, spec.topic, self.phases,
                                        interval_s=spec.flush_interval_s, on_batch=on_batch, gauges=self.gauges,
                                        on_rows=on_rows, drops=self.keeper.drops.take,
                                        schedule_dir=layout.schedule, on_failure=self._recorder_failed)
        self._schedules: dict[str, weakref.WeakSet[OpenSchedule]] = {c.name: weakref.WeakSet() for c in spec.clients}
        self._user_index = {c.name: itertools.count() for c in spec.clients}
        self._alarm: PreciseAlarm | None = None
        self._closed = False

    # --- used by the users ------------------------------------------------------------------------------------

    @property
    def alarm(self) -> PreciseAlarm:
        if self._alarm is None:
            self._alarm = PreciseAlarm()
        return self._alarm

    def next_seq(self) -> int:
        return next(self._seq)

    def local_users(self, client: str) -> int:
        """Live open-model users of `client` in this process."""
        return len(self._schedules[client])

    def gauges(self) -> dict[str, float | int]:
        """What every batch summary carries besides its rows."""
        return {"fired": self.fired, "in_flight": self.in_flight, "dropped": self.keeper.drops.late,
                "lag_ms": self.keeper.lag_ns / 1e6, "spares": sum(self.keeper.spares.values())}

    def _recorder_failed(self, error: str) -> None:
        """The rows can no longer be written: no new sends from now on, and the controller is told."""
        if self.failure is None:
            self.failure = error
            self.draining = True
            log.error("stopping the sends: %s", error)
            if self.on_failure is not None:
                self.on_failure(error)

    def new_schedule(self, client: str, now_ns: int) -> OpenSchedule:
        """An open-model schedule for a new user of `client`, staggered against the others."""
        from loads.schedule import stagger

        plan = self.plans[client]
        schedule = OpenSchedule(plan.rate_per_user, now_ns, stagger(next(self._user_index[client])))
        self._schedules[client].add(schedule)
        return schedule

    # --- driven by the controller -----------------------------------------------------------------------------

    def start(self) -> None:
        # Everything built so far (Locust, pyarrow, pydantic, ...) lives as long as the process: keep it out of
        # the collector's full passes, which otherwise stall the event loop for tens of ms every few seconds.
        gc.collect()
        gc.freeze()
        self.recorder.start()
        self.keeper.start()

    def set_phase(self, name: str, rate: float | None, at_ns: int) -> dict[str, float | None]:
        """Phase `name` from `at_ns`; `rate` (None: the phase's rate in the spec, else unchanged) is the load's new
        rate. Every live open-model user switches to its new per-user rate at `at_ns`. Returns the client rates."""
        self.rate = self.spec.rate_in(name, rate, self.rate)
        self.phases.begin(name, at_ns)
        self.plans = self.spec.plan(rate=self.rate, phase=name)
        for client, plan in self.plans.items():
            if plan.model == "open":
                for schedule in list(self._schedules[client]):
                    schedule.set_rate(plan.rate_per_user, at_ns)
        return {name: plan.rate for name, plan in self.plans.items()}

    def drain_in_flight(self, timeout_s: float) -> int:
        """No new sends from now on; wait until the sends in flight have finished (at most `timeout_s`). Returns
        how many are still in flight (they will be abandoned)."""
        self.draining = True
        self.keeper.stop()
        unsent = self.keeper.count_unsent(self._open_schedules, time.time_ns())
        if unsent:
            log.info("%d slots came due and were not sent before the stop", unsent)
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            gevent.sleep(DRAIN_POLL_S)
        if self.in_flight:
            log.warning("%d sends still in flight after %.1f s: abandoning them", self.in_flight, timeout_s)
        return self.in_flight

    def _open_schedules(self) -> list[tuple[str, OpenSchedule]]:
        return [(client, s) for client, live in self._schedules.items() for s in list(live)]

    @property
    def target_rate(self) -> float:
        """Sends/s the open-model clients are asked for, over all workers."""
        return sum(p.rate or 0.0 for p in self.plans.values() if p.model == "open")

    def close(self) -> BatchSummary | None:
        """Write every buffered row and stop the producers. Idempotent."""
        if self._closed:
            return None
        self._closed = True
        summary = self.recorder.close()
        self.producers.shutdown()
        if self._alarm is not None:
            self._alarm.close()
        return summary

    def totals(self) -> dict[str, int | str]:
        return {"worker": self.worker, "fired": self.fired, "in_flight": self.in_flight,
                "rows": self.recorder.rows_written, "parts": len(self.recorder.parts),
                "dropped": self.keeper.drops.total, "dropped_late": self.keeper.drops.late,
                "spares_started": self.keeper.spares_started, "failure": self.failure, "t_ns": time.time_ns()}
