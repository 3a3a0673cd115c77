"""Consumer offsets on the emulator's broker, as on the real 4.9.1: QUERY_CONSUMER_OFFSET answers 0 for a group with
none while the queue starts at 0; UPDATE_CONSUMER_OFFSET and a pull's commitOffset (commit flag, master only) set
it; GET_CONSUME_STATS gives broker offset, committed offset, the lag and the store time of the last consumed message
(parsed by `remoting.consume_stats`); `config/consumerOffset.json` is written in 4.9.1's form and read back after a
restart; the slave takes the master's offsets by SlaveSynchronize (and logs each sync as 4.9.1 does), ignores a
pull's commitOffset and, with the master down, accepts UPDATE_CONSUMER_OFFSET and serves pulls suggesting broker 0,
as the real 4.9.1 slave did."""
from __future__ import annotations

import pytest
from consumer_wire import WireConnection, consumer_data, pull_fields
from emu_cluster import EmuNodeControl
from waiting import poll

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.consume_stats import get_consume_stats
from remoting.message import Message

pytestmark = pytest.mark.root
TOPIC = "OffsetTopic"
GROUP = "emu_offset_group"
QUEUES = 2


def _offset(conn: WireConnection, queue_id: int) -> tuple[int, str | None]:
    r = conn.call(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id})
    return r.code, (r.ext_fields or {}).get("offset")


def test_offsets_are_committed_reported_persisted_and_synced(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, QUEUES)
    producer = cluster.producer()
    for i in range(10):
        producer.send(Message(TOPIC, f"m{i}".encode(), keys=f"k{i}"), 10_000)
    master = WireConnection(cluster.master.addr)
    client = RemotingClient()
    try:
        assert _offset(master, 0) == (ResponseCode.SUCCESS, "0")
        master.heartbeat("127.0.0.1@off", [consumer_data(GROUP, [TOPIC])])
        r = master.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0,
                                                             "commitOffset": 2})
        assert (r.code, r.ext_fields) == (ResponseCode.SUCCESS, {})
        pulled = master.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 1, 0, sys_flag=3, commit_offset=1))
        assert pulled.code == ResponseCode.SUCCESS
        assert _offset(master, 0) == (ResponseCode.SUCCESS, "2")
        assert _offset(master, 1) == (ResponseCode.SUCCESS, "1")

        stats = get_consume_stats(client, cluster.master.addr, GROUP, TOPIC)
        by_queue = {mq.queue_id: w for mq, w in stats.offsets.items()}
        assert set(by_queue) == set(range(QUEUES))
        assert {mq.topic for mq in stats.offsets} == {TOPIC}
        maxes = [cluster.admin.get_max_offset(cluster.master.addr, TOPIC, q) for q in range(QUEUES)]
        assert [by_queue[q].broker_offset for q in range(QUEUES)] == maxes
        assert [by_queue[q].consumer_offset for q in range(QUEUES)] == [2, 1]
        assert stats.diff() == sum(maxes) - 3
        assert all(by_queue[q].last_timestamp > 1_600_000_000_000 for q in range(QUEUES))
        assert get_consume_stats(client, cluster.master.addr, GROUP).offsets == stats.offsets  # topics by offsets
        assert get_consume_stats(client, cluster.master.addr, "no_such_group").offsets == {}

        # the slave takes the master's offsets (SlaveSynchronize, every 10 s) and ignores a pull's commitOffset
        slave = WireConnection(cluster.slave.addr)
        try:
            poll(lambda: _offset(slave, 0) == (ResponseCode.SUCCESS, "2"), 25, "the slave to sync the offsets")
            # the sync logged as the real 4.9.1's slave does (which tables it takes: test_emu_slave_sync_versions.py)
            poll(lambda: "Update slave delay offset from master, " in cluster.slave.log("broker.log"), 10,
                 "the sync's last line")
            assert f"Update slave consumer offset from master, {cluster.master.addr}" in cluster.slave.log("broker.log")
            slave.heartbeat("127.0.0.1@off", [consumer_data(GROUP, [TOPIC])])
            r = slave.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0, sys_flag=3, commit_offset=4))
            assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.SUCCESS, "0")  # slaveReadEnable
            assert _offset(slave, 0) == (ResponseCode.SUCCESS, "2")
        finally:
            slave.close()
    finally:
        master.close()
        client.shutdown()

    # persisted in 4.9.1's form, read back after a restart
    control = EmuNodeControl(cluster, "master")
    control.stop()
    store_root = next(p for p in cluster.workdir.rglob("consumerOffset.json") if "master" in str(p))
    text = store_root.read_text()
    assert text.startswith('{\n\t"offsetTable":{\n\t\t') and f'"{TOPIC}@{GROUP}":{{0:2,1:1\n\t\t}}' in text
    control.start()
    control.wait_ready(30)
    master = WireConnection(cluster.master.addr)
    try:
        assert _offset(master, 0) == (ResponseCode.SUCCESS, "2")
        assert _offset(master, 1) == (ResponseCode.SUCCESS, "1")
    finally:
        master.close()

    # master down: the slave accepts UPDATE_CONSUMER_OFFSET and serves pulls
    control.stop()
    slave = WireConnection(cluster.slave.addr)
    try:
        slave.heartbeat("127.0.0.1@off", [consumer_data(GROUP, [TOPIC])])
        r = slave.call(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 1,
                                                            "commitOffset": 3})
        assert r.code == ResponseCode.SUCCESS
        assert _offset(slave, 1) == (ResponseCode.SUCCESS, "3")
        r = slave.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 1, 3))
        assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.SUCCESS, "0")
    finally:
        slave.close()


def test_a_4_9_1_slave_without_slave_read_serves_pulls_suggesting_the_master(emu_cluster):
    cluster = emu_cluster(slave_conf={"slaveReadEnable": "false"})
    cluster.create_topic(TOPIC, 1)
    cluster.producer().send(Message(TOPIC, b"one"), 10_000)
    poll(cluster.caught_up, 10, "the slave to catch up")
    slave = WireConnection(cluster.slave.addr)
    try:
        slave.heartbeat("127.0.0.1@s", [consumer_data(GROUP, [TOPIC])])
        r = poll(lambda: (x := slave.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0))).code
                 == ResponseCode.SUCCESS and x, 10, "the slave's pull to find the message")
        assert (r.remark, r.ext_fields["suggestWhichBrokerId"]) == ("FOUND", "0")
    finally:
        slave.close()
