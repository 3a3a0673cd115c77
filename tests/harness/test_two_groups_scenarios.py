"""Two broker groups on the local backend (issue 42), as a user runs them (`rmq-chaos run`, then the analysis), their
phases shortened:

- `scenarios/busy-broker-two-groups.yaml`: broker-a's master rejects with SYSTEM_BUSY while its store is frozen;
  every expectation of both halves holds: java-4.9.1 hands code 2 to the application (it does not retry it), java-5.3
  retries those sends on broker-b. The rows say which group each send ended on, and its attempts;
- the cluster itself: four brokers (`broker-a-master`, `broker-a-slave`, `broker-b-master`, `broker-b-slave`) with
  their broker names, the fault applied to the node its `broker-a/master` target names, the read-back of every
  member, and nothing left afterwards (`valid_run`).

- `scenarios/group-master-killed-consumers.yaml`: broker-a's master killed with a consumer group on: the producer's
  retries move to broker-b, the group rebalances over both groups' queues, pulls broker-a's backlog from its slave
  while the master is down, its lag is asked of each group and it delivers everything (the same file crosswise
  across hosts: tests/hosts/test_ssh_two_groups.py, RMQ_CHAOS_FULL_TESTS=1).

The default run takes one half of each matrix (the 5.3 client, the switch on: the remedies), for the suite's 20
minutes; RMQ_CHAOS_FULL_TESTS=1 adds the other halves, and group-master-killed without consumers (the default run
takes that file through compose: tests/compose/test_compose_groups_run.py). The 4.9.1 client's code 2 reaching the application is also
checked at the socket level by tests/remoting/test_producer_groups_e2e.py. Real 4.9.1 figures of the same files:
docs/fidelity.md."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from runsupport import events, full_only, rows, shortened, valid_run

REPO = Path(__file__).resolve().parents[2]
BUSY = REPO / "scenarios" / "busy-broker-two-groups.yaml"
SHORTER = (("  - name: busy\n    duration: 20s", "  - name: busy\n    duration: 12s"),
           ("min: 1000}", "min: 300}"))


@pytest.mark.long
@pytest.mark.parametrize("client", [pytest.param("java-4.9.1", marks=full_only("~85 s")), "java-5.3"])
def test_busy_broker_two_groups_is_valid_on_the_emulator(tmp_path: Path, client: str) -> None:
    with valid_run(shortened(BUSY, tmp_path, SHORTER), tmp_path, wait_s=900, only=f"busy-broker-two-groups.client={client}") \
            as (run_dir, verdict):
        cluster = json.loads((run_dir / "cluster.json").read_text())
        assert [g["name"] for g in cluster["groups"]] == ["broker-a", "broker-b"]
        names = {n["name"]: n for n in cluster["nodes"]}
        assert {"broker-a-master", "broker-a-slave", "broker-b-master", "broker-b-slave"} <= set(names)
        assert cluster["effective_config"]["broker-b-slave"]["brokerName"] == "broker-b"
        applied = next(e for e in events(run_dir) if e["event"] == "fault" and e["action"] == "apply"
                       and e["status"] == "ok")
        assert (applied["target"], applied["node"]) == ("broker-a/master", "broker-a-master")
        busy = [r for r in rows(run_dir / "requests") if r["phase"] == "busy"]
        assert {r["broker"] for r in busy} == {"broker-a", "broker-b"}
        rejected = [r for r in busy if r["response_code"] == 2 and r["outcome"] == "MQBrokerException"]
        if client == "java-4.9.1":
            assert rejected and {r["broker"] for r in rejected} == {"broker-a"}
        else:
            assert not rejected and any(r["attempts"] >= 2 and r["broker"] == "broker-b" for r in busy)
        readback = next(e for e in events(run_dir) if e["event"] == "readback_end")
        assert set(readback["nodes"]) == {"broker-a/master", "broker-a/slave", "broker-b/master", "broker-b/slave"}
        assert verdict["loss"]["lost"] == 0


KILLED = REPO / "scenarios" / "group-master-killed.yaml"
KILLED_SHORTER = (("  - name: steady\n    duration: 15s", "  - name: steady\n    duration: 8s"),
                  ("duration: 45s", "duration: 30s"), ("restart_after_s: 40", "restart_after_s: 25"),
                  ("before_s: 38", "before_s: 23"), ("  - name: recovered\n    duration: 20s",
                                                     "  - name: recovered\n    duration: 12s"))


@pytest.mark.parametrize("backend", [pytest.param("local", marks=full_only(
    "~80 s (the default run takes the same file through compose: tests/compose/test_compose_groups_run.py)"))])
def test_group_master_killed_is_valid_on_the_emulator(tmp_path: Path, backend: str) -> None:
    """broker-a's master killed: the sends whose attempt met the dead master are retried on broker-b (their rows
    end on broker-b with 2 attempts), every expectation holds, nothing acknowledged is lost."""
    with valid_run(shortened(KILLED, tmp_path, KILLED_SHORTER), tmp_path, wait_s=900) as (run_dir, verdict):
        down = [r for r in rows(run_dir / "requests") if r["phase"] == "a-master-down"]
        assert any(r["attempts"] == 2 and r["broker"] == "broker-b" for r in down)
        assert verdict["loss"]["lost"] == 0


CONSUMERS = REPO / "scenarios" / "group-master-killed-consumers.yaml"
CONSUMERS_SHORTER = (("  - name: steady\n    duration: 15s", "  - name: steady\n    duration: 12s"),
                     ("  - name: recovered\n    duration: 20s", "  - name: recovered\n    duration: 8s"))
"""The outage keeps its 40 s: the consumer turns to broker-a's slave only once its route poll (every 30 s) shows
broker-a without a master; a CI run with the outage shortened to 25 s ended it before that poll came (0 deliveries
from the slave)."""


@pytest.mark.long
def test_consumers_get_around_a_dead_master_of_one_group(tmp_path: Path) -> None:
    with valid_run(shortened(CONSUMERS, tmp_path, CONSUMERS_SHORTER), tmp_path, wait_s=900) as (run_dir, verdict):
        check_consumers_around(run_dir, verdict)


def check_consumers_around(run_dir: Path, verdict: dict) -> None:
    """What a run of the shortened group-master-killed-consumers shows on every backend (above)."""
    applied = next(e for e in events(run_dir) if e["event"] == "fault" and e["action"] == "apply"
                   and e["status"] == "ok")
    assert (applied["target"], applied["node"]) == ("broker-a/master", "broker-a-master")
    readback = next(e for e in events(run_dir) if e["event"] == "readback_end")
    assert set(readback["nodes"]) == {"broker-a/master", "broker-a/slave", "broker-b/master", "broker-b/slave"}
    down = [r for r in rows(run_dir / "requests") if r["phase"] == "a-master-down"]
    assert any(r["attempts"] == 2 and r["broker"] == "broker-b" for r in down)
    assert verdict["loss"]["lost"] == 0
    consumed = rows(run_dir / "consumes")
    assert {(r["broker"], r["broker_id"]) for r in consumed} == {("broker-a", 0), ("broker-a", 1), ("broker-b", 0)}
    assert {r["broker"] for r in rows(run_dir / "metrics" / "lag")} == {"broker-a", "broker-b"}


AVOID = REPO / "scenarios" / "latency-fault-avoidance.yaml"
AVOID_SHORTER = (("  - name: healthy\n    duration: 10s", "  - name: healthy\n    duration: 6s"),
                 ("  - name: throttled\n    duration: 30s", "  - name: throttled\n    duration: 18s"),
                 ("  - name: recovered\n    duration: 15s", "  - name: recovered\n    duration: 6s"))


@pytest.mark.long
@pytest.mark.parametrize("switch", [pytest.param("off", marks=full_only("~70 s")), "on"])
def test_latency_fault_avoidance_is_valid_on_the_emulator(tmp_path: Path, switch: str) -> None:
    """broker-a's master slowed: with sendLatencyFaultEnable the producer leaves broker-a (`group_leave_s`), without
    it half the sends keep waiting there; the report has its broker-groups panel."""
    with valid_run(shortened(AVOID, tmp_path, AVOID_SHORTER), tmp_path, wait_s=900,
                   only=f"latency-fault-avoidance.latency_fault={switch}") as (run_dir, verdict):
        page = (run_dir / "report" / "index.html").read_text(encoding="utf-8")
        assert "Broker groups" in page
        share = next(r for r in verdict["expectations"] if r["metric"] == "group_share")
        assert (share["measured"] >= 0.9) if switch == "on" else (0.4 <= share["measured"] <= 0.6)
