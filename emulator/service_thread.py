"""`ServiceThread`: Java's `org.apache.rocketmq.common.ServiceThread` as the store's services use it: a daemon thread
named after the Java service, a `Wakeup` flag (`wake`) other threads raise, `stopped`, and `wait_for_running` (wait
until woken or at most an interval, then lower the flag, as `waitForRunning` does). `RequestServiceThread` adds the
request list of the group-commit style services (`GroupCommitService`, `GroupTransferService`): `put_request`
appends and wakes the service, `swap_requests` takes every request written so far (Java swaps its write and read
lists under the same lock)."""
from __future__ import annotations

import threading
from typing import Any

from emulator.wakeup import Wakeup


class ServiceThread(threading.Thread):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.wake = Wakeup()
        self.stopped = False

    def shutdown(self) -> None:
        self.stopped = True
        self.wake.set()

    def wait_for_running(self, interval_s: float) -> None:
        self.wake.wait(interval_s)
        self.wake.clear()


class RequestServiceThread(ServiceThread):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._write: list[Any] = []
        self._lock = threading.Lock()

    def put_request(self, request: Any) -> None:
        with self._lock:
            self._write.append(request)
        self.wake.set()

    def swap_requests(self) -> list[Any]:
        """Every request put since the last swap, in the order they came."""
        with self._lock:
            requests, self._write = self._write, []
        return requests

    def put_back(self, requests: list[Any]) -> None:
        """Requests a failed round took, back at the head of the list (before any put since)."""
        with self._lock:
            self._write[:0] = requests

    def pending(self) -> int:
        return len(self._write)
