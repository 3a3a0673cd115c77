"""`LoadPlugin`: attaches the load to a Locust `Environment`, whatever its runner (local, master or worker).

Processes that run users get a `LoadContext` when the test starts (a worker's index is known by then, so its rows
and keys are named `w<index>`), flush their rows when the test stops and close on quit; their rows feed Locust's
own statistics (`LocustFeed`). Between the master and its workers it uses Locust's custom messages: the master
sends `rmq_phase` (every worker acknowledges with `rmq_phase_ack`) and `rmq_drain` (every worker answers
`rmq_drained` with its totals once its last row is written); workers send `rmq_batch` summaries, which the master
adds up for progress. The controller API (`set_phase`, `drain`, `stats`) is the same on a local runner and on a
master.
"""
from __future__ import annotations

import gevent
from gevent.event import Event
from locust.runners import LocalRunner, MasterRunner, WorkerRunner

import itertools
import logging
import time
from pathlib import Path
from typing import Any

from loads.context import LoadContext, attach_context
from loads.locust_feed import LocustFeed
from loads.phasebook import PhaseBook
from loads.spec import LoadSpec
from loads.tally import BatchSummary, Tally

log = logging.getLogger(__name__)

MSG_PHASE = "rmq_phase"
MSG_PHASE_ACK = "rmq_phase_ack"
MSG_DRAIN = "rmq_drain"
MSG_DRAINED = "rmq_drained"
MSG_BATCH = "rmq_batch"
MSG_FAILED = "rmq_failed"
LOCAL_WORKER = "w0"
DRAIN_MARGIN_S = 10.0
STRAGGLER_TIMEOUT_S = 1.0


