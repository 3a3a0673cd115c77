"""A clock for `remoting.fault_strategy` in tests: whole milliseconds that move only when a test (or a scripted
broker answering "slowly") moves them, so that no test waits for time to pass."""
from __future__ import annotations

T0 = 1_000_000_000


class FakeClock:
    def __init__(self, ms: int = T0) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms
