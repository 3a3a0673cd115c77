"""`AllocateMappedFileService`: creates the next commitlog file and pre-creates the one after it in the background.
A creation that fails (EROFS on a read-only store) marks the service as having an exception; while it has one,
every request for a new file gets nothing at once (4.9.1 `putRequestAndReturnMappedFile`)."""
from __future__ import annotations

import threading
import time
from collections import deque

from emulator.logs import store_log
from emulator.store.mapped_file import MappedFile
from emulator.store.transient_pool import TransientStorePool

WAIT_TIMEOUT_S = 5.0
RETRY_SLEEP_S = 0.001
ERROR_LOG_INTERVAL_S = 1.0


class _Request:
    __slots__ = ("path", "size", "done", "mapped_file")

    def __init__(self, path: str, size: int) -> None:
        self.path, self.size = path, size
        self.done = threading.Event()
        self.mapped_file: MappedFile | None = None


class AllocateMappedFileService:
    def __init__(self, pool: TransientStorePool | None = None) -> None:
        self.pool = pool
        self._table: dict[str, _Request] = {}
        self._queue: deque[_Request] = deque()
        self._cond = threading.Condition()
        self.has_exception = False
        self._stopped = False
        self._last_error_log = 0.0
        self._thread = threading.Thread(target=self._run, name="AllocateMappedFileService", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def put_request_and_return(self, next_path: str, next_next_path: str, size: int) -> MappedFile | None:
        with self._cond:
            for path in (next_path, next_next_path):
                if path not in self._table:
                    req = _Request(path, size)
                    self._table[path] = req
                    self._queue.append(req)
            self._cond.notify_all()
            if self.has_exception:
                store_log.warning("AllocateMappedFileService service has exception. so return null")
                return None
            req = self._table.get(next_path)
        if req is None:
            store_log.error("find preallocate mmap failed, this never happen")
            return None
        if not req.done.wait(WAIT_TIMEOUT_S):
            store_log.warning("create mmap timeout %s %d", req.path, req.size)
            return None
        with self._cond:
            self._table.pop(next_path, None)
        return req.mapped_file

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                req = self._queue.popleft()
                if self._table.get(req.path) is not req:
                    continue
            begin = time.monotonic()
            if self.pool is not None and not self.has_exception:  # 4.9.1 looks for a MappedFile service first,
                store_log.warning("Use default implementation.")  # finds none and says so (not at each retry here)
            try:
                mapped = MappedFile(req.path, req.size)
            except OSError as e:
                with self._cond:
                    self.has_exception = True
                    self._queue.appendleft(req)
                now = time.monotonic()
                if now - self._last_error_log >= ERROR_LOG_INTERVAL_S:
                    self._last_error_log = now
                    store_log.warning("AllocateMappedFileService service has exception. %s", e)
                time.sleep(RETRY_SLEEP_S)
                continue
            if self.pool is not None:  # the file first, then its buffer, as 4.9.1's MappedFile.init: a creation
                mapped.write_buffer = self.pool.borrow()  # blocked on a frozen disk takes none meanwhile
            elapsed_ms = (time.monotonic() - begin) * 1000
            if elapsed_ms > 10:
                store_log.warning("create mappedFile spent time(ms) %d queue size %d %s %d", elapsed_ms,
                                  len(self._queue), req.path, req.size)
            req.mapped_file = mapped
            with self._cond:
                self.has_exception = False
            req.done.set()
