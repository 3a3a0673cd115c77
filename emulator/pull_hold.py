"""`PullRequestHoldService` + `NotifyMessageArrivingListener`: long polling as 4.9.1 does it. A pull with the suspend
flag that finds nothing is held here (no answer yet) under `topic@queueId`; it is run again (without suspend) on the
pull thread pool when a message for that queue is dispatched by the reput service (master only, `longPollingEnable`)
or when the periodic check finds the queue's max offset past the pull's offset or its suspend time over. The check
runs every 5 s with long polling (`shortPollingTimeMills` without), so a held pull's NO_NEW_MSG comes between its
suspend time and 5 s after it, as on the real 4.9.1. Held pulls take no pull thread while held."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from emulator.logs import broker_log
from emulator.server import Channel
from remoting.command import RemotingCommand

LONG_POLLING_CHECK_S = 5.0


@dataclass(slots=True)
class HeldPull:
    channel: Channel
    request: RemotingCommand
    timeout_ms: int
    suspended_ms: int
    pull_from: int


class PullRequestHoldService(threading.Thread):
    def __init__(self, long_polling: Callable[[], bool], short_polling_ms: Callable[[], int],
                 max_offset: Callable[[str, int], int], wake_up: Callable[[HeldPull], None]) -> None:
        """`wake_up(held)` runs the pull again on the pull pool; `max_offset(topic, queue_id)` is the store's."""
        super().__init__(name="PullRequestHoldService", daemon=True)
        self._long_polling, self._short_polling_ms = long_polling, short_polling_ms
        self._max_offset, self._wake_up = max_offset, wake_up
        self._table: dict[tuple[str, int], list[HeldPull]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def suspend(self, topic: str, queue_id: int, held: HeldPull) -> None:
        with self._lock:
            self._table.setdefault((topic, queue_id), []).append(held)

    def held_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._table.values())

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int) -> None:
        """A message up to `max_offset` (exclusive) is in the queue: wake the pulls it serves, and the expired."""
        if not self._table:
            return
        key = (topic, queue_id)
        with self._lock:
            held = self._table.pop(key, None)
        if not held:
            return
        keep: list[HeldPull] = []
        now = int(time.time() * 1000)
        for request in held:
            newest = max_offset
            if newest <= request.pull_from:
                newest = self._max_offset(topic, queue_id)
            if newest > request.pull_from or now >= request.suspended_ms + request.timeout_ms:
                self._run(request)
            else:
                keep.append(request)
        if keep:
            with self._lock:
                self._table.setdefault(key, []).extend(keep)

    def _run(self, request: HeldPull) -> None:
        try:
            self._wake_up(request)
        except Exception as e:  # the Java service logs and goes on
            broker_log.error("execute request when wakeup failed. %s", e)

    def run(self) -> None:
        broker_log.info("PullRequestHoldService service started")
        while not self._stopped.is_set():
            wait_s = LONG_POLLING_CHECK_S if self._long_polling() else self._short_polling_ms() / 1000.0
            if self._stopped.wait(wait_s):
                return
            with self._lock:
                keys = list(self._table)
            for topic, queue_id in keys:
                try:
                    self.notify_message_arriving(topic, queue_id, self._max_offset(topic, queue_id))
                except Exception as e:
                    broker_log.error("check hold request failed. topic=%s, queueId=%d %s", topic, queue_id, e)

    def shutdown(self) -> None:
        self._stopped.set()
