"""A distributed run on this machine: a Locust master plus two worker processes through `LoadProcess`. Each worker
writes its own shard of parts; their union has every request exactly once (the run is ended by SIGTERM to the
master, which drains both workers), and a phase change reaches both workers."""
from __future__ import annotations

import os
import signal
import time

import pytest
from loads_support import assert_contiguous_seqs, read_rows, rows_by_key
from waiting import poll

S = 1_000_000_000


def test_master_and_two_workers_write_shards_whose_union_has_every_request_once(broker, run_dir, start_load):
    spec = {"topic": "LoadTopic", "namesrv": broker.addr, "model": "open", "rate": 400,
            "phases": [{"name": "one"}, {"name": "two", "rate": 800}],
            "clients": [{"name": "flood", "users": 8},
                        {"name": "probe", "model": "closed", "users": 1, "think_time_s": 0.02}]}
    load = start_load(spec, workers=2)
    poll(lambda: load.stats()["workers"] == 2 and load.stats()["rows_written"] > 0, 20, "rows from 2 workers")
    change = load.set_phase("two")
    time.sleep(2.0)
    os.kill(load.pids[0], signal.SIGTERM)  # the master: it drains both workers before it exits
    poll(lambda: all(p.poll() is not None for p in [load.master, *load.worker_procs]), 30, "all to exit")
    result = load.stop()
    assert result["reason"] == "SIGTERM" and set(result["exit_codes"].values()) == {0}

    shards = {p.name.split("-")[1] for p in (run_dir / "requests").glob("part-*.parquet")}
    assert shards == {"w0", "w1"}
    table = read_rows(run_dir)
    per_worker = assert_contiguous_seqs(table)
    rows = rows_by_key(run_dir)  # asserts no key twice
    assert set(rows) == set(broker.keys())
    assert sum(per_worker.values()) == len(rows) == result["result"]["fired"]
    assert {t["worker"] for t in result["result"]["workers"]} == {"w0", "w1"}
    at = change["at_ns"]
    for worker in ("w0", "w1"):
        mine = [r for r in rows.values() if r["worker"] == worker and r["client"] == "flood"]
        assert any(r["phase"] == "two" for r in mine) and all(
            r["phase"] == ("one" if r["intended_ns"] < at else "two") for r in mine)
    flood_after = sum(1 for r in rows.values() if r["client"] == "flood" and at + S // 4 <= r["intended_ns"]
                      < at + 5 * S // 4)
    assert flood_after == pytest.approx(800, rel=0.1)  # both workers together follow the new rate
