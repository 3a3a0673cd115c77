"""`BrokerFastFailure`: every 10 ms (after 1 s), while page cache is busy the send queue is drained with
`[PCBUSY_CLEAN_QUEUE]`, then queued requests whose wait passed `waitTimeMillsInSendQueue` (pull:
`waitTimeMillsInPullQueue`, heartbeat: `waitTimeMillsInHeartbeatQueue`) are answered `[TIMEOUT_CLEAN_QUEUE]`."""
from __future__ import annotations

import threading
import time

from emulator.config.broker_config import BrokerConfig
from emulator.executor import BoundedExecutor
from emulator.safepoint import VM_STATE
from emulator.store.message_store import MessageStore
from remoting.codes import ResponseCode

INITIAL_DELAY_S = 1.0
PERIOD_S = 0.010
PCBUSY = "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {}ms, size of queue: {}"
TIMEOUT = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {}ms, size of queue: {}"


class BrokerFastFailure(threading.Thread):
    def __init__(self, config: BrokerConfig, store: MessageStore, queues: dict[str, tuple[BoundedExecutor, str]]):
        super().__init__(name="BrokerFastFailureScheduledThread", daemon=True)
        self.config, self.store, self.queues = config, store, queues
        self._stopped = threading.Event()

    def shutdown(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        if self._stopped.wait(INITIAL_DELAY_S):
            return
        next_at = time.monotonic()
        while not self._stopped.is_set():
            VM_STATE.poll()
            if self.config.get_bool("brokerFastFailureEnable"):
                self.clean_expired_request()
            next_at += PERIOD_S
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stopped.wait(delay)
            else:
                next_at = time.monotonic()

    def clean_expired_request(self) -> None:
        send = self.queues.get("send")
        if send is not None:
            executor = send[0]
            while self.store.is_os_page_cache_busy():
                task = executor.poll()
                if task is None:
                    break
                task.return_response(ResponseCode.SYSTEM_BUSY, PCBUSY.format(
                    int(time.time() * 1000 - task.create_ms), executor.size()))
        for executor, key in self.queues.values():
            self._clean_in_queue(executor, self.config.get_int(key))

    @staticmethod
    def _clean_in_queue(executor: BoundedExecutor, max_wait_ms: int) -> None:
        while True:
            task = executor.peek()
            if task is None or task.stop_run:
                return
            behind = int(time.time() * 1000 - task.create_ms)
            if behind < max_wait_ms:
                return
            if executor.remove_head(task):
                task.stop_run = True
                task.return_response(ResponseCode.SYSTEM_BUSY, TIMEOUT.format(behind, executor.size()))
