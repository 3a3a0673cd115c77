"""A healthy 1 master + 1 slave (SYNC_MASTER, SYNC_FLUSH), each store on its own loop-mounted ext4: sends through the
real producer return SEND_OK, and every acknowledged message comes back from the master and from the slave with
equal bytes."""
from __future__ import annotations

import concurrent.futures as cf
import json

import pytest
from emu_load import send_one
from waiting import poll

from remoting.message import Message

pytestmark = pytest.mark.root
TOPIC = "HealthyTopic"
QUEUES = 4
SENDS = 400


def test_acknowledged_messages_are_on_master_and_slave(emu_cluster):
    cluster = emu_cluster()
    route = cluster.create_topic(TOPIC, QUEUES)
    assert route.queue_datas[0].write_queue_nums == QUEUES
    assert set(route.broker_datas[0].broker_addrs.values()) == {cluster.master.addr, cluster.slave.addr}

    producer = cluster.producer()
    bodies = {f"k{i}": (f"body-{i}-".encode() * 40)[: 100 + i] for i in range(SENDS)}
    with cf.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda k: send_one(producer, TOPIC, bodies[k], k, 10000), bodies))
    assert [r.outcome for r in replies] == ["SEND_OK"] * SENDS
    assert all(r.attempts == 1 for r in replies)

    master_max = int(cluster.runtime("master")["commitLogMaxOffset"])
    poll(lambda: int(cluster.runtime("slave")["commitLogMaxOffset"]) == master_max, 10, "the slave to catch up")
    for role in ("master", "slave"):
        msgs = poll(lambda r=role: _complete(cluster, r), 10, f"every message on the {role}")
        assert {m.keys: m.body for m in msgs} == bodies, role
        # each where its acknowledgement said: queue, queue offset, client message id
        assert {m.keys: (m.queue_id, m.queue_offset, m.uniq_key) for m in msgs} == \
            {r.key: (r.queue_id, r.queue_offset, r.msg_id) for r in replies}, role
    acked = {(r.queue_id, r.queue_offset) for r in replies}
    assert len(acked) == SENDS


def test_admin_answers_have_the_recorded_shape(emu_cluster, wire_dir):
    cluster = emu_cluster()
    recorded_config = json.loads((wire_dir / "26_GET_BROKER_CONFIG.json").read_text())[1]["body_text"]
    recorded_keys = {line.split("=", 1)[0] for line in recorded_config.splitlines() if line}
    assert set(cluster.admin.get_broker_config(cluster.master.addr)) == recorded_keys
    recorded_runtime = json.loads(json.loads((wire_dir / "28_GET_BROKER_RUNTIME_INFO.json").read_text())[1]["body_text"])
    info = cluster.runtime("master")
    assert set(recorded_runtime["table"]) <= set(info)
    assert info["brokerVersionDesc"] == "V4_9_1" and info["brokerVersion"] == "395"
    cluster.create_topic(TOPIC, 1)
    result = cluster.producer().send(Message(TOPIC, b"x"), 5000)
    assert result.status == "SEND_OK"
    assert result.offset_msg_id == f"7F000001{cluster.master.port:08X}{0:016X}"


def _complete(cluster, role):
    msgs = cluster.pull_all(role, TOPIC, QUEUES)
    return msgs if len(msgs) == SENDS else None
