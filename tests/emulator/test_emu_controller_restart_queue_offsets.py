"""apache/rocketmq#7689 at the store: the master and the controller (embedded in the name server) die together and
come back together, so the controller names the restarted broker master again in the same epoch. Its sends past
the confirm offset (acknowledged without the slave, which was frozen: `allAckInSyncStateSet=false`) are in the
commitlog but not in the consume queues, which recovery builds only up to the confirm offset. 5.2+ count them into
the next queue offsets (`compensateForHA`, PR #7690), so the first new message follows them; 5.1 gives it the queue
offset of the first of them, which it then shadows (acknowledged messages lost). The real 5.3.0 does the former
(scenarios/controller-and-master-killed.yaml, docs/fidelity.md)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from emu_cluster import poll
from emu_load import send_one

TOPIC = "OffsetTopic"
CONFIRMED, PAST_CONFIRM = 12, 8


def _stored_confirm_offset(store: Path) -> int:
    """`confirmPhyOffset` of the broker's `checkpoint` file (-1 before it is written)."""
    try:
        data = (store / "checkpoint").read_bytes()[:40]
    except OSError:
        return -1
    return struct.unpack(">qqqqq", data)[4] if len(data) == 40 else -1


@pytest.mark.parametrize("version, compensated", [("5.1.4", False), ("5.3.0", True)])
def test_the_restarted_masters_next_queue_offset(controller_cluster, version: str, compensated: bool) -> None:
    cluster = controller_cluster(version=version, broker_conf={"allAckInSyncStateSet": "false"})
    master, slave = cluster.master_name(), cluster.slave_names()[0]
    for name in (master, slave):
        cluster.admin.create_topic(cluster.nodes[name].addr, TOPIC, 1, 1)
    poll(lambda: cluster.route_master(TOPIC) == cluster.nodes[master].addr, 30, "the route of the topic")
    producer = cluster.producer(profile="java-5.3", retry_times_when_send_failed=0)
    confirmed = [send_one(producer, TOPIC, b"c" * 100, f"c{i}") for i in range(CONFIRMED)]
    assert [(o.outcome, o.queue_offset) for o in confirmed] == [("SEND_OK", i) for i in range(CONFIRMED)]
    end = cluster.ctrl.get_broker_epoch_cache(cluster.nodes[master].addr).max_offset
    store = cluster.workdir / master / "store"
    poll(lambda: _stored_confirm_offset(store) == end, 30, "the confirm offset in the checkpoint file")

    cluster.freeze(slave)  # nothing more is confirmed; the master acknowledges alone (inSyncReplicas 1)
    past = [send_one(producer, TOPIC, b"p" * 100, f"p{i}") for i in range(PAST_CONFIRM)]
    assert [(o.outcome, o.queue_offset) for o in past] == [("SEND_OK", CONFIRMED + i) for i in range(PAST_CONFIRM)]
    cluster.kill("namesrv")
    cluster.kill(master)
    cluster.restart("namesrv")
    cluster.restart(master)
    info = poll(lambda: (i := cluster.sync_state()) and i.master_address == cluster.nodes[master].addr and i, 30,
                "the restarted broker named master")
    assert info.master_epoch == 1  # the same epoch: nobody else was elected
    poll(lambda: cluster.route_master(TOPIC) == cluster.nodes[master].addr, 30, "the route naming it again")

    after = send_one(cluster.producer(group="after_group", profile="java-5.3"), TOPIC, b"n" * 100, "n0")
    assert after.outcome == "SEND_OK"
    assert after.queue_offset == (CONFIRMED + PAST_CONFIRM if compensated else CONFIRMED)
    log = cluster.nodes[master].log("store.log")
    assert (f"Correct unsubmitted offset...StartReadOffset = {end}" in log) == compensated
