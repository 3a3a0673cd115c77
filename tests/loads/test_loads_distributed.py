"""Distributed runs on this machine: a Locust master plus two worker processes (through `LoadProcess`, and through
`locust -f loads/locustfile.py --processes 2` as a person would run it). Each worker writes its own shard of parts;
their union has every request exactly once, and a phase change reaches both workers."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_contiguous_seqs, read_rows, rows_by_key, wait_for

from loads.process import free_port

REPO = Path(__file__).resolve().parents[2]
S = 1_000_000_000


def test_master_and_two_workers_write_shards_whose_union_has_every_request_once(broker, run_dir, start_load):
    spec = {"topic": "LoadTopic", "namesrv": broker.addr, "model": "open", "rate": 400,
            "phases": [{"name": "one"}, {"name": "two", "rate": 800}],
            "clients": [{"name": "flood", "users": 8},
                        {"name": "probe", "model": "closed", "users": 1, "think_time_s": 0.02}]}
    load = start_load(spec, workers=2)
    wait_for(lambda: load.stats()["workers"] == 2 and load.stats()["rows_written"] > 0, 20, "rows from 2 workers")
    change = load.set_phase("two")
    time.sleep(2.0)
    result = load.stop()

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


def test_locustfile_with_processes_as_a_person_runs_it(broker, tmp_path):
    run_dir = tmp_path / "person-run"
    port = free_port()
    env = {**os.environ, "RMQ_LOAD_TOPIC": "LoadTopic", "RMQ_LOAD_NAMESRV": broker.addr, "RMQ_LOAD_RATE": "200",
           "RMQ_LOAD_USERS": "4"}
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "loads" / "locustfile.py"), "--headless", "-u", "4",
           "-r", "100", "-t", "3s", "--processes", "2", "--run-dir", str(run_dir), "--run-id", "person",
           "--only-summary", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--master-port", str(port)]
    # its own session: the forked workers are in our process group, so a failure can end all of them
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    table = read_rows(run_dir)
    assert set(table.column("run_id").to_pylist()) == {"person"}
    per_worker = assert_contiguous_seqs(table)
    assert len(per_worker) == 2
    assert set(rows_by_key(run_dir)) == set(broker.keys())
    assert "SEND" in out + err  # Locust's own summary table lists the sends
