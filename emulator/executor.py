"""A fixed thread pool with a bounded queue whose entries remember when they were queued, as the broker's
`BrokerFixedThreadPoolExecutor` + `LinkedBlockingQueue(capacity)` + `RequestTask`: a full queue rejects the submit
(the server answers `[OVERLOAD]`), and the fast-failure sweeper can peek at, poll and remove queued tasks."""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from emulator.logs import broker_log
from emulator.safepoint import VM_STATE


class RejectedExecution(Exception):
    """The pool's queue is full (`RejectedExecutionException`)."""


class RequestTask:
    """A queued request: `run()` does the work; `return_response` answers it without running (fast failure)."""

    __slots__ = ("create_ms", "run", "respond", "stop_run")

    def __init__(self, run: Callable[[], None], respond: Callable[[int, str], None]) -> None:
        self.create_ms = time.time() * 1000.0
        self.run = run
        self.respond = respond
        self.stop_run = False

    def return_response(self, code: int, remark: str) -> None:
        self.respond(code, remark)


class BoundedExecutor:
    def __init__(self, name: str, threads: int, capacity: int) -> None:
        self.name = name
        self.capacity = capacity
        self.queue: deque[RequestTask] = deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i + 1}", daemon=True)
                         for i in range(max(1, threads))]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def submit(self, task: RequestTask) -> None:
        with self._cond:
            if len(self.queue) >= self.capacity:
                raise RejectedExecution(self.name)
            self.queue.append(task)
            self._cond.notify()

    def poll(self) -> RequestTask | None:
        """Take the head without running it (the sweeper's `poll(0)`)."""
        with self._cond:
            return self.queue.popleft() if self.queue else None

    def peek(self) -> RequestTask | None:
        q = self.queue
        try:
            return q[0]
        except IndexError:
            return None

    def remove_head(self, task: RequestTask) -> bool:
        """Remove `task` if it is still the head (`BlockingQueue.remove(runnable)` on the peeked head)."""
        with self._cond:
            if self.queue and self.queue[0] is task:
                self.queue.popleft()
                return True
            return False

    def size(self) -> int:
        return len(self.queue)

    def head_wait_ms(self) -> int:
        head = self.peek()
        return int(time.time() * 1000 - head.create_ms) if head is not None else 0

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _work(self) -> None:
        cond, queue = self._cond, self.queue
        while True:
            with cond:
                while not queue and not self._stopped:
                    cond.wait()
                if self._stopped:
                    return
                task = queue.popleft()
            VM_STATE.poll()
            try:
                task.run()
            except Exception:
                broker_log.exception("process request exception")
            VM_STATE.poll()
