"""The consumer processes end to end on a real cluster, the emulator's 4.9.1 and the real Apache RocketMQ 4.9.1
(through `--program apache`; skipped without `$ROCKETMQ_HOME`): real `remoting.consumer.PushConsumer`s in `python -m loads.consumer`
processes, real rebalancing between them. Every sent key is delivered and recorded; a consumer SIGKILLed while its
threads are stuck loses no row (salvage), its blocked messages go to the other consumer (duplicates visible); a
restart joins again; RECONSUME_LATER comes back from `%RETRY%<group>` with the original topic; rows == journaled
deliveries for every process."""
from __future__ import annotations

import signal
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from waiting import poll

from analysis.contract import CONSUME_SCHEMA
from loads.consume_recorder import journal_path, read_journal, rows_in_parts
from loads.consumer_spec import parse_groups
from loads.consumers import ConsumerFleet

RUN = "c1-e2e"


def send(cluster, producer, first: int, n: int) -> list[str]:
    keys = [f"{RUN}:w0:{i}" for i in range(first, first + n)]
    for k in keys:
        assert producer.send(cluster.message(b"m" * 64, key=f"{k} extra"), 5000).status == "SEND_OK"
    return keys


def journaled(run_dir, fleet) -> dict[str, list[dict]]:
    """key -> journal rows of every process so far (what the listeners saw)."""
    out: dict[str, list[dict]] = defaultdict(list)
    for w in fleet.history:
        for r in read_journal(journal_path(run_dir, w.name)).values():
            out[r["key"]].append(r)
    return out


def succeeded(run_dir, fleet, group: str) -> set[str]:
    return {k for k, rows in journaled(run_dir, fleet).items()
            if any(r["group"] == group and r["result"] == "CONSUME_SUCCESS" for r in rows)}


@pytest.mark.rmq_program("apache")
def test_consumers_on_the_real_4_9_1(rmq_cluster, tmp_path):
    """Skipped by the plugin without $ROCKETMQ_HOME (CI)."""
    check_consumers(rmq_cluster, tmp_path)


@pytest.mark.long
def test_consumers_on_the_emulator(rmq_cluster, tmp_path):
    check_consumers(rmq_cluster, tmp_path)


def check_consumers(rmq_cluster, tmp_path):
    run = tmp_path / "run"
    groups = [{"name": "e2e-a", "consumers": 2, "threads": 4, "consume_from": "CONSUME_FROM_FIRST_OFFSET"},
              {"name": "e2e-b", "consumers": 1, "threads": 4, "consume_from": "CONSUME_FROM_FIRST_OFFSET",
               "reconsume_share": 0.1}]
    fleet = ConsumerFleet(parse_groups(groups), rmq_cluster.namesrv_addr, rmq_cluster.topic, run, RUN, drain_s=2)
    try:
        fleet.start()
        producer = rmq_cluster.producer()
        sent = send(rmq_cluster, producer, 0, 200)
        poll(lambda: set(sent) <= succeeded(run, fleet, "e2e-a"), 90, "200 keys consumed by e2e-a")
        by_worker = defaultdict(int)
        for rows in journaled(run, fleet).values():
            for r in rows:
                by_worker[r["worker"]] += 1
        assert by_worker["e2e-a.c0"] and by_worker["e2e-a.c1"], f"both consumers got queues: {dict(by_worker)}"

        fleet.set_stuck("e2e-a.c1", share=1.0, hold_s=600)
        poll(lambda: fleet.workers["e2e-a.c1"].control_path.exists(), 5, "the control file")
        sent += send(rmq_cluster, producer, 200, 100)

        def c1_blocked():
            rows = read_journal(journal_path(run, "e2e-a.c1")).values()
            return sum(1 for r in rows if r["done_ns"] is None) == 4

        poll(c1_blocked, 60, "the 4 consume threads of e2e-a.c1 blocked")
        fleet.kill("e2e-a.c1", signal.SIGKILL)
        killed = fleet.worker("e2e-a.c1")
        assert rows_in_parts(run, "e2e-a.c1") == len(read_journal(journal_path(run, "e2e-a.c1")))
        fleet.clear_stuck("e2e-a.c1")
        blocked = {r["key"] for r in read_journal(journal_path(run, killed.name)).values() if r["done_ns"] is None}
        assert len(blocked) == 4
        poll(lambda: set(sent) <= succeeded(run, fleet, "e2e-a"), 120,
                 "every key consumed by e2e-a after the kill (the blocked ones by e2e-a.c0)")
        again = fleet.restart("e2e-a.c1")
        assert again.name == "e2e-a.c1.r1"
        sent += send(rmq_cluster, producer, 300, 100)
        poll(lambda: set(sent) <= succeeded(run, fleet, "e2e-a"), 90, "the last 100 keys by e2e-a")
        poll(lambda: set(sent) <= succeeded(run, fleet, "e2e-b"), 120,
                 "every key consumed by e2e-b (the RECONSUME_LATER ones from its retry topic)")
        result = fleet.stop()
    finally:
        fleet.kill_all()

    assert {w.name: w.proc.returncode for w in fleet.history} == {
        "e2e-a.c0": 0, "e2e-a.c1": -signal.SIGKILL, "e2e-a.c1.r1": 0, "e2e-b.c0": 0}
    parts = sorted((run / "consumes").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p, schema=CONSUME_SCHEMA) for p in parts])
    rows = table.to_pylist()
    assert result == {g: sum(1 for r in rows if r["group"] == g) for g in ("e2e-a", "e2e-b")}
    for w in fleet.history:  # rows == deliveries, per process
        assert sum(1 for r in rows if r["worker"] == w.name) == len(read_journal(journal_path(run, w.name))), w.name
    a = [r for r in rows if r["group"] == "e2e-a"]
    for k in blocked:
        got = sorted((r["worker"], r["result"]) for r in a if r["key"] == k)
        assert ("e2e-a.c1", "ABANDONED") in got and any(res == "CONSUME_SUCCESS" for _, res in got), got
    assert {r["topic"] for r in rows} == {rmq_cluster.topic}
    assert {r["broker_id"] for r in rows} == {0}
    assert all(r["consumer"] and r["consumer"].endswith("@" + r["worker"]) for r in rows)
    b = [r for r in rows if r["group"] == "e2e-b"]
    later = {r["key"] for r in b if r["result"] == "RECONSUME_LATER"}
    assert later, "a share of 0.1 of 400 answered RECONSUME_LATER"
    redelivered = [r for r in b if r["key"] in later and r["pulled_topic"] == "%RETRY%e2e-b"]
    assert {r["key"] for r in redelivered} == later and {r["reconsume_times"] for r in redelivered} == {1}
    assert all(r["msg_id"] and r["born_ms"] <= r["store_ms"] + 1000 and r["body_size"] == 64 for r in rows)
