"""A healthy 1 master + 1 slave (SYNC_MASTER, SYNC_FLUSH), each store on its own loop-mounted ext4: sends return
SEND_OK, and every acknowledged message comes back from the master and from the slave with equal bytes."""
from __future__ import annotations

import concurrent.futures as cf
import json

import emu_wire as wire
import pytest
from emu_cluster import poll

from remoting.codes import ResponseCode

pytestmark = pytest.mark.root
TOPIC = "HealthyTopic"
QUEUES = 4
SENDS = 400


def test_acknowledged_messages_are_on_master_and_slave(emu_cluster):
    cluster = emu_cluster()
    client = cluster.client
    wire.create_topic(client, cluster.master.addr, TOPIC, QUEUES)
    route = wire.route(client, TOPIC)
    assert route and route["queueDatas"][0]["writeQueueNums"] == QUEUES
    assert set(route["brokerDatas"][0]["brokerAddrs"].values()) == {cluster.master.addr, cluster.slave.addr}

    bodies = {f"k{i}": (f"body-{i}-".encode() * 40)[: 100 + i] for i in range(SENDS)}
    with cf.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda k: wire.send(client, cluster.master.addr, TOPIC, bodies[k], k,
                                                    int(k[1:]) % QUEUES), bodies))
    assert [r.code for r in replies] == [ResponseCode.SUCCESS] * SENDS

    master_max = int(cluster.runtime("master")["commitLogMaxOffset"])
    poll(lambda: int(cluster.runtime("slave")["commitLogMaxOffset"]) == master_max, 10, "the slave to catch up")
    for addr in (cluster.master.addr, cluster.slave.addr):
        got: dict[str, bytes] = {}
        for queue in range(QUEUES):
            for msg in poll(lambda q=queue, a=addr: _complete(client, a, q, replies), 10, f"queue {queue} on {addr}"):
                got[msg.keys] = msg.body
        assert got == bodies, addr
    acked = {(r.queue_id, r.queue_offset) for r in replies}
    assert len(acked) == SENDS


def test_admin_answers_have_the_recorded_shape(emu_cluster, wire_dir):
    cluster = emu_cluster()
    recorded_config = json.loads((wire_dir / "26_GET_BROKER_CONFIG.json").read_text())[1]["body_text"]
    recorded_keys = {line.split("=", 1)[0] for line in recorded_config.splitlines() if line}
    assert set(wire.broker_config(cluster.client, cluster.master.addr)) == recorded_keys
    recorded_runtime = json.loads(json.loads((wire_dir / "28_GET_BROKER_RUNTIME_INFO.json").read_text())[1]["body_text"])
    info = cluster.runtime("master")
    assert set(recorded_runtime["table"]) <= set(info)
    assert info["brokerVersionDesc"] == "V4_9_1" and info["brokerVersion"] == "395"
    wire.create_topic(cluster.client, cluster.master.addr, TOPIC, 1)
    reply = wire.send(cluster.client, cluster.master.addr, TOPIC, b"x", "k", 0)
    assert reply.msg_id == f"7F000001{cluster.master.port:08X}{0:016X}"


def _complete(client, addr, queue, replies):
    msgs = wire.pull_queue(client, addr, TOPIC, queue)
    expected = sum(1 for r in replies if r.queue_id == queue)
    return msgs if len(msgs) == expected else None
