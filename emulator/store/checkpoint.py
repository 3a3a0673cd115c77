"""`StoreCheckpoint` (rocketmq-all-5.3.0), the part controller mode needs: `<storePathRootDir>/checkpoint`, 4 KiB,
big-endian longs physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp, masterFlushedOffset, confirmPhyOffset.
The confirm offset is written there when it changes (at most once a second, as the real flush of the consume queues
writes the checkpoint) and at shutdown; start-up recovery of a controller-mode broker rebuilds its consume queues
only up to it."""
from __future__ import annotations

import os
import struct
import threading
import time

FILE_SIZE = 4096
_LAYOUT = struct.Struct(">qqqqq")
FLUSH_INTERVAL_S = 1.0


class StoreCheckpoint:
    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, "checkpoint")
        self.confirm_phy_offset = self._read()
        self._written = self.confirm_phy_offset
        self._stop = threading.Event()

    def _read(self) -> int:
        try:
            with open(self.path, "rb") as f:
                data = f.read(_LAYOUT.size)
        except OSError:
            return -1
        return _LAYOUT.unpack(data)[4] if len(data) == _LAYOUT.size else -1

    def flush(self) -> None:
        value = self.confirm_phy_offset
        if value == self._written:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < FILE_SIZE:
                os.ftruncate(fd, FILE_SIZE)
            now = int(time.time() * 1000)
            os.pwrite(fd, _LAYOUT.pack(now, now, now, 0, value), 0)
        finally:
            os.close(fd)
        self._written = value

    def start(self) -> None:
        threading.Thread(target=self._loop, name="FlushConsumeQueueService", daemon=True).start()

    def shutdown(self) -> None:
        self._stop.set()
        try:
            self.flush()
        except OSError:
            pass

    def _loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL_S):
            try:
                self.flush()
            except OSError:
                pass
