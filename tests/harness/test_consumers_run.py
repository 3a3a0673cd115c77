"""Consumers through `rmq-chaos run`, end to end on real parts: a short run with two groups (one consumer process
killed and restarted by a `kill` fault, then the master killed and restarted) leaves one consume row per delivery,
lag rows of both groups, the consumers_start / consumers_drain / consumers_stop events, and no consumer process;
while the master is down the group with a backlog goes on from the slave; the analysis counts the duplicates the
rows hold and finds no acknowledged send undelivered. SIGINT midway stops the consumers with every delivery
recorded (rows == what the fleet counted) and leaves nothing behind.

Runs on the emulator once it serves consumers (engineer B's `remoting.consume_stats` comes with it), or on the real
broker with ROCKETMQ_HOME set (`--program apache`)."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from runsupport import assert_nothing_left, end_run, events, rmq_chaos, rows, run_dir_of, wait_for_event

NEEDS = ("loads.consumers", "remoting.consumer", "remoting.consume_stats")
MISSING = [m for m in NEEDS if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"consumers not built yet: {', '.join(MISSING)}")
PROGRAM = "apache" if os.environ.get("ROCKETMQ_HOME") else "emulator"

SCENARIO = """\
name: consumers-e2e
cluster:
  version: "4.9.1"
  store_size: 64MiB
  broker:
    common: {{mappedFileSizeCommitLog: 4194304}}
topic: {{name: ChaosTopic, queues: 4}}
warmup: 2s
load:
  model: open
  rate: 50
  clients:
    - {{name: flood, users: 4, timeout: 3s}}
consumers:
  drain: 60s
  groups:
    - {{name: alpha, consumers: 2}}
    # ~25 msg/s under 50/s: a backlog kept on the broker (small client cache), routes refreshed every 2 s
    - {{name: beta, consumers: 1, threads: 1, processing: 40, pull_threshold_for_queue: 10,
       poll_name_server_interval: 2000}}
phases:
  - name: steady
    duration: {duration}
{faults}readback: {{enabled: false}}
"""
KILL = """\
    faults:
      - {id: kill-alpha, kind: kill, target: alpha.c1, params: {restart_after_s: 1}}
  - name: master-down
    duration: 12s
    faults:
      - {id: kill-master, kind: kill, target: master, params: {restart_after_s: 10}}
expect:
  - {name: beta-from-slave, phase: master-down, group: beta, metric: consume_from_slave, min: 1}
  - {name: alpha-nothing-lost, group: alpha, metric: consumer_lost, max: 0}
  - {name: beta-nothing-lost, group: beta, metric: consumer_lost, max: 0}
  - {name: alpha-duplicates, group: alpha, metric: consumer_duplicated, min: 0}
"""


def _start(tmp_path: Path, duration: str, faults: str = "", report: bool = False):
    state, out = tmp_path / "state", tmp_path / "runs"
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(duration=duration, faults=faults), encoding="utf-8")
    proc = rmq_chaos(["run", str(path), "--out", str(out), "--program", PROGRAM]
                     + ([] if report else ["--no-report"]), state)
    return proc, state, out


def _consume_rows_match(run_dir: Path, ev: list[dict]) -> list[dict]:
    consumed = rows(run_dir / "consumes")
    stop = next(e for e in ev if e["event"] == "consumers_stop")
    by_group = {g: sum(1 for r in consumed if r["group"] == g) for g in ("alpha", "beta")}
    assert by_group == stop["rows"], (by_group, stop["rows"])
    return consumed


@pytest.mark.long
def test_two_groups_a_killed_consumer_and_a_killed_master(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path, "8s", KILL, report=True)
    try:
        assert proc.wait(420) == 0, "the run or one of its expectations failed (report/verdict.json)"
        run_dir = run_dir_of(out)
        ev = events(run_dir)
        names = [e["event"] for e in ev]
        assert names.index("consumers_start") < names.index("load_start") < names.index("load_stop") \
            < names.index("consumers_drain") < names.index("consumers_stop")
        start = next(e for e in ev if e["event"] == "consumers_start")
        assert start["listed"] == {"alpha": 2, "beta": 1} and start["queues_owned"] == {"alpha": 4, "beta": 4}
        drain = next(e for e in ev if e["event"] == "consumers_drain")
        assert drain["drained"] is True and drain["lag"] == {"alpha": 0, "beta": 0}
        restart = [e for e in ev if e["event"] == "fault" and e.get("step") == "restart" and e["status"] == "ok"]
        assert restart, "the killed consumer was not restarted"
        consumed = _consume_rows_match(run_dir, ev)
        sent = {r["key"] for r in rows(run_dir / "requests") if r["outcome"] == "SEND_OK"}
        for group in ("alpha", "beta"):
            got = {r["key"] for r in consumed if r["group"] == group}
            assert sent <= got, f"{group}: {len(sent - got)} acknowledged sends never delivered"
        assert {r["worker"] for r in consumed if r["group"] == "alpha"} >= {"alpha.c0"}
        assert (run_dir / "logs" / "consumers" / "alpha.c1.r1.log").exists()
        lag = rows(run_dir / "metrics" / "lag")
        assert {r["group"] for r in lag} == {"alpha", "beta"}
        verdict = json.loads((run_dir / "report" / "verdict.json").read_text())
        measured = {r["name"]: r["measured"] for r in verdict["expectations"]}
        from_slave = sum(1 for r in consumed if r["group"] == "beta" and r["broker_id"])
        assert 1 <= measured["beta-from-slave"] <= from_slave
        ok = Counter(r["key"] for r in consumed if r["group"] == "alpha" and r["result"] == "CONSUME_SUCCESS")
        assert measured["alpha-duplicates"] == sum(n - 1 for n in ok.values())
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)


def test_sigint_stops_the_consumers_with_every_delivery_recorded(tmp_path: Path) -> None:
    proc, state, out = _start(tmp_path, "60s")
    try:
        wait_for_event(out, lambda e: e["event"] == "phase_start" and e["phase"] == "steady", 180, proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(180) == 2
        run_dir = run_dir_of(out)
        ev = events(run_dir)
        assert ev[-1]["event"] == "run_end" and ev[-1]["status"] == "interrupted"
        consumed = _consume_rows_match(run_dir, ev)
        assert consumed, "no delivery recorded before the SIGINT"
        assert_nothing_left(state, run_dir.name)
    finally:
        end_run(proc, state)
