"""`TransientStorePool`: `transientStorePoolSize` off-heap write buffers of one commitlog file each. A mapped file
borrows one when it is created and returns it once fully committed; an empty pool makes the send processor reject."""
from __future__ import annotations

import threading
from collections import deque

from emulator.logs import store_log
from emulator.store.native import Mapping, memset

INTEGER_MAX = 2**31 - 1
LOW_SHARE = 0.4


class TransientStorePool:
    def __init__(self, size: int, file_size: int) -> None:
        self.size, self.file_size = size, file_size
        self._available: deque[Mapping] = deque()
        self._lock = threading.Lock()
        for _ in range(size):
            buf = Mapping(-1, file_size)
            memset(buf.addr, 0, file_size)
            self._available.append(buf)
        store_log.info("TransientStorePool init, %d buffers of %d bytes", size, file_size)

    def borrow(self) -> Mapping | None:
        """A buffer, or None when the pool is empty (the file is then written through its mapping). As 4.9.1's
        `borrowBuffer`, it warns after every borrow that leaves under 40 % of the pool."""
        with self._lock:
            buf = self._available.popleft() if self._available else None
            remain = len(self._available)
        if remain < self.size * LOW_SHARE:
            store_log.warning("TransientStorePool only remain %d sheets.", remain)
        return buf

    def give_back(self, buf: Mapping) -> None:
        with self._lock:
            self._available.append(buf)

    def available(self) -> int:
        return len(self._available)
