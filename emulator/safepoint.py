"""The JVM's safepoints, as far as a broker's behaviour depends on them.

HotSpot stops every Java thread at a safepoint for each garbage collection and, while it has cleanup work, at least
every `GuaranteedSafepointInterval` (1000 ms). A thread stops at its next safepoint poll; a thread blocked in native
code (a socket read, `FileChannel.write`, `fsync`, a lock wait) already counts as stopped. A thread inside a copy
into a mapped file does not: when that copy page-faults on a frozen filesystem it stays in the fault, the safepoint is
never reached, and every other thread waits at its poll until the fault is served. The real 4.9.1 master whose store
was frozen under load logged one `Safepoint "Cleanup" ... Reaching safepoint: 19680027282 ns` (the whole 20 s freeze)
that began 0.33 s after the freeze: until then the fast-failure thread answered queued sends `[TIMEOUT_CLEAN_QUEUE]`,
from then on nothing answered at all, and no `[REJECTREQUEST]` (page cache busy after 1000 ms) ever came.

Here, with one `VM` per broker process:
- `copying()` brackets every copy into or out of a mapping (store files, the JVM-like heap, pool buffers): the
  thread is "in Java" and the VM waits for it to leave.
- `poll()` is the safepoint poll of threads that run Java code between blocking calls: the remoting reader of a
  connection, every response written, the request pools, the fast-failure sweeper, the HA and group-transfer
  services. It returns at once unless an operation is pending.
- `synchronize(cause)` is the VM thread's operation: block new copies, wait until none is in progress (the time to
  safepoint), run the operation, let everyone go. `VMThread` asks for one every `GuaranteedSafepointInterval`
  (`Cleanup`); the JVM-like heap asks for one when its eden is full (`G1CollectForAllocation`).
Each operation is logged in HotSpot's unified-logging words to `gc.log` in the log directory (`-Xlog:safepoint`)."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from emulator.durations import Durations

GUARANTEED_SAFEPOINT_INTERVAL_S = 1.0
"""HotSpot's `-XX:GuaranteedSafepointInterval` default (1000 ms)."""
LATE_LEAD_S = 0.010
"""How long the threads stopped at polls wait, after an operation, for a thread that kept it waiting (one that was
in a copy) to reach its next poll. In the JVM that thread finishes its short remaining work (the rest of a put,
releasing the put-message lock) in microseconds while the others re-read their sockets; under the GIL the first
thread to get the interpreter runs up to a switch interval, and the freed remoting reader dispatched 57 held sends
into the still-held lock (`[REJECTREQUEST]`) where the real 4.9.1 answered those sends SEND_OK (docs/fidelity.md)."""
LOG_NAME = "jvm.safepoint"
LOG_FILE = "gc.log"

log = logging.getLogger(LOG_NAME)


class VM:
    """The safepoint state of one process."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._pending = False
        self._copying = 0
        self._late = 0
        """threads that left a copy while an operation waited for them and have not polled since"""
        self._late_until = 0.0
        self._local = threading.local()
        """`late`: the number of the operation that waited for this thread (it polls first after it)"""
        self._last_ns = time.perf_counter_ns()
        self.reaching = Durations()
        """the time to safepoint of every operation (`count`: the operations so far)"""

    @property
    def pending(self) -> bool:
        return self._pending

    def poll(self) -> None:
        """Stop here while a safepoint operation is pending (and, right after one, until the threads it waited for
        have reached their next poll, at most `LATE_LEAD_S`)."""
        if not (self._pending or self._late):
            return
        cond, local = self._cond, self._local
        with cond:
            if getattr(local, "late", -1) == self.reaching.count:  # the operation waited for this thread
                local.late = -1
                self._late -= 1
                cond.notify_all()
                return
            while self._pending:
                cond.wait()
            while self._late:
                left = self._late_until - time.monotonic()
                if left <= 0:
                    self._late = 0
                    break
                cond.wait(left)

    def enter_copy(self) -> None:
        """Begin a copy the VM cannot interrupt (Java code touching mapped or heap pages): waits while an operation
        is pending. Pair with `leave_copy` in a `finally`."""
        cond = self._cond
        with cond:
            while self._pending:
                cond.wait()
            self._copying += 1

    def leave_copy(self) -> None:
        """End the copy; stops at the safepoint if one is pending."""
        cond = self._cond
        with cond:
            self._copying -= 1
            if self._pending:
                self._local.late = self.reaching.count + 1  # late for the operation under way
                self._late += 1
                cond.notify_all()
                while self._pending:
                    cond.wait()

    @contextmanager
    def copying(self) -> Iterator[None]:
        self.enter_copy()
        try:
            yield
        finally:
            self.leave_copy()

    def synchronize(self, cause: str, operation: Callable[[], None] | None = None) -> int:
        """Bring every thread to the safepoint, run `operation`, release them. Returns the time to safepoint (ns).
        Must not be called from inside `copying()`."""
        cond = self._cond
        with cond:
            while self._pending:  # one operation at a time
                cond.wait()
            self._pending = True
            self._late = 0
            begin = time.perf_counter_ns()
            while self._copying:
                cond.wait()
            reached = time.perf_counter_ns()
        try:
            if operation is not None:
                operation()
        finally:
            end = time.perf_counter_ns()
            with cond:
                self._pending = False
                self._late_until = time.monotonic() + LATE_LEAD_S
                cond.notify_all()
                since, self._last_ns = begin - self._last_ns, end
                self.reaching.record(reached - begin)
        log.info('Safepoint "%s", Time since last: %d ns, Reaching safepoint: %d ns, At safepoint: %d ns, '
                 "Total: %d ns", cause, since, reached - begin, end - reached, end - begin)
        return reached - begin


VM_STATE = VM()
"""The process's VM (one broker per process, as one broker per JVM)."""


class VMThread(threading.Thread):
    """Asks for a `Cleanup` safepoint every `GuaranteedSafepointInterval`, as HotSpot's VM thread does while it has
    cleanup work (the real broker under load logged one every 1000 ms)."""

    def __init__(self, vm: VM = VM_STATE, interval_s: float = GUARANTEED_SAFEPOINT_INTERVAL_S) -> None:
        super().__init__(name="VM Thread", daemon=True)
        self.vm, self.interval_s = vm, interval_s
        self._stopped = threading.Event()

    def shutdown(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            self.vm.synchronize("Cleanup")


def open_log(directory) -> None:
    """Write safepoint lines to `<directory>/gc.log` (HotSpot's `-Xlog:safepoint:file=...`)."""
    handler = logging.FileHandler(directory / LOG_FILE, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s.%(msecs)03d+0000][safepoint   ] %(message)s",
                                           "%Y-%m-%dT%H:%M:%S"))
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(handler)
