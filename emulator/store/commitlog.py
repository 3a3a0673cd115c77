"""The commitlog: every message of every topic appended to fixed-size mapped files under the put-message lock, whose
begin time (`beginTimeInLock`) tells how long the current put has held it; a message that does not fit ends the
file with a blank record and goes to the next file; a slave appends the master's bytes as they come (`appendData`);
start-up recovery ends at the first record `checkMessageAndReturnSize` does not take
(`emulator.store.message_check`)."""
from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass

from emulator.logs import store_log
from emulator.store.mapped_file_queue import MappedFileQueue
from emulator.store.message_check import check_message
from remoting.message_id import host_bytes
from remoting.stored import BLANK_MAGIC_CODE

END_FILE_MIN_BLANK_LENGTH = 4 + 4
QUEUE_OFFSET_POS = 20
PHYSICAL_OFFSET_POS = 28
SYSFLAG_POS = 36
BORNHOST_POS = 48
BORNHOST_V6_FLAG = 0x10
_LONG = struct.Struct(">q")
_SIZE_MAGIC = struct.Struct(">ii")


@dataclass(slots=True)
class AppendResult:
    status: str  # PUT_OK | END_OF_FILE | CREATE_MAPEDFILE_FAILED | MESSAGE_SIZE_EXCEEDED
    wrote_offset: int = 0
    wrote_bytes: int = 0
    msg_id: str = ""
    store_timestamp: int = 0
    logics_offset: int = 0
    elapsed_in_lock_ms: float = 0.0


def now_ms() -> float:
    return time.time() * 1000.0


