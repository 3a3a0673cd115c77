"""The metrics collector: a thread that once a second writes one row per node (architecture §5 metrics row):
process figures from psutil, and for brokers the runtime figures of GET_BROKER_RUNTIME_INFO; the slave's row also
carries `slave_fallbehind_bytes` = master commitLogMaxOffset - slave commitLogMaxOffset of the same second (works
with real brokers, which have no such key). A broker that does not answer within the second gets null figures."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.contract import METRICS_SCHEMA, PartWriter
from harness.collectors.broker_figures import broker_figures
from harness.collectors.periodic import PeriodicCollector
from harness.collectors.process_sampler import ProcessSampler

INTERVAL_S = 1.0
FLUSH_ROWS = 30
WORKER_NAME = "metrics"
RUNTIME_TIMEOUT_S = 0.8


@dataclass
class MetricsNode:
    """A node to watch: its name, its pids, and (brokers) the address GET_BROKER_RUNTIME_INFO goes to."""

    name: str
    pids: Callable[[], list[int]]
    broker_addr: str | None = None
    sampler: Any = None
    """what samples its processes (`sample() -> dict`): a `ProcessSampler` of `pids` here, the host agent's for a
    node on another host"""


RuntimeFetch = Callable[[str], Mapping[str, str] | None]
"""`fetch(addr)` -> the runtime table, or None when the broker did not answer (must not raise)."""


class MetricsCollector(PeriodicCollector):
    """Start with `start()`, end with `stop()` (writes the last rows). Thread-safe to stop from a signal path."""

    THREAD_NAME = "rmq-metrics"

    def __init__(self, run_id: str, metrics_dir: str | Path, nodes: list[MetricsNode], fetch: RuntimeFetch,
                 interval_s: float = INTERVAL_S) -> None:
        super().__init__(run_id, PartWriter(metrics_dir, WORKER_NAME, METRICS_SCHEMA,
                                            batch_rows=FLUSH_ROWS * max(1, len(nodes))), interval_s)
        self.nodes = nodes
        self.fetch = fetch
        self.samplers = {n.name: n.sampler or ProcessSampler(n.pids) for n in nodes}
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="rmq-metrics")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().close()

    def collect_once(self) -> list[dict[str, Any]]:
        """One row per node, now."""
        ts = time.time_ns()
        futures = {n.name: self._pool.submit(self.fetch, n.broker_addr) for n in self.nodes if n.broker_addr}
        tables: dict[str, Mapping[str, str] | None] = {}
        for name, fut in futures.items():
            try:
                tables[name] = fut.result(timeout=RUNTIME_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a broker that does not answer this second has null figures
                tables[name] = None
        figures = {name: broker_figures(t) for name, t in tables.items()}
        rows = []
        for n in self.nodes:
            row: dict[str, Any] = {"run_id": self.run_id, "node": n.name, "ts_ns": ts}
            row.update(self.samplers[n.name].sample())
            row.update(figures.get(n.name, {}))
            row["slave_fallbehind_bytes"] = None
            rows.append(row)
        master = figures.get("master", {}).get("commitlog_max_offset")
        slave = figures.get("slave", {}).get("commitlog_max_offset")
        if master is not None and slave is not None:
            for row in rows:
                if row["node"] == "slave":
                    row["slave_fallbehind_bytes"] = max(0, master - slave)
        self.write_rows(rows)
        return rows
