"""`ReputMessageService`: reads the commitlog from where it left off and appends each valid message's position to
its consume queue. A blank record rolls to the next file; an invalid one (bytes a failed write never stored) stops
the dispatch there until valid bytes appear, as on a 4.9.1 slave."""
from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.service_thread import ServiceThread
from emulator.store.commitlog import CommitLog
from remoting.hashmap import java_string_hash
from remoting.message import string_to_properties
from remoting.stored import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2

READ_CHUNK = 4 * 1024 * 1024
IDLE_WAIT_S = 0.001
_HEAD = struct.Struct(">iiiiiqqiq")
_TAIL = struct.Struct(">iqi")


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def parse_dispatch(buf: bytes, pos: int) -> tuple[int, str, int, int, int, int] | None:
    """(size, topic, queue_id, queue_offset, physical_offset, tags_code) of the message at `pos`, None if invalid."""
    size, magic, _crc, queue_id, _flag, queue_offset, phy, sys_flag, _born = _HEAD.unpack_from(buf, pos)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2) or size <= _HEAD.size or pos + size > len(buf):
        return None
    p = pos + _HEAD.size + (20 if sys_flag & 0x10 else 8) + 8 + (20 if sys_flag & 0x20 else 8)
    _reconsume, _prepared, body_len = _TAIL.unpack_from(buf, p)
    p += 16 + body_len
    if magic == MESSAGE_MAGIC_CODE:
        topic_len = buf[p]
        p += 1
    else:
        (topic_len,) = struct.unpack_from(">h", buf, p)
        p += 2
    topic = buf[p : p + topic_len].decode("utf-8", "replace")
    p += topic_len
    (props_len,) = struct.unpack_from(">h", buf, p)
    props = buf[p + 2 : p + 2 + props_len].decode("utf-8", "replace")
    tags = string_to_properties(props).get("TAGS") if "TAGS" in props else None
    tags_code = _signed(java_string_hash(tags)) if tags else 0
    return size, topic, queue_id, queue_offset, phy, tags_code


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
        while self.reput_from < end:
            data = self.commitlog.get_data(self.reput_from, min(READ_CHUNK, end - self.reput_from))
            if data is None:
                if self.commitlog.queue.find(self.reput_from) is None and self.reput_from < end:
                    self.reput_from = self.commitlog.roll_next_file(self.reput_from)
                    continue
                return moved
            pos = 0
            n = len(data)
            while pos + 8 <= n:
                size, magic = struct.unpack_from(">ii", data, pos)
                if magic == BLANK_MAGIC_CODE and size > 0:
                    self.reput_from = self.commitlog.roll_next_file(self.reput_from + pos)
                    pos = -1
                    break
                if pos + max(size, 8) > n and size > 0 and magic in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
                    break
                parsed = parse_dispatch(data, pos)
                if parsed is None:
                    offset = self.reput_from + pos
                    if self._warned_at != offset:
                        self._warned_at = offset
                        store_log.warning("found a illegal magic code 0x%x at %d, dispatch stops here", magic & 0xFFFFFFFF,
                                          offset)
                    self.reput_from = offset
                    return moved
                size, topic, queue_id, queue_offset, phy, tags_code = parsed
                self.store.dispatch(topic, queue_id, phy, size, tags_code, queue_offset)
                pos += size
                moved = True
            if pos > 0:
                self.reput_from += pos
            elif pos == 0:
                return moved
        return moved
