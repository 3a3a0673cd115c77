"""`ReputMessageService`: reads the commitlog from where it left off and appends each message's position to its consume
queue, taking exactly the records `checkMessageAndReturnSize` takes (`emulator.store.message_check`). A blank record
rolls to the next file; a torn one (its fields add up to another size) is skipped with the broker's `[BUG]` line;
bytes that are no record (a failed write never stored them) stop the dispatch there until valid bytes appear, as on
a 4.9.1 slave, while a master (broker id 0) skips the rest of what it read, as the broker does."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.service_thread import ServiceThread
from emulator.store.commitlog import CommitLog
from emulator.store.message_check import check_message

READ_CHUNK = 4 * 1024 * 1024
IDLE_WAIT_S = 0.001


class ReputService(ServiceThread):
    def __init__(self, commitlog: CommitLog, store) -> None:
        super().__init__("ReputMessageService")
        self.commitlog = commitlog
        self.store = store
        self.reput_from = 0
        self._warned_at = -1
        self._lock = threading.Lock()

    def behind(self) -> int:
        """`dispatchBehindBytes`: how far dispatch is behind the end it may reach (the confirm offset in controller
        mode)."""
        return self.store.reput_end() - self.reput_from

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No dispatch while the store is being cut."""
        with self._lock:
            yield

    def run(self) -> None:
        store_log.info("ReputMessageService service started")
        while not self.stopped:
            VM_STATE.poll()
            try:
                with self._lock:
                    progressed = self.do_reput()
            except OSError as e:
                store_log.warning("ReputMessageService service has exception. %s", e)
                progressed = False
            if not progressed:
                self.wait_for_running(IDLE_WAIT_S)

    def do_reput(self) -> bool:
        """Dispatch what is readable now; True if anything moved."""
        moved = False
        end = self.store.reput_end()
        want = READ_CHUNK
        while self.reput_from < end:
            want = min(want, end - self.reput_from)
            data = self.commitlog.get_data(self.reput_from, want)
            if data is None:
                if self.commitlog.queue.find(self.reput_from) is None:
                    self.reput_from = self.commitlog.roll_next_file(self.reput_from)
                    continue
                return moved
            pos, verdict, torn = self._dispatch_read(data)
            moved = moved or pos > 0
            self.reput_from += pos
            if verdict == "roll":
                self.reput_from = self.commitlog.roll_next_file(self.reput_from)
            elif verdict == "torn":
                self.reput_from += torn
            elif verdict == "underflow" and len(data) == want and self.reput_from + want - pos < end:
                # the read was cut short by its own size, not by the readable end: read on from the record
                want = READ_CHUNK if pos else 2 * want
            elif verdict == "underflow" and len(data) == want:
                return moved  # a record across the dispatch end (a confirm offset): wait for it
            elif verdict in ("underflow", "unreadable"):
                return self._unreadable(len(data) - pos) or moved
            else:
                want = READ_CHUNK
        return moved

    def _dispatch_read(self, data: bytes) -> tuple[int, str, int]:
        """Dispatch the whole messages at the start of `data` (read at `reput_from`): how far they reach, what
        stopped them (`end` (the data), `roll` (a blank), `torn`, `underflow` (a record past the data's end) or
        `unreadable`), and the torn record's size (0 otherwise)."""
        pos, n = 0, len(data)
        accept_v2 = self.commitlog.reads_magic_v2
        while pos < n:
            offset = self.reput_from + pos
            req = check_message(data, pos, n, check_crc=False, read_body=False, accept_v2=accept_v2,
                                quiet=self._warned_at == offset)
            if req.success and req.msg_size > 0:
                self.store.dispatch(req.topic, req.queue_id, req.commitlog_offset, req.msg_size, req.tags_code,
                                    req.queue_offset)
                pos += req.msg_size
                continue
            if req.success:
                return pos, "roll", 0
            if req.msg_size > 0:
                store_log.error("[BUG]read total count not equals msg total size. reputFromOffset=%d", offset)
                return pos, "torn", req.msg_size
            self._warned_at = offset
            return pos, "underflow" if req.underflow else "unreadable", 0
        return pos, "end", 0

    def _unreadable(self, rest: int) -> bool:
        """Bytes at `reput_from` that are no record: a slave waits there (they may be rewritten); a master (broker
        id 0) skips the rest of what it read, as `doReput` does. True if it moved."""
        if self.store.config.get_int("brokerId") != 0:
            return False
        store_log.error("[BUG]dispatch message to consume queue error, COMMITLOG OFFSET: %d", self.reput_from)
        self.reput_from += rest
        return rest > 0
