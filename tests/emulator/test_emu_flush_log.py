"""The emulator's FlushRealTimeService (ASYNC_FLUSH) logs a flush of the commitlog that took over 500 ms as 4.9.x and
5.x do ("Flush data to disk costs N ms", store.log), and a quicker one not. The flush's time is taken around the
flush itself: a stand-in queue moves a stand-in clock by each flush's cost, so no real time passes."""
from __future__ import annotations

import logging

from emulator.store import flush as flush_module


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Config:
    VALUES = {"flushIntervalCommitLog": 500, "flushCommitLogLeastPages": 0, "flushCommitLogThoroughInterval": 10_000}

    def get_int(self, key: str) -> int:
        return self.VALUES[key]


class Queue:
    """A commitlog with dirty bytes whose flushes take `costs_s` in turn; the service stops after the last one."""

    def __init__(self, clock: Clock, costs_s: list[float]) -> None:
        self.clock, self.costs_s, self.flushed_where = clock, list(costs_s), 0
        self.service: flush_module.FlushRealTimeService | None = None

    def max_offset(self) -> int:
        return self.flushed_where + 4096

    def flush(self) -> bool:
        self.clock.now += self.costs_s.pop(0)
        self.flushed_where += 4096
        assert self.service is not None
        if self.costs_s:
            self.service.wake.set()  # the next turn starts at once
        else:
            self.service.shutdown()
        return True


def test_a_flush_over_500_ms_is_logged_with_its_cost(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(flush_module, "time", clock)
    queue = Queue(clock, [0.2, 0.5, 0.75, 14.546])
    service = flush_module.FlushRealTimeService(queue, Config())
    queue.service = service
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    log, level = flush_module.store_log, flush_module.store_log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)  # as the emulator's `logs.setup` sets it
    try:
        service.wake.set()
        service.run()  # in this thread: returns when the queue stops it
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    costs = [line for line in lines if line.startswith("Flush data to disk costs")]
    assert costs == ["Flush data to disk costs 750 ms", "Flush data to disk costs 14546 ms"], lines
