"""The commitlog's flush and commit services: `GroupCommitService` (SYNC_FLUSH: requests wait until the flushed
position passes their offset, flushed in batches every 10 ms or when woken), `FlushRealTimeService` (ASYNC_FLUSH:
every `flushIntervalCommitLog` when enough pages are dirty; a flush over 500 ms logged as 4.9.x and 5.x do),
`CommitRealTimeService` (transient store pool: write buffers copied into the file every `commitIntervalCommitLog`),
and 4.9.3+'s `FlushDiskWatcher` deadline."""
from __future__ import annotations

import threading
import time

from emulator.config.broker_config import BrokerConfig
from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.server import flush_gathered, responses_gathered
from emulator.service_thread import RequestServiceThread, ServiceThread
from emulator.store.completion import Completion
from emulator.store.mapped_file_queue import MappedFileQueue

GROUP_COMMIT_WAIT_S = 0.010
OS_PAGE_SIZE = 4096
SLOW_FLUSH_LOG_MS = 500
"""FlushRealTimeService logs "Flush data to disk costs {} ms" past this (the real 4.9.1 with its disk throttled to
1 MiB/s: 5 lines, 1024 to 14546 ms; docs/diagnose.md)."""
SLOW_COMMIT_LOG_MS = 500
"""CommitRealTimeService logs "Commit data to file costs {} ms" past this (the real 4.9.1 with its store frozen for
20 s: one line, 19941 ms at the thaw; docs/fidelity.md)."""


class GroupCommitRequest:
    """A wait for the flushed (or replicated) position to reach `next_offset`; `deadline` (monotonic s) is fixed at
    creation, as 4.9.3+ does; 4.9.1 services compute their own when they reach the request."""

    __slots__ = ("next_offset", "deadline", "completion", "ack_nums")

    def __init__(self, next_offset: int, timeout_ms: int, ack_nums: int = 1) -> None:
        self.next_offset = next_offset
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.completion = Completion()
        self.ack_nums = ack_nums

    def wakeup_customer(self, status: str) -> None:
        self.completion.complete(status)


class GroupCommitService(RequestServiceThread):
    def __init__(self, queue: MappedFileQueue) -> None:
        super().__init__("GroupCommitService")
        self.queue = queue

    def run(self) -> None:
        store_log.info("GroupCommitService service started")
        while not self.stopped:
            self.wait_for_running(GROUP_COMMIT_WAIT_S)
            requests: list[GroupCommitRequest] = self.swap_requests()
            try:
                self._do_commit(requests)
            except OSError as e:
                store_log.warning("GroupCommitService service has exception. %s", e)
                self.put_back([r for r in requests if not r.completion.done])
                time.sleep(GROUP_COMMIT_WAIT_S)

    def _do_commit(self, requests: list[GroupCommitRequest]) -> None:
        queue = self.queue
        if not requests:
            queue.flush()
            return
        with responses_gathered():
            for req in requests:
                ok = queue.flushed_where >= req.next_offset
                for _ in range(2):
                    if ok:
                        break
                    flush_gathered()  # the requests a flush already covered are answered before the next one
                    queue.flush()
                    ok = queue.flushed_where >= req.next_offset
                req.wakeup_customer("PUT_OK" if ok else "FLUSH_DISK_TIMEOUT")


class FlushDiskWatcher(ServiceThread):
    """4.9.3+: a SYNC_FLUSH request still waiting at its deadline completes with FLUSH_DISK_TIMEOUT."""

    def __init__(self) -> None:
        super().__init__("FlushDiskWatcher")
        self._pending: list[GroupCommitRequest] = []
        self._lock = threading.Lock()

    def add(self, request: GroupCommitRequest) -> None:
        with self._lock:
            self._pending.append(request)

    def run(self) -> None:
        while not self.stopped:
            time.sleep(0.010)
            now = time.monotonic()
            with self._lock:
                pending, self._pending = self._pending, []
            keep = []
            for req in pending:
                if req.completion.done:
                    continue
                if now >= req.deadline:
                    req.wakeup_customer("FLUSH_DISK_TIMEOUT")
                else:
                    keep.append(req)
            with self._lock:
                self._pending[:0] = keep


class FlushRealTimeService(ServiceThread):
    def __init__(self, queue: MappedFileQueue, config: BrokerConfig) -> None:
        super().__init__("FlushRealTimeService")
        self.queue, self.config = queue, config
        self._last_thorough = time.monotonic()

    def run(self) -> None:
        store_log.info("FlushRealTimeService service started")
        while not self.stopped:
            interval = self.config.get_int("flushIntervalCommitLog") / 1000.0
            least_pages = self.config.get_int("flushCommitLogLeastPages")
            if time.monotonic() - self._last_thorough >= self.config.get_int("flushCommitLogThoroughInterval") / 1e3:
                self._last_thorough = time.monotonic()
                least_pages = 0
            self.wait_for_running(interval)
            dirty = self.queue.max_offset() - self.queue.flushed_where
            if dirty > 0 and dirty >= least_pages * OS_PAGE_SIZE:
                begin = time.monotonic()
                try:
                    self.queue.flush()
                except OSError as e:
                    store_log.warning("FlushRealTimeService service has exception. %s", e)
                    continue
                past_ms = int((time.monotonic() - begin) * 1000)
                if past_ms > SLOW_FLUSH_LOG_MS:
                    store_log.info("Flush data to disk costs %d ms", past_ms)


class CommitRealTimeService(ServiceThread):
    """Copies the transient-pool write buffers into their files; a full, committed file gives its buffer back."""

    def __init__(self, queue: MappedFileQueue, config: BrokerConfig, give_back, flush_service: ServiceThread) -> None:
        super().__init__("CommitRealTimeService")
        self.queue, self.config, self.give_back, self.flush_service = queue, config, give_back, flush_service

    def run(self) -> None:
        store_log.info("CommitRealTimeService service started")
        while not self.stopped:
            self.wait_for_running(self.config.get_int("commitIntervalCommitLog") / 1000.0)
            VM_STATE.poll()
            begin = time.monotonic()
            try:
                for mf in list(self.queue.files):
                    if mf.write_buffer is None:
                        continue
                    mf.commit()
                    self.queue.committed_where = max(self.queue.committed_where, mf.file_from_offset + mf.committed)
                    if mf.committed == mf.file_size:
                        buf, mf.write_buffer = mf.write_buffer, None
                        self.give_back(buf)
                self.flush_service.wake.set()
            except OSError as e:
                store_log.warning("CommitRealTimeService service has exception. %s", e)
                continue
            past_ms = int((time.monotonic() - begin) * 1000)
            if past_ms > SLOW_COMMIT_LOG_MS:  # as 4.9.1's: a commit held up by the disk (a frozen store) shows
                store_log.info("Commit data to file costs %d ms", past_ms)
