"""CONSUMER_SEND_MSG_BACK on the emulator's broker, as the real 4.9.1 answered it: the message goes to
`SCHEDULE_TOPIC_XXXX` (queue level - 1; level 3 + reconsumeTimes when the client says 0) and reappears in
`%RETRY%<group>` when its delay is over, with RETRY_TOPIC, ORIGIN_MESSAGE_ID, REAL_TOPIC/REAL_QID, reconsume times
+ 1; a negative level or reconsume times at maxReconsumeTimes send it to the write-only `%DLQ%<group>`;
`config/delayOffset.json` records the schedule's progress; a slave answers SYSTEM_ERROR SERVICE_NOT_AVAILABLE."""
from __future__ import annotations

import pytest
from consumer_wire import WireConnection, consumer_data, pull_fields
from waiting import poll

from remoting.codes import RequestCode, ResponseCode
from remoting.message import Message
from remoting.stored import decode_stored_messages

pytestmark = pytest.mark.root
TOPIC = "BackTopic"
GROUP = "emu_back_group"
RETRY, DLQ = f"%RETRY%{GROUP}", f"%DLQ%{GROUP}"


def _max(conn: WireConnection, topic: str, queue_id: int = 0) -> int:
    return int(conn.call(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}).ext_fields["offset"])


def _back(conn: WireConnection, msg, level: int, max_times: int = 16):
    return conn.call(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": msg.commitlog_offset, "group": GROUP, "delayLevel": level, "originMsgId": msg.msg_id,
        "originTopic": msg.topic, "unitMode": "false", "maxReconsumeTimes": max_times})


def test_a_message_sent_back_reappears_in_the_retry_topic_after_its_delay(emu_cluster):
    cluster = emu_cluster()
    cluster.create_topic(TOPIC, 1)
    sent = cluster.producer().send(Message(TOPIC, b"again", keys="k-back"), 10_000)
    conn = WireConnection(cluster.master.addr)
    try:
        conn.heartbeat("127.0.0.1@back", [consumer_data(GROUP, [TOPIC])])
        found = conn.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, TOPIC, 0, 0))
        original = decode_stored_messages(found.body)[0]

        r = _back(conn, original, 0)  # the client's 0: level 3 + reconsumeTimes (10 s)
        assert (r.code, r.remark, r.ext_fields) == (ResponseCode.SUCCESS, None, None)
        poll(lambda: _max(conn, "SCHEDULE_TOPIC_XXXX", 2) == 1, 5, "the message in the schedule queue of level 3")
        r = _back(conn, original, 1)  # level 1: 1 s
        assert r.code == ResponseCode.SUCCESS
        poll(lambda: _max(conn, "SCHEDULE_TOPIC_XXXX", 0) == 1, 5, "the message in the schedule queue of level 1")

        poll(lambda: _max(conn, RETRY) >= 1, 15, "the level-1 message in the retry topic")
        pulled = conn.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, RETRY, 0, 0))
        retried = decode_stored_messages(pulled.body)[0]
        assert (retried.topic, retried.body, retried.reconsume_times, retried.keys) == (RETRY, b"again", 1, "k-back")
        assert retried.properties["RETRY_TOPIC"] == TOPIC
        assert retried.properties["ORIGIN_MESSAGE_ID"] == original.msg_id
        assert (retried.properties["REAL_TOPIC"], retried.properties["REAL_QID"]) == (RETRY, "0")
        assert (retried.properties["DELAY"], retried.properties["WAIT"]) == ("1", "false")
        assert retried.uniq_key == sent.msg_id

        # a second send-back keeps the first origin; a level < 0 or too many reconsumes go to the DLQ
        assert _back(conn, retried, -1).code == ResponseCode.SUCCESS
        assert _back(conn, retried, 0, max_times=1).code == ResponseCode.SUCCESS
        poll(lambda: _max(conn, DLQ) == 2, 5, "both messages in the DLQ")
        r = conn.call(RequestCode.PULL_MESSAGE, pull_fields(GROUP, DLQ, 0, 0, sys_flag=4))
        assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, f"the topic[{DLQ}] pulling message is forbidden")
        missing = conn.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": 1 << 40, "group": GROUP, "delayLevel": 0,
                                                                 "originMsgId": "", "originTopic": TOPIC,
                                                                 "unitMode": "false", "maxReconsumeTimes": 16})
        assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {1 << 40}")

        poll(lambda: _max(conn, RETRY) >= 2, 25, "the level-3 message in the retry topic")
        slave = WireConnection(cluster.slave.addr)
        try:
            r = _back(slave, original, 0)
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "SERVICE_NOT_AVAILABLE")
        finally:
            slave.close()
    finally:
        conn.close()
    cluster.stop_node("master")
    delay = next(p for p in cluster.workdir.rglob("delayOffset.json") if "master" in str(p)).read_text()
    assert delay == '{\n\t"offsetTable":{1:1,3:1\n\t}\n}'
