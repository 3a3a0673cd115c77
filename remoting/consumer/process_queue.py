"""`ProcessQueue`: the messages of one message queue pulled and not yet consumed, by queue offset, with their count
and body size; `remove` gives the offset to commit (the smallest offset still cached, else the highest offset
put + 1), and the flow-control checks of `DefaultMQPushConsumerImpl.pullMessage` read `count`, `size` and
`max_span`. Thread-safe (one lock; Java's is a read-write lock)."""
from __future__ import annotations

import threading
import time
from bisect import bisect_left, insort

from remoting.stored import MessageExt


class ProcessQueue:
    """Cached messages of one queue. `dropped` is set when the queue is taken away (rebalance, offset illegal)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []  # sorted keys of _msgs (Java: TreeMap)
        self.count = 0
        self.size = 0
        """Sum of the cached bodies' lengths (bytes)."""
        self.queue_offset_max = 0
        self.dropped = False
        self.last_pull_timestamp = time.time()
        self.last_consume_timestamp = time.time()

    def put(self, msgs: list[MessageExt]) -> bool:
        """`putMessage`: add the messages not cached yet; True when the queue was idle (nothing being consumed)."""
        with self._lock:
            was_empty = not self._msgs
            for msg in msgs:
                offset = msg.queue_offset
                if offset in self._msgs:
                    continue
                self._msgs[offset] = msg
                insort(self._offsets, offset)
                self.count += 1
                self.size += len(msg.body)
                self.queue_offset_max = offset
            return was_empty

    def remove(self, msgs: list[MessageExt]) -> int:
        """`removeMessage`: drop the consumed messages; the offset to commit, or -1 when nothing was ever cached."""
        with self._lock:
            self.last_consume_timestamp = time.time()
            if not self._msgs:
                return -1
            result = self.queue_offset_max + 1
            for msg in msgs:
                cached = self._msgs.pop(msg.queue_offset, None)
                if cached is not None:
                    del self._offsets[bisect_left(self._offsets, msg.queue_offset)]
                    self.count -= 1
                    self.size -= len(cached.body)
            if self._offsets:
                result = self._offsets[0]
            return result

    @property
    def min_offset(self) -> int | None:
        offsets = self._offsets
        return offsets[0] if offsets else None

    @property
    def max_offset(self) -> int | None:
        offsets = self._offsets
        return offsets[-1] if offsets else None

    @property
    def max_span(self) -> int:
        """`getMaxSpan`: last cached offset - first cached offset (0 when empty)."""
        with self._lock:
            return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def first_last(self) -> tuple[int | None, int | None]:
        with self._lock:
            return (self._offsets[0], self._offsets[-1]) if self._offsets else (None, None)