class CommitLog:
    def __init__(self, queue: MappedFileQueue, store_host: str, append_through_mapping: bool, *,
                 reads_magic_v2: bool = False, logs_half_message: bool = False) -> None:
        self.queue = queue
        self.file_size = queue.file_size
        self.put_lock = threading.Lock()
        self.begin_time_in_lock = 0.0
        self.topic_queue_table: dict[str, int] = {}
        self._host_hex = host_bytes(store_host).hex().upper()
        self._append_through_mapping = append_through_mapping
        self.reads_magic_v2 = reads_magic_v2
        self._logs_half_message = logs_half_message

    # --- master: put ------------------------------------------------------------------------------------------
    def put_message(self, encoded: bytearray, topic: str, queue_id: int) -> AppendResult:
        """Append one encoded message (queue offset, physical offset and store time are patched in here)."""
        key = f"{topic}-{queue_id}"
        size = len(encoded)
        with self.put_lock:
            begin = now_ms()
            self.begin_time_in_lock = begin
            try:
                mf = self.queue.last()
                if mf is None or mf.is_full():
                    mf = self.queue.get_last_mapped_file(0)
                if mf is None:
                    store_log.error("create mapped file1 error, topic: %s", topic)
                    return AppendResult("CREATE_MAPEDFILE_FAILED")
                if size + END_FILE_MIN_BLANK_LENGTH > mf.remaining():
                    blank = mf.remaining()
                    mf.put(_SIZE_MAGIC.pack(blank, BLANK_MAGIC_CODE))
                    mf.wrote = mf.file_size
                    mf = self.queue.get_last_mapped_file(0)
                    if mf is None:
                        store_log.error("create mapped file2 error, topic: %s", topic)
                        return AppendResult("CREATE_MAPEDFILE_FAILED")
                    if size + END_FILE_MIN_BLANK_LENGTH > mf.remaining():
                        return AppendResult("MESSAGE_SIZE_EXCEEDED")
                wrote_offset = mf.file_from_offset + mf.wrote
                queue_offset = self.topic_queue_table.get(key, 0)
                store_ts = int(begin)
                _LONG.pack_into(encoded, QUEUE_OFFSET_POS, queue_offset)
                _LONG.pack_into(encoded, PHYSICAL_OFFSET_POS, wrote_offset)
                born_len = 20 if encoded[SYSFLAG_POS + 3] & BORNHOST_V6_FLAG else 8
                _LONG.pack_into(encoded, BORNHOST_POS + born_len, store_ts)
                mf.put(encoded)
                mf.store_timestamp = store_ts
                self.topic_queue_table[key] = queue_offset + 1
                elapsed = now_ms() - begin
            finally:
                self.begin_time_in_lock = 0.0
        if elapsed > 500:
            store_log.warning("[NOTIFYME]putMessage in lock cost time(ms)=%d, bodyLength=%d", elapsed, size)
        return AppendResult("PUT_OK", wrote_offset, size, f"{self._host_hex}{wrote_offset:016X}", store_ts,
                            queue_offset, elapsed)

    def lock_time_ms(self) -> int:
        begin = self.begin_time_in_lock
        return int(now_ms() - begin) if begin > 0 else 0

    # --- slave: append replicated bytes -------------------------------------------------------------------------
    def append_data(self, start_offset: int, data: bytes) -> bool:
        with self.put_lock:
            mf = self.queue.get_last_mapped_file(start_offset)
            if mf is None:
                store_log.error("appendData getLastMappedFile error  %d", start_offset)
                return False
            if self._append_through_mapping:
                return mf.append_through_mapping(data)
            return mf.append_by_file_write(data)

    # --- reading ----------------------------------------------------------------------------------------------
    def max_offset(self) -> int:
        return self.queue.max_offset()

    def min_offset(self) -> int:
        first = self.queue.first()
        return first.file_from_offset if first else -1

    def get_data(self, offset: int, max_size: int) -> bytes | None:
        """Readable bytes from `offset` up to the end of what its file holds (HA transfer, reput)."""
        mf = self.queue.find(offset)
        if mf is None:
            return None
        pos = offset % self.file_size
        readable = mf.read_position - pos
        if readable <= 0:
            return None
        return mf.read(pos, min(readable, max_size))

    def get_message(self, offset: int, size: int) -> bytes | None:
        mf = self.queue.find(offset)
        if mf is None:
            return None
        pos = offset % self.file_size
        if pos + size > mf.read_position:
            return None
        return mf.read(pos, size)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # --- recovery ---------------------------------------------------------------------------------------------
    def recover(self, check_crc: bool, last_exit_ok: bool = True) -> int:
        """`recoverNormally` (`recoverAbnormally` after a crash: its log lines) over every file: take records while
        `checkMessageAndReturnSize` does (a blank goes on to the next file), truncate from the first it does not
        take; returns the max offset."""
        end = 0
        for i, mf in enumerate(self.queue.files):
            if i:
                store_log.info("recover next physics file, %s", mf.path)
            pos, complete = self._recover_file(mf, check_crc, last_exit_ok)
            end = mf.file_from_offset + pos
            if not complete:
                break
        else:
            if self.queue.files:
                store_log.info("recover last 3 physics file over, last mapped file %s" if last_exit_ok else
                               "recover physics file over, last mapped file %s", self.queue.files[-1].path)
        self.queue.truncate_dirty(end)
        self.queue.flushed_where = self.queue.committed_where = end
        return end

    def _recover_file(self, mf, check_crc: bool, last_exit_ok: bool) -> tuple[int, bool]:
        """(where the file's valid records end, whether it ended with a blank); reads the mapping in place, as the
        broker reads its slice of the file."""
        view = memoryview(mf.mapping.mm)
        try:
            pos = 0
            while True:
                req = check_message(view, pos, self.file_size, check_crc=check_crc, accept_v2=self.reads_magic_v2)
                if req.success and req.msg_size > 0:
                    pos += req.msg_size
                elif req.success:
                    return self.file_size, True
                else:
                    if req.msg_size > 0 and self._logs_half_message:
                        store_log.warning("found a half message at %d, it will be truncated.",
                                          mf.file_from_offset + pos)
                    if last_exit_ok:
                        store_log.info("recover physics file end, %s", mf.path)
                    else:
                        store_log.info("recover physics file end, %s pos=%d", mf.path, req.read_to)
                    return pos, False
        finally:
            view.release()
