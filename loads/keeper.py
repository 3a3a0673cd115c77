"""`ScheduleKeeper`: keeps the open-model load of one process on its schedule, or counts where it did not.

Each open user owns its slots (`loads.schedule.OpenSchedule`). While a user is busy in a send, its slots keep
coming due. Every `KEEP_INTERVAL_S` the keeper looks at the busy users: a due slot goes to a spare sender (a
greenlet that sends it for the same client, as the user would) while the client's spares in this process are fewer
than its share of `max_users - users`; a slot that has not started within the client's `max_lag_s` of its intended
time is dropped: never sent, counted under the client, the phase of its intended time and the reason `late`. A user
that wakes late drops its own stale slots the same way before it sends. So every row starts within `max_lag_s` of
its intended time and carries that time's phase: nothing slides into a later phase.

When the load stops, slots that came due and were not sent are counted too: those older than `max_lag_s` as
`late`, the rest as `stopped` (they were on time; the load ended first). The counts become schedule rows
(`analysis.contract.SCHEDULE_SCHEMA`, `schedule/part-*.parquet`) with every batch of request rows.

With a scenario that the load can deliver nothing changes: no user is late, no spare starts, nothing is dropped.
"""
from __future__ import annotations

import gevent

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from loads.schedule import split_by

KEEP_INTERVAL_S = 0.005
LATE, STOPPED = "late", "stopped"
NS_PER_S = 1_000_000_000


class Drops:
    """Dropped slots by (client, phase, reason): count, first and last intended time, until taken."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str | None, str], list[int]] = {}
        self.total = 0
        self.late = 0

    def add(self, client: str, phase: str | None, reason: str, first_ns: int, last_ns: int, n: int = 1) -> None:
        entry = self._open.get((client, phase, reason))
        if entry is None:
            self._open[(client, phase, reason)] = [n, first_ns, last_ns]
        else:
            entry[0] += n
            entry[1] = min(entry[1], first_ns)
            entry[2] = max(entry[2], last_ns)
        self.total += n
        if reason == LATE:
            self.late += n

    def take(self) -> list[dict[str, Any]]:
        """The counts since the last call, as schedule rows (without run_id, worker and ts_ns)."""
        taken, self._open = self._open, {}
        return [{"client": c, "phase": p, "reason": r, "dropped": n, "first_intended_ns": lo, "last_intended_ns": hi}
                for (c, p, r), (n, lo, hi) in taken.items()]


class ScheduleKeeper:
    """Spare senders and dropped slots for the open users of one process (`ctx`: its `LoadContext`)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.drops = Drops()
        self.spares: Counter[str] = Counter()
        self.spares_started = 0
        self.lag_ns = 0
        """How late the oldest slot still owed by a busy user was at the last look."""
        self._busy: dict[Any, None] = {}
        self._runner: Any = None

    def start(self) -> None:
        if self._runner is None and any(p.model == "open" for p in self.ctx.plans.values()):
            self._runner = gevent.spawn(self._loop)

    def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.kill(block=False)

    # --- the users' side --------------------------------------------------------------------------------------

    def busy(self, user: Any) -> None:
        self._busy[user] = None

    def idle(self, user: Any) -> None:
        self._busy.pop(user, None)

    def drop_stale(self, client: str, schedule: Any, now_ns: int) -> None:
        """Drop the slots of `schedule` that are already later than the client's max lag (all at once, however
        many: a load far above what the process sends must not spend its time counting)."""
        due = schedule.due_ns
        if due is not None and due < now_ns - self._max_lag_ns(client):
            self._drop(client, schedule.take_before(now_ns - self._max_lag_ns(client)), LATE)

    def _drop(self, client: str, runs: list[tuple[int, float, int, int]], reason: str) -> None:
        phases = self.ctx.phases
        starts = phases.starts()
        for run in runs:
            for index, n, first, last in split_by(run, starts):
                self.drops.add(client, phases.name(index), reason, first, last, n)

    # --- the keeper's pass ------------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self.ctx.draining:
            gevent.sleep(KEEP_INTERVAL_S)
            self.look(time.time_ns())

    def look(self, now_ns: int) -> None:
        """One pass over the busy users: stale slots dropped, due slots handed to spare senders where allowed."""
        lag = 0
        for user in list(self._busy):
            client, schedule = user.client_name, user.schedule
            if schedule is None:
                continue
            self.drop_stale(client, schedule, now_ns)
            while (due := schedule.due_ns) is not None and due <= now_ns and self._spare_free(client):
                schedule.advance()
                self._spawn_spare(user, due)
            if (due := schedule.due_ns) is not None and due <= now_ns:
                lag = max(lag, now_ns - due)
        self.lag_ns = lag

    def _spare_free(self, client: str) -> bool:
        if self.ctx.draining:
            return False
        local_users = self.ctx.local_users(client)
        return self.spares[client] < self.ctx.plans[client].spares_for(local_users)

    def _spawn_spare(self, user: Any, intended_ns: int) -> None:
        client = user.client_name
        self.spares[client] += 1
        self.spares_started += 1

        def send() -> None:
            try:
                user.send_slot(intended_ns)
            finally:
                self.spares[client] -= 1

        gevent.spawn(send)

    # --- the end ----------------------------------------------------------------------------------------------

    def count_unsent(self, schedules: Callable[[], list[tuple[str, Any]]], now_ns: int) -> int:
        """At the stop: every slot of `schedules()` ((client, schedule) pairs) that came due and was not sent is
        counted (older than the max lag: late, else stopped). Returns how many."""
        before = self.drops.total
        for client, schedule in schedules():
            self.drop_stale(client, schedule, now_ns)
            self._drop(client, schedule.take_before(now_ns + 1), STOPPED)
        return self.drops.total - before

    def _max_lag_ns(self, client: str) -> int:
        return int((self.ctx.plans[client].max_lag_s or 0.0) * NS_PER_S)
