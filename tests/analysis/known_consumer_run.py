"""The consumer run with known answers (issue 12), written through `known_runs.RunBuilder`: two consumer groups on
the run's topic. `fast` misses one acknowledged send (consumer lost 1) and gets one again from a restarted process
(duplicate 1); `slow` is 100 ms behind, reorders one queue offset, has 10 deliveries from the slave, and its
committed offset stops for the phase `stuck` while its lag grows to 100; the master's store.log has real-format
`[PAGECACHERT]` lines (and junk)."""
from __future__ import annotations

import time
from pathlib import Path

from known_runs import PAGECACHERT_LINE, T0, Answers, RunBuilder, _cluster, _metrics, _standard_events

from analysis import contract as c

CONSUMER_EXPECT = [
    {"name": "fast-lost", "group": "fast", "metric": "consumer_lost", "max": 0},
    {"name": "slow-lost", "group": "slow", "metric": "consumer_lost", "max": 0},
    {"name": "fast-dups", "group": "fast", "metric": "consumer_duplicated", "max": 0},
    {"name": "slow-reordered", "group": "slow", "metric": "consumer_reordered", "max": 5},
    {"name": "fast-count", "group": "fast", "metric": "consume_count", "min": 1},
    {"name": "idle-count", "group": "idle", "metric": "consume_count", "max": 0},
    {"name": "idle-p99", "group": "idle", "metric": "consume_latency_p99_ms", "max": 1},
    {"name": "healthy-rate", "phase": "healthy", "metric": "consume_rate", "min": 1},
    {"name": "slow-p50", "group": "slow", "metric": "consume_latency_p50_ms", "max": 1000},
    {"name": "slow-p50-stored", "group": "slow", "metric": "consume_latency_p50_ms", "basis": "stored", "max": 1000},
    {"name": "fast-max", "group": "fast", "metric": "consume_latency_max_ms", "max": 1000},
    {"name": "slow-lag-max", "group": "slow", "metric": "lag_max", "max": 1000},
    {"name": "slow-lag-end-stuck", "group": "slow", "phase": "stuck", "metric": "lag_end", "min": 1},
    {"name": "slow-lag-end", "group": "slow", "metric": "lag_end", "max": 0},
    {"name": "slow-stall", "group": "slow", "metric": "offset_stall_s", "min": 5},
    {"name": "fast-stall", "group": "fast", "metric": "offset_stall_s", "max": 0},
    {"name": "fast-rewind", "group": "fast", "metric": "offset_rewind", "min": 40, "max": 40},
    {"name": "slow-rewind", "group": "slow", "metric": "offset_rewind", "max": 0},
    {"name": "master-p99", "node": "master", "metric": "pagecache_put_p99_ms", "max": 10},
    {"name": "slow-from-slave", "group": "slow", "phase": "stuck", "metric": "consume_from_slave", "min": 1},
]


def consumer_run(root: Path, run_id: str = "consume-run") -> tuple[Path, Answers]:
    """healthy (0-10 s) -> stuck (10-20 s); 200 sends, all SEND_OK; groups fast and slow (module docstring)."""
    b = RunBuilder(root, run_id)
    phases = [("healthy", 0, 10_000), ("stuck", 10_000, 20_000)]
    keys = []
    for i in range(200):
        start = i * 100.0
        k = b.send(worker="w0", seq=i, start_ms=start, service_ms=2.0, outcome=c.SEND_OK,
                   phase="healthy" if start < 10_000 else "stuck", response_code=0)
        keys.append(k)
        b.read("master", k)
        b.read("slave", k)
    dropped = keys[17]
    for i, k in enumerate(keys):
        if k != dropped:
            b.consume(k, group="fast", born_ms=i * 100, stored_ms=i * 100 + 1, delivered_ms=i * 100 + 5,
                      queue=(i % 4, i // 4))
    b.consume(keys[30], group="fast", born_ms=3000, stored_ms=3001, delivered_ms=15_000, worker="fast.c0.r1",
              queue=(30 % 4, 30 // 4))  # redelivered by the restarted process
    for i, k in enumerate(keys):
        offset = i // 4 if i != 41 else 5  # queue 1 offset 5 again after 9 (order)
        b.consume(k, group="slow", born_ms=i * 100, stored_ms=i * 100 + 50, delivered_ms=i * 100 + 100,
                  queue=(i % 4, offset), broker_id=1 if 150 <= i < 160 else 0)
    for sec in range(21):  # fast's offsets go back 40 at second 15 (a stale copy, as after a failover)
        b.lag_sample("fast", sec, committed=10 * sec if sec != 15 else 100, lag=0)
        if sec <= 9:
            b.lag_sample("slow", sec, committed=10 * sec, lag=0)
        elif sec <= 19:
            b.lag_sample("slow", sec, committed=90, lag=10 * (sec - 9))
        else:
            b.lag_sample("slow", sec, committed=200, lag=0)
    def stamp(s: int) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 // 1_000_000_000 + s))
    b.store_logs["master"] = [
        f"{stamp(-10)} INFO StoreStatsService - StoreStatsService service started",
        PAGECACHERT_LINE.format(t=stamp(40), n=1000, fast=990, slow=10),
        f"{stamp(41)} INFO StoreStatsService - [PAGECACHERT] TotalPut 5, PutMessageDistributeTime [<=0ms]:5",
        "garbage \x00 [PAGECACHERT]" * 3,
    ]
    b.store_logs["slave"] = ["nothing to see"]
    _standard_events(b, phases)
    b.events.sort(key=lambda e: e["wall_ns"])
    _metrics(b, 20, ro=None)
    b.answers.numbers = {"fast_lost": [dropped], "fast_dup": 1, "fast_dup_restart": 1, "slow_reordered": 1,
                         "slow_from_slave": 10, "slow_lag_max": 100, "slow_stall_s": 9.0,
                         "slow_p50_born": 100.0, "slow_p50_stored": 50.0, "fast_count": 200}
    scenario = {"name": "consumers", "phases": [{"name": n, "duration_s": (e - s) / 1000} for n, s, e in phases],
                "consumers": {"drain": 30, "groups": [{"name": "fast"}, {"name": "slow"}, {"name": "idle"}]},
                "expect": CONSUMER_EXPECT}
    return b.write(scenario, _cluster(1048576)), b.answers
