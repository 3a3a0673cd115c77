"""One consume queue (topic, queue id): 20-byte entries (commitlog offset, size, tags hash) in fixed-size files under
`storePathRootDir/consumequeue/<topic>/<queueId>/`, written by the reput service with a plain file write (4.9.1) or
through the mapping (4.9.3+), read by PULL_MESSAGE and the offset queries."""
from __future__ import annotations

import os
import struct

from emulator.logs import store_log
from emulator.store.mapped_file_queue import MappedFileQueue

CQ_STORE_UNIT_SIZE = 20
_ENTRY = struct.Struct(">qiq")
_INT_MAX = 2**31 - 1


class ConsumeQueue:
    def __init__(self, root: str, topic: str, queue_id: int, file_size: int, through_mapping: bool) -> None:
        self.topic, self.queue_id = topic, queue_id
        file_size = -(-file_size // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
        self.queue = MappedFileQueue(os.path.join(root, "consumequeue", topic, str(queue_id)), file_size)
        self.file_size = file_size
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self._through_mapping = through_mapping

    def put(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        if offset + size <= self.max_physic_offset:
            return True
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        mf = self.queue.get_last_mapped_file(expect)
        if mf is None:
            return False
        if mf.wrote == 0 and expect != 0 and len(self.queue.files) == 1 and mf.file_from_offset != expect:
            self.min_logic_offset = expect
            self.queue.flushed_where = self.queue.committed_where = expect
            blank = _ENTRY.pack(0, _INT_MAX, 0)
            for _ in range((expect - mf.file_from_offset) // CQ_STORE_UNIT_SIZE):
                self._append(mf, blank)
        current = mf.file_from_offset + mf.wrote
        if expect < current:
            store_log.warning("Build  consume queue repeatedly, expectLogicOffset: %d currentLogicOffset: %d Topic: %s "
                              "QID: %d", expect, current, self.topic, self.queue_id)
            return True
        if expect != current:
            store_log.warning("[BUG]logic queue order maybe wrong, expectLogicOffset: %d currentLogicOffset: %d "
                              "Topic: %s QID: %d", expect, current, self.topic, self.queue_id)
        self.max_physic_offset = offset + size
        return self._append(mf, _ENTRY.pack(offset, size, tags_code))

    def _append(self, mf, entry: bytes) -> bool:
        return mf.append_through_mapping(entry) if self._through_mapping else mf.append_by_file_write(entry)

    def entries(self, index: int, max_count: int) -> list[tuple[int, int, int]]:
        """Up to `max_count` (offset, size, tags) from queue offset `index`, within one file."""
        pos = index * CQ_STORE_UNIT_SIZE
        mf = self.queue.find(pos)
        if mf is None:
            return []
        rel = pos % self.file_size
        n = min(max_count, (mf.read_position - rel) // CQ_STORE_UNIT_SIZE)
        if n <= 0:
            return []
        raw = mf.read(rel, n * CQ_STORE_UNIT_SIZE)
        return [_ENTRY.unpack_from(raw, i * CQ_STORE_UNIT_SIZE) for i in range(n)]

    def max_offset_in_queue(self) -> int:
        return self.queue.max_offset() // CQ_STORE_UNIT_SIZE

    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def truncate_physical(self, phy_offset: int) -> None:
        """`truncateDirtyLogicFiles`: drop the entries of messages at or after commitlog offset `phy_offset`."""
        lo, hi = self.min_offset_in_queue(), self.max_offset_in_queue()
        while lo < hi:  # the first entry at or past phy_offset (entries grow with the commitlog offset)
            mid = (lo + hi) // 2
            entry = self.entries(mid, 1)
            if entry and entry[0][0] >= phy_offset:
                hi = mid
            else:
                lo = mid + 1
        if lo < self.max_offset_in_queue():
            self.queue.truncate_dirty(lo * CQ_STORE_UNIT_SIZE)
            last = self.entries(lo - 1, 1) if lo > 0 else []
            self.max_physic_offset = last[0][0] + last[0][1] if last else -1

    def flush(self) -> None:
        self.queue.flush()

    def close(self) -> None:
        self.queue.close()
