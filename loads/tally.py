"""Progress figures of a load: what each written batch of rows adds up to (`BatchSummary`), the running sums over
all workers (`Tally`), and the snapshot the harness and the terminal show (`LoadStats`).

Figures come from the rows as they are written, so they agree with the Parquet files: outcome counts so far, the
completion rate and the p99 latency (from the intended start) over the last `WINDOW_S` seconds, and the p99 of how
late sends started against their schedule. Imports neither gevent nor Locust: the harness process uses it too.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from loads.histogram import LogHistogram

WINDOW_S = 5.0
NS_PER_S = 1_000_000_000


@dataclass
class BatchSummary:
    """One batch of rows written by one worker, covering completions in (`since_ns`, `t_ns`]."""

    worker: str
    since_ns: int
    t_ns: int
    rows: int
    outcomes: dict[str, int]
    latency: LogHistogram
    lag: LogHistogram
    fired: int = 0
    in_flight: int = 0
    parts: int = 0
    rows_written: int = 0
    dropped: int = 0
    """open-model slots dropped late so far by this worker (not started within the max lag)"""
    lag_ms: float = 0.0
    """how late the oldest slot still owed by a busy user was (open model)"""
    spares: int = 0
    """spare senders running (open model)"""

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["latency"], doc["lag"] = self.latency.to_json(), self.lag.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BatchSummary:
        d = dict(doc)
        d["latency"], d["lag"] = LogHistogram.from_json(d["latency"]), LogHistogram.from_json(d["lag"])
        return cls(**d)


@dataclass
class LoadStats:
    """A snapshot of a running load. Latencies in ms; `None` when nothing completed in the window."""

    elapsed_s: float = 0.0
    phase: str | None = None
    state: str = "starting"
    target_rate: float | None = None
    rate: float = 0.0
    fired: int = 0
    completed: int = 0
    in_flight: int = 0
    rows_written: int = 0
    parts: int = 0
    workers: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    lag_p99_ms: float | None = None
    dropped: int = 0
    """open-model slots dropped so far: not started within the max lag of their intended time"""
    lag_ms: float = 0.0
    """how late the oldest slot still owed was, at the workers' latest batches"""
    spares: int = 0
    failure: str | None = None
    """why the load stopped sending on its own (its rows could not be written), else None"""
    window_s: float = WINDOW_S
    latency_total: dict[str, Any] | None = None
    """every completed send's latency so far (`LogHistogram.to_json`): a step's percentile is the difference of two
    snapshots (the rate search)"""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LoadStats:
        known = {k: v for k, v in doc.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class Tally:
    """Adds up batch summaries from any number of workers."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_ns = int(window_s * NS_PER_S)
        self.started_ns = time.time_ns()
        self.outcomes: dict[str, int] = {}
        self.completed = 0
        self.latency_total = LogHistogram()
        self._recent: deque[BatchSummary] = deque()
        self._latest: dict[str, BatchSummary] = {}

    def add(self, batch: BatchSummary) -> None:
        for word, n in batch.outcomes.items():
            self.outcomes[word] = self.outcomes.get(word, 0) + n
        self.completed += batch.rows
        self.latency_total.merge(batch.latency)
        self._recent.append(batch)
        prev = self._latest.get(batch.worker)
        if prev is None or batch.t_ns >= prev.t_ns:
            self._latest[batch.worker] = batch

    def snapshot(self, now_ns: int | None = None, **extra: Any) -> LoadStats:
        now = time.time_ns() if now_ns is None else now_ns
        cutoff = now - self.window_ns
        while self._recent and self._recent[0].t_ns <= cutoff:
            self._recent.popleft()
        latency, lag = LogHistogram(), LogHistogram()
        rate = 0.0
        spans: dict[str, tuple[int, int, int]] = {}
        for b in self._recent:
            latency.merge(b.latency)
            lag.merge(b.lag)
            lo, hi, rows = spans.get(b.worker, (b.since_ns, b.t_ns, 0))
            spans[b.worker] = (min(lo, b.since_ns), max(hi, b.t_ns), rows + b.rows)
        for lo, hi, rows in spans.values():
            if hi > lo:
                rate += rows * NS_PER_S / (hi - lo)
        latest = self._latest.values()
        return LoadStats(
            elapsed_s=(now - self.started_ns) / NS_PER_S,
            rate=rate,
            fired=sum(b.fired for b in latest),
            completed=self.completed,
            in_flight=sum(b.in_flight for b in latest),
            rows_written=sum(b.rows_written for b in latest),
            parts=sum(b.parts for b in latest),
            workers=len(self._latest),
            outcomes=dict(sorted(self.outcomes.items(), key=lambda kv: -kv[1])),
            p50_ms=latency.quantile(0.5),
            p99_ms=latency.quantile(0.99),
            max_ms=latency.max_ms if latency.total else None,
            lag_p99_ms=lag.quantile(0.99),
            dropped=sum(b.dropped for b in latest),
            lag_ms=max((b.lag_ms for b in latest), default=0.0),
            spares=sum(b.spares for b in latest),
            window_s=self.window_ns / NS_PER_S,
            latency_total=self.latency_total.to_json(),
            **extra,
        )