class LoadPlugin:
    """The load's listeners and controller on one Locust environment. Create it once the runner exists."""

    def __init__(self, environment: Any, spec: LoadSpec, run_dir: str | Path, run_id: str) -> None:
        self.environment = environment
        self.spec, self.run_dir, self.run_id = spec, Path(run_dir), run_id
        self.runner = environment.runner
        self.ctx: LoadContext | None = None
        self.tally = Tally()
        self.phases = PhaseBook(spec.initial_phase)
        self.rate = spec.rate
        self.drained: dict[str, dict] = {}
        self._pending_phases: list[dict] = []
        self._acks: dict[int, set[str]] = {}
        self._ids = itertools.count(1)
        self._changed = Event()
        self.failure: dict[str, Any] | None = None
        """The first process whose rows could not be written: `{"error", "worker", "t_ns"}`."""
        self.on_failure: Any = None
        """Called once with that dict (the controller tells the harness)."""
        events = environment.events
        if not environment.stop_timeout:
            # sends in flight are waited for in test_stopping (up to the drain timeout); this is only how long
            # Locust then gives a send still running before it kills the user (the send is recorded as abandoned)
            environment.stop_timeout = STRAGGLER_TIMEOUT_S
        if isinstance(self.runner, (LocalRunner, WorkerRunner)):
            events.test_start.add_listener(self._on_test_start)
            events.test_stopping.add_listener(self._on_test_stopping)
            events.test_stop.add_listener(self._on_test_stop)
            events.quit.add_listener(self._on_quit)
        if isinstance(self.runner, WorkerRunner):
            self.runner.register_message(MSG_PHASE, self._on_phase_msg)
            self.runner.register_message(MSG_DRAIN, self._on_drain_msg, concurrent=True)
        if isinstance(self.runner, MasterRunner):
            self.runner.register_message(MSG_BATCH, self._on_batch_msg)
            self.runner.register_message(MSG_PHASE_ACK, self._on_phase_ack)
            self.runner.register_message(MSG_DRAINED, self._on_drained)
            self.runner.register_message(MSG_FAILED, lambda _env, msg: self._failed(msg.data))

    # --- processes that run users -----------------------------------------------------------------------------

    @property
    def worker(self) -> str:
        if isinstance(self.runner, WorkerRunner):
            return f"w{self.runner.worker_index}"
        return LOCAL_WORKER

    def _on_test_start(self, **_: Any) -> None:
        if self.ctx is not None:
            return  # a restarted test (web UI) continues the same context: keys and parts go on
        on_batch = self.tally.add if isinstance(self.runner, LocalRunner) else self._send_batch
        feed = LocustFeed(self.environment, {c.name: c.message_size for c in self.spec.clients})
        self.ctx = LoadContext(self.spec, self.run_dir, self.run_id, self.worker, on_batch=on_batch,
                               on_rows=feed.digest, on_failure=self._recorder_failed)
        attach_context(self.environment, self.ctx)
        for msg in self._pending_phases:
            self.ctx.set_phase(msg["name"], msg["rate"], msg["at_ns"])
        self._pending_phases.clear()
        self.ctx.start()

    def _on_test_stopping(self, **_: Any) -> None:
        # Before Locust stops the users: no new sends, and the sends in flight finish, so Locust's kill of a user
        # it saw waiting can never land in the middle of a send.
        # Once this process's rows can no longer be written (its recorder failed), waiting for the sends in flight
        # records nothing and only keeps the run going: they are abandoned at once (counted as in flight), and
        # Locust kills their users without its straggler second (stop_users reads stop_timeout after this event).
        if self.failure is not None:
            self.environment.stop_timeout = 0
        if self.ctx is not None:
            self.ctx.drain_in_flight(0.0 if self.failure is not None else self.spec.drain_s)

    def _on_test_stop(self, **_: Any) -> None:
        if self.ctx is not None:
            self.ctx.recorder.flush()

    def _on_quit(self, **_: Any) -> None:
        if self.ctx is not None:
            self.ctx.close()

    def _recorder_failed(self, error: str) -> None:
        failure = {"error": error, "worker": self.worker, "t_ns": time.time_ns()}
        if isinstance(self.runner, WorkerRunner):
            self.runner.send_message(MSG_FAILED, failure)
        self._failed(failure)

    def _failed(self, failure: dict[str, Any]) -> None:
        if self.failure is None:
            self.failure = failure
            if self.on_failure is not None:
                self.on_failure(failure)

    def _send_batch(self, summary: BatchSummary) -> None:
        self.runner.send_message(MSG_BATCH, summary.to_json())

    def _on_phase_msg(self, environment: Any, msg: Any) -> None:
        data = msg.data
        self._apply_phase(data["name"], data["rate"], data["at_ns"])
        self.runner.send_message(MSG_PHASE_ACK, {"id": data["id"], "worker": self.runner.client_id})

    def _apply_phase(self, name: str, rate: float | None, at_ns: int) -> None:
        self.phases.begin(name, at_ns)
        self.rate = self.spec.rate_in(name, rate, self.rate)
        if self.ctx is None:
            self._pending_phases.append({"name": name, "rate": rate, "at_ns": at_ns})
        else:
            self.ctx.set_phase(name, rate, at_ns)

    def _on_drain_msg(self, environment: Any, msg: Any) -> None:
        totals = self._drain_here()
        self.runner.send_message(MSG_DRAINED, {**totals, "client_id": self.runner.client_id})

    def _drain_here(self) -> dict:
        """Stop sending, let the sends in flight finish (up to the drain timeout), write every row."""
        if self.ctx is None:  # never started: nothing was sent
            return {"worker": self.worker, "fired": 0, "in_flight": 0, "rows": 0, "parts": 0, "t_ns": time.time_ns()}
        self.runner.stop()  # test_stopping drains the sends in flight
        self.ctx.close()
        return self.ctx.totals()

    # --- master side ------------------------------------------------------------------------------------------

    def _on_batch_msg(self, environment: Any, msg: Any) -> None:
        self.tally.add(BatchSummary.from_json(msg.data))

    def _on_phase_ack(self, environment: Any, msg: Any) -> None:
        self._acks.setdefault(msg.data["id"], set()).add(msg.data["worker"])
        self._changed.set()

    def _on_drained(self, environment: Any, msg: Any) -> None:
        self.drained[msg.data["client_id"]] = msg.data
        self._changed.set()

    def _worker_ids(self) -> set[str]:
        return {w.id for w in self.runner.clients.values() if w.state != "missing"}

    def _wait(self, done: Any, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._changed.clear()
            self._changed.wait(min(left, 0.1))
        return True

    # --- controller API ---------------------------------------------------------------------------------------

    def set_phase(self, name: str, rate: float | None = None, at_ns: int | None = None,
                  timeout_s: float = 10.0) -> dict[str, Any]:
        """Phase `name` (and the load's `rate`) from `at_ns` (default now) in every process that runs users;
        returns once every worker has applied it."""
        at_ns = time.time_ns() if at_ns is None else at_ns
        if isinstance(self.runner, MasterRunner):
            msg_id = next(self._ids)
            workers = self._worker_ids()
            self.phases.begin(name, at_ns)
            self.rate = self.spec.rate_in(name, rate, self.rate)
            self.runner.send_message(MSG_PHASE, {"id": msg_id, "name": name, "rate": rate, "at_ns": at_ns})
            if not self._wait(lambda: workers <= self._acks.get(msg_id, set()), timeout_s):
                missing = sorted(workers - self._acks.get(msg_id, set()))
                raise TimeoutError(f"phase {name!r}: no acknowledgement within {timeout_s:g} s from {missing}")
            self._acks.pop(msg_id, None)
        else:
            self._apply_phase(name, rate, at_ns)
        return {"phase": name, "rate": self.rate, "at_ns": at_ns, "target_rate": self.target_rate}

    @property
    def target_rate(self) -> float:
        plans = self.spec.plan(rate=self.rate, phase=self.phases.current)
        return sum(p.rate or 0.0 for p in plans.values() if p.model == "open")

    def drain(self) -> dict[str, Any]:
        """End the test in order: no new sends, sends in flight finish, every row written in every process.
        Returns the totals per worker."""
        if isinstance(self.runner, MasterRunner):
            workers = self._worker_ids()
            self.runner.send_message(MSG_DRAIN, {})
            ok = self._wait(lambda: workers <= set(self.drained), self.spec.drain_s + DRAIN_MARGIN_S)
            if not ok:
                log.error("workers %s did not report drained", sorted(workers - set(self.drained)))
            totals = list(self.drained.values())
        else:
            totals = [self._drain_here()]
        gevent.sleep(0)  # let the last batch summaries arrive before the final snapshot
        return {"workers": totals, "fired": sum(t["fired"] for t in totals), "rows": sum(t["rows"] for t in totals),
                "parts": sum(t["parts"] for t in totals)}

    def stats(self, state: str = "running") -> dict[str, Any]:
        failure = self.failure["error"] if self.failure else None
        snap = self.tally.snapshot(phase=self.phases.current, target_rate=self.target_rate,
                                   state="failed" if failure and state == "running" else state, failure=failure)
        return snap.to_json()
