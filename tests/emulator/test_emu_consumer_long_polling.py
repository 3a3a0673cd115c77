"""Long polling on the emulator's broker, as the real 4.9.1 answers a push consumer's pull (suspend flag, no
subscription flag, group registered by heartbeat): a pull at the end of a queue gets no answer until a message for
that queue is stored, then FOUND with it; with no message it is answered PULL_NOT_FOUND (19, OFFSET_OVERFLOW_ONE)
once its `suspendTimeoutMillis` is over (the hold service checks every 5 s, as 4.9.1's). Held pulls take no pull
thread: more held pulls than the pool has threads still leave plain pulls answered. Without the group registered
the pull is refused SUBSCRIPTION_NOT_EXIST, as on the real 4.9.1."""
from __future__ import annotations

import pytest
from consumer_wire import WireConnection, consumer_data, pull_fields

from remoting.codes import RequestCode, ResponseCode
from remoting.message import Message
from remoting.stored import decode_stored_messages

pytestmark = pytest.mark.root
TOPIC = "PollTopic"
GROUP = "emu_poll_group"
PULL_THREADS = 2


def test_held_pulls_are_answered_by_arrival_or_by_their_suspend_time(emu_cluster):
    cluster = emu_cluster(wait_slave=False, master_conf={"pullMessageThreadPoolNums": str(PULL_THREADS)})
    cluster.create_topic(TOPIC, 1)
    conn = WireConnection(cluster.master.addr)
    try:
        refused = conn.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0))
        assert (refused.code, refused.ext_fields) == (ResponseCode.SUBSCRIPTION_NOT_EXIST, {})
        assert refused.remark.startswith("the consumer's group info not exist\nSee http")
        conn.heartbeat("127.0.0.1@poll", [consumer_data(GROUP, [TOPIC])])

        # held until a message arrives; more held pulls than pull threads
        held = [conn.send(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0, suspend_ms=60_000))
                for _ in range(PULL_THREADS + 2)]
        plain = conn.call(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0})
        assert plain.ext_fields == {"offset": "0"}
        other = conn.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0, sys_flag=0))
        assert other.code == ResponseCode.PULL_NOT_FOUND  # a pull without suspend is answered at once
        assert all(conn.wait(op, 0.5) is None for op in held[:1]), "a pull with nothing to find was answered"
        result = cluster.producer().send(Message(TOPIC, b"wake-up", keys="k1"), 10_000)
        assert result.queue_id == 0
        answers = [conn.wait(op, 15) for op in held]
        assert all(a is not None for a in answers), "a held pull was not answered after the message arrived"
        for answer in answers:
            assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "FOUND")
            assert answer.ext_fields["nextBeginOffset"] == "1"
            assert [m.body for m in decode_stored_messages(answer.body)] == [b"wake-up"]

        # nothing arrives: PULL_NOT_FOUND after the suspend time
        op = conn.send(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 1, suspend_ms=300))
        answer = conn.wait(op, 20)
        assert answer is not None, "a held pull was never answered"
        assert (answer.code, answer.remark) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE")
        assert answer.ext_fields == {"suggestWhichBrokerId": "0", "nextBeginOffset": "1", "minOffset": "0",
                                     "maxOffset": "1"}
    finally:
        conn.close()


def test_short_polling_when_long_polling_is_off(emu_cluster):
    cluster = emu_cluster(wait_slave=False, master_conf={"longPollingEnable": "false",
                                                          "shortPollingTimeMills": "200"})
    cluster.create_topic(TOPIC, 1)
    conn = WireConnection(cluster.master.addr)
    try:
        conn.heartbeat("127.0.0.1@poll", [consumer_data(GROUP, [TOPIC])])
        op = conn.send(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0, suspend_ms=600_000))
        answer = conn.wait(op, 20)  # held shortPollingTimeMills, not the 10 minutes asked for
        assert answer is not None and answer.code == ResponseCode.PULL_NOT_FOUND
    finally:
        conn.close()
