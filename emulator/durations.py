"""`Durations`: how many times something lasted a while, and how long the last and the longest time lasted (ns), as
the emulator reports it: the HA connection count's periods at zero (`haConnectionZero*` in the runtime info), the
VM's times to safepoint."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Durations:
    count: int = 0
    last_ns: int = 0
    max_ns: int = 0

    def record(self, ns: int) -> None:
        self.count += 1
        self.last_ns = ns
        self.max_ns = max(self.max_ns, ns)
