"""The commitlog: every message of every topic appended to fixed-size mapped files under the put-message lock, whose
begin time (`beginTimeInLock`) tells how long the current put has held it; a message that does not fit ends the
file with a blank record and goes to the next file; a slave appends the master's bytes as they come (`appendData`);
start-up recovery finds the last valid message by magic code, size and body CRC."""
from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass

from emulator.logs import store_log
from emulator.store.mapped_file_queue import MappedFileQueue
from remoting.message_id import host_bytes
from remoting.stored import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, body_crc

END_FILE_MIN_BLANK_LENGTH = 4 + 4
QUEUE_OFFSET_POS = 20
PHYSICAL_OFFSET_POS = 28
SYSFLAG_POS = 36
BORNHOST_POS = 48
BORNHOST_V6_FLAG = 0x10
_LONG = struct.Struct(">q")
_SIZE_MAGIC = struct.Struct(">ii")
_HEAD = struct.Struct(">iiiiiqqiq")


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
    def __init__(self, queue: MappedFileQueue, store_host: str, append_through_mapping: bool) -> None:
        self.queue = queue
        self.file_size = queue.file_size
        self.put_lock = threading.Lock()
        self.begin_time_in_lock = 0.0
        self.topic_queue_table: dict[str, int] = {}
        self._host_hex = host_bytes(store_host).hex().upper()
        self._append_through_mapping = append_through_mapping

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
    def recover(self, check_crc: bool) -> int:
        """Scan the files for the last valid message; truncate what follows; returns the max offset."""
        end = 0
        for mf in self.queue.files:
            pos = 0
            complete = False
            while pos + 8 <= self.file_size:
                size, magic = _SIZE_MAGIC.unpack(mf.read(pos, 8))
                if magic == BLANK_MAGIC_CODE and size > 0:
                    complete = True
                    break
                if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2) or size <= _HEAD.size \
                        or pos + size > self.file_size:
                    break
                if check_crc and not _crc_ok(mf.read(pos, size)):
                    store_log.warning("CheckMessageAndReturnSizeOld: CRC check failed at %d",
                                      mf.file_from_offset + pos)
                    break
                pos += size
            if pos == self.file_size:
                complete = True
            end = mf.file_from_offset + (self.file_size if complete else pos)
            if not complete:
                break
        self.queue.truncate_dirty(end)
        self.queue.flushed_where = self.queue.committed_where = end
        store_log.info("recover physics file end, %d", end)
        return end


def _crc_ok(message: bytes) -> bool:
    from remoting.stored import decode_stored_message

    try:
        msg, _ = decode_stored_message(message, 0, uncompress=False)
    except Exception:
        return False
    return body_crc(msg.body) == msg.body_crc
