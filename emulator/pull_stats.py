"""`GROUP_GET_NUMS` of `BrokerStatsManager`: messages pulled per `topic@group`, for GET_CONSUME_STATS' `consumeTps`
(`tpsGroupGetNums`: the minute's rate; here the messages found in the trailing 60 s divided by 60)."""
from __future__ import annotations

import threading
import time
from collections import deque

WINDOW_S = 60.0


class GroupGetStats:
    def __init__(self) -> None:
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def record(self, group: str, topic: str, count: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            samples = self._samples.setdefault(f"{topic}@{group}", deque())
            samples.append((now, count))
            while samples and samples[0][0] < now - WINDOW_S:
                samples.popleft()

    def tps(self, group: str, topic: str, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        with self._lock:
            samples = self._samples.get(f"{topic}@{group}") or ()
            return sum(n for t, n in samples if t >= now - WINDOW_S) / WINDOW_S
