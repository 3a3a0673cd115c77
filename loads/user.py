"""The Locust users: `RocketMQUser` sends through the client's shared `Producer` (one message per task; a
closed-model user without think time sends again at once within its task while Locust lets it run), and
`user_classes(spec)` makes one concrete class per client (`fixed_count` = the client's users).

Open model: the user keeps its `OpenSchedule`; Locust's wait sleeps most of the way to the next slot (interruptible
by a stop), the precise alarm the rest, and the send's latency counts from the slot's intended start, however late
the send really started. While the user is busy in a send, the process's `ScheduleKeeper` hands its due slots to
spare senders (up to the client's `max_users`) and drops the slots that could not start within `max_lag_s`.
Closed model: send, think, send again; the intended start is the actual start.

Every send becomes one request row, including a send abandoned by a forced stop (recorded as `MQClientException`).
Locust's own statistics are made from the rows in batches (`loads.locust_feed`: `SEND_OK` a success, anything else
a failure named by its outcome word), not from a `request` event per send.
"""
from __future__ import annotations

import gevent
from gevent import GreenletExit
from locust import User, task
from locust.exception import StopUser
from locust.user.task import LOCUST_STATE_RUNNING

import logging
import time

from analysis.contract import SEND_OK
from loads.context import context_of
from loads.spec import LoadSpec
from remoting.errors import RemotingError
from remoting.outcome import outcome_of

log = logging.getLogger(__name__)

MAX_WAIT_S = 0.25
"""Longest single wait, so a rate change reaches a user waiting for a far slot within this time."""
ALARM_LEAD_NS = 3_000_000
"""The last part of a wait goes to the precise alarm (Locust's own wait wakes up to ~1 ms late)."""
ABANDONED_OUTCOME = "MQClientException"
ABANDONED_REMARK = "send abandoned: the load stopped before the send completed"
NS_PER_S = 1_000_000_000


class RocketMQUser(User):
    """One sender of one client. Concrete classes come from `user_classes(spec)`."""

    abstract = True
    client_name: str = ""

    def __init__(self, environment) -> None:
        super().__init__(environment)
        self.ctx = context_of(environment)
        self.client = self.ctx.clients[self.client_name]
        self.open = self.ctx.plans[self.client_name].model == "open"
        self.think_s = self.ctx.plans[self.client_name].think_time_s
        self.timeout_ms = self.client.send_timeout_ms
        self.messages = self.ctx.messages[self.client_name]
        self.schedule = None
        self.producer = None

    def on_start(self) -> None:
        self.producer = self.ctx.producers.get(self.client)
        if self.open:
            self.schedule = self.ctx.new_schedule(self.client_name, time.time_ns())

    def wait_time(self) -> float:
        if not self.open:
            return self.think_s
        due = self.schedule.due_ns
        if due is None:
            return MAX_WAIT_S
        return min(max(0.0, (due - time.time_ns() - ALARM_LEAD_NS) / NS_PER_S), MAX_WAIT_S)

    @task
    def send(self) -> None:
        """One send; a closed-model user without think time sends again at once while Locust lets it run (a
        graceful stop or a user-count change marks it stopping: it ends with the send in hand), as a Java thread
        does `while (true) producer.send(msg)`. Locust's wait between tasks only yields to the event loop, which a
        send that ended in SEND_OK has done (it waited for the answer); one that failed need not have (an error raised
        before any network wait), so it yields then, as Locust's wait would."""
        if self.open or self.think_s:
            self._send_one()
            return
        while self._state == LOCUST_STATE_RUNNING:
            if not self._send_one():
                gevent.sleep(0)

    def _send_one(self) -> bool:
        """Whether the send ended in SEND_OK (an open user's woken early for a rate change: True, nothing sent)."""
        ctx = self.ctx
        if ctx.draining:
            raise StopUser()
        if not self.open:
            return self.send_slot(None)
        while True:
            ctx.keeper.drop_stale(self.client_name, self.schedule, time.time_ns())
            due = self.schedule.due_ns
            if due is None or due - time.time_ns() > ALARM_LEAD_NS:
                return True  # woke for a rate change or a capped wait: not this slot's time yet
            ctx.alarm.sleep_until(due)
            if ctx.draining:
                raise StopUser()
            if self.schedule.due_ns == due:
                break  # else the rate changed (or the keeper took the slot) while sleeping: look again
        intended = self.schedule.advance()
        ctx.keeper.busy(self)
        try:
            return self.send_slot(intended)
        finally:
            ctx.keeper.idle(self)

    def send_slot(self, intended: int | None) -> bool:
        """Send one message for a slot intended at `intended` (None: closed model, the actual start) and record it;
        whether it ended in SEND_OK. Spare senders of the keeper call it too, for slots this user could not take."""
        ctx = self.ctx
        seq = ctx.next_seq()
        key = ctx.key_prefix + str(seq)
        message = self.messages.make(key)
        ctx.fired += 1
        ctx.in_flight += 1
        start = time.time_ns()
        if intended is None:
            intended = start
        result = error = None
        try:
            result = self.producer.send(message, self.timeout_ms)
        except RemotingError as e:
            error = e
        except GreenletExit:
            self._record(seq, key, message, intended, start, time.time_ns(), None, None, abandoned=True)
            ctx.in_flight -= 1
            raise
        except Exception as e:  # a bug below us: keep the row (records equal requests) and say what it was
            log.exception("send of %s raised %s", message.keys, type(e).__name__)
            error = e
        end = time.time_ns()
        ctx.in_flight -= 1
        return self._record(seq, key, message, intended, start, end, result, error)

    def _record(self, seq, key, message, intended, start, end, result, error, abandoned=False) -> bool:
        """Record the send (its row); whether it ended in SEND_OK."""
        if abandoned:
            outcome, code, remark, attempts = ABANDONED_OUTCOME, None, ABANDONED_REMARK, None
        elif isinstance(error, RemotingError) or result is not None:
            outcome, code, remark = outcome_of(result if error is None else error)
            attempts = len((result if error is None else error).attempts or ()) or None
        else:
            outcome, code, remark, attempts = ABANDONED_OUTCOME, None, f"{type(error).__name__}: {error}", None
        broker = queue_id = queue_offset = None
        msg_id = message.uniq_key
        if result is not None:
            msg_id = result.msg_id or msg_id
            broker, queue_id, queue_offset = result.broker_name, result.queue_id, result.queue_offset
        elif error is not None and getattr(error, "attempts", None):
            broker = error.attempts[-1].broker_name
        self.ctx.recorder.add((self.client_name, seq, msg_id, intended, start, end,
                               outcome, code, remark, broker, queue_id, queue_offset, attempts, self.open))
        return outcome == SEND_OK


def user_classes(spec: LoadSpec) -> list[type[RocketMQUser]]:
    """One concrete user class per client, named after the client, with `fixed_count` = its users."""
    plans = spec.plan(phase=spec.initial_phase)
    return [
        type(c.name, (RocketMQUser,), {"client_name": c.name, "fixed_count": plans[c.name].users,
                                        "abstract": False, "__module__": __name__})
        for c in spec.clients
    ]
