"""The consumer lag collector: a thread that once a second asks GET_CONSUME_STATS for every consumer group (what
`mqadmin consumerProgress` shows) and writes one CONSUMER_LAG_SCHEMA row per group per queue (the topic and the
group's `%RETRY%<group>`) into `metrics/lag/` (architecture §5), of every broker group (its `broker`). The master is
asked first; when it does not answer, the slave (a 4.9.1 slave answers GET_CONSUME_STATS from the offsets the master
synced to it). A second in which neither answered writes no row for that group. `lag_of` gives the drain its per-
group figure from the same call."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis.contract import CONSUMER_LAG_SCHEMA, PartWriter
from harness.collectors.periodic import PeriodicCollector

INTERVAL_S = 1.0
STATS_TIMEOUT_MS = 800
FLUSH_ROWS = 600
WORKER_NAME = "lag"

StatsFetch = Callable[[str], list[dict[str, Any]] | None]
"""`fetch(group)` -> lag rows without `run_id` (one per queue), or None when no broker answered (must not raise)."""


def broker_stats_fetch(addrs: Sequence[str] | Callable[[], Sequence[str] | Sequence[Sequence[str]]],
                       timeout_ms: float = STATS_TIMEOUT_MS) -> StatsFetch:
    """GET_CONSUME_STATS to each of `addrs` in order (master, then slave) until one answers; `addrs` may be a
    function asked at each fetch (controller mode: the master is whoever holds the role then). With several broker
    groups `addrs` gives one such list per group (a broker answers for its own queues, as `mqadmin consumerProgress`
    asks every broker of the route): the rows of every group, or None when one group had no broker answer (a lag
    without its queues would look smaller than it is)."""
    from harness import brokerclient
    from remoting.consume_stats import get_consume_stats

    def one(group: str, candidates: Sequence[str], now: int) -> list[dict[str, Any]] | None:
        for addr in candidates:
            try:
                stats = get_consume_stats(brokerclient.admin().client, addr, group, None, timeout_ms)
            except Exception:  # noqa: BLE001 - a broker that does not answer: the next one, else no row
                continue
            return stats_rows(group, stats, now)
        return None

    def fetch(group: str) -> list[dict[str, Any]] | None:
        given = list(addrs() if callable(addrs) else addrs)
        lists = given if given and not isinstance(given[0], str) else [given]
        rows: list[dict[str, Any]] = []
        now = time.time_ns()
        for candidates in lists:
            got = one(group, candidates, now)
            if got is None:
                return None
            rows += got
        return rows

    return fetch


def stats_rows(group: str, stats: Any, ts_ns: int) -> list[dict[str, Any]]:
    """ConsumeStats -> rows (queues in order of topic, broker, queue id)."""
    rows = []
    tps = float(getattr(stats, "consume_tps", 0.0) or 0.0)
    for mq, w in sorted(stats.offsets.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
        rows.append({"group": group, "topic": mq.topic, "ts_ns": ts_ns, "broker": mq.broker_name,
                     "queue_id": mq.queue_id, "broker_offset": w.broker_offset, "consumer_offset": w.consumer_offset,
                     "lag": max(0, w.broker_offset - max(0, w.consumer_offset)),
                     "last_timestamp_ms": w.last_timestamp, "consume_tps": tps})
    return rows


def lag_of(rows: list[dict[str, Any]] | None) -> int | None:
    """The group's total lag (every queue of every topic), None when unknown."""
    return None if rows is None else sum(r["lag"] for r in rows)


class ConsumerLagCollector(PeriodicCollector):
    """Start with `start()`, end with `stop()` (writes the last rows). `latest` holds each group's last rows."""

    THREAD_NAME = "rmq-consumer-lag"

    def __init__(self, run_id: str, lag_dir: str | Path, groups: list[str], fetch: StatsFetch,
                 interval_s: float = INTERVAL_S) -> None:
        super().__init__(run_id, PartWriter(lag_dir, WORKER_NAME, CONSUMER_LAG_SCHEMA, batch_rows=FLUSH_ROWS), interval_s)
        self.groups = list(groups)
        self.fetch = fetch
        self.latest: dict[str, list[dict[str, Any]]] = {}

    def join_timeout_s(self) -> float:
        """A round may wait for two brokers per group."""
        return self.interval_s * 5 + 2 * STATS_TIMEOUT_MS / 1000 * len(self.groups)

    def next_due(self, due: float) -> float:
        """Never more than one interval behind: rounds missed while brokers did not answer are not made up."""
        return max(due + self.interval_s, time.monotonic() - self.interval_s)

    def collect_once(self) -> dict[str, int | None]:
        """One round over every group, now; returns each group's lag (None: no broker answered)."""
        lags: dict[str, int | None] = {}
        for group in self.groups:
            rows = self.fetch(group)
            lags[group] = lag_of(rows)
            if rows is None:
                continue
            self.latest[group] = rows
            self.write_rows([{"run_id": self.run_id, **row} for row in rows])
        return lags

    def lags(self) -> dict[str, int | None]:
        """Each group's lag from the last round that answered (None before any)."""
        return {g: lag_of(self.latest.get(g)) for g in self.groups}
