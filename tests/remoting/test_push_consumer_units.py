"""Unit tests of the push consumer's parts: AllocateMessageQueueAveragely, the process queue (committed offset,
span), flow control thresholds and their log lines (a consumer whose pull is never sent: the checks come first),
pull-address choice, and the connection hook for requests a server sends to the client (over a real socket)."""
from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from remoting import codec
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, make_request
from remoting.consumer import ProcessQueue, PushConsumer
from remoting.consumer.allocation import allocate_averagely, sort_queues
from remoting.consumer.pull_request import PullRequest
from remoting.consumer.pull_service import PULL_DELAY_WHEN_FLOW_CONTROL_S
from remoting.consumer.subscription import hash_tag
from remoting.route import MessageQueue
from remoting.stored import MessageExt


def _mqs(n: int, broker: str = "b") -> list[MessageQueue]:
    return [MessageQueue("T", broker, i) for i in range(n)]


@pytest.mark.parametrize(("n_mq", "n_cid", "expected"), [
    (4, 2, [[0, 1], [2, 3]]),
    (4, 3, [[0, 1], [2], [3]]),
    (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
    (2, 3, [[0], [1], []]),
    (5, 1, [[0, 1, 2, 3, 4]]),
])
def test_allocate_averagely(n_mq: int, n_cid: int, expected: list[list[int]]) -> None:
    cids = sorted(f"127.0.0.1@c{i}" for i in range(n_cid))
    got = [[mq.queue_id for mq in allocate_averagely("g", cid, _mqs(n_mq), cids)] for cid in cids]
    assert got == expected
    assert allocate_averagely("g", "127.0.0.1@other", _mqs(n_mq), cids) == []


def test_queues_sort_by_topic_broker_then_id() -> None:
    mqs = [MessageQueue("T", "b", 1), MessageQueue("T", "a", 3), MessageQueue("S", "z", 0), MessageQueue("T", "a", 0)]
    assert sort_queues(mqs) == [MessageQueue("S", "z", 0), MessageQueue("T", "a", 0), MessageQueue("T", "a", 3),
                                MessageQueue("T", "b", 1)]


def _msg(offset: int, size: int = 10) -> MessageExt:
    return MessageExt(topic="T", queue_id=0, queue_offset=offset, commitlog_offset=offset * 100, body=b"x" * size)


def test_process_queue_commits_the_smallest_offset_still_cached() -> None:
    pq = ProcessQueue()
    assert pq.remove([_msg(0)]) == -1, "nothing ever cached"
    msgs = [_msg(o) for o in range(10, 15)]
    pq.put(msgs)
    pq.put([_msg(12)])  # already cached: not counted twice
    assert (pq.count, pq.size, pq.max_span) == (5, 50, 4)
    assert pq.remove([msgs[1], msgs[3]]) == 10, "offset 10 still being consumed"
    assert pq.remove([msgs[0]]) == 12
    assert pq.remove([msgs[2], msgs[4]]) == 15, "empty: the highest offset put + 1"
    assert (pq.count, pq.size, pq.max_span) == (0, 0, 0)


def _consumer(**kw) -> tuple[PushConsumer, PullRequest]:
    c = PushConsumer("127.0.0.1:1", "g", instance_name="unit", **kw)
    c.subscribe("T")
    return c, PullRequest("g", MessageQueue("T", "b", 0), 0)


@pytest.mark.parametrize(("kw", "msgs", "counter", "text"), [
    ({}, [_msg(o, 1) for o in range(1001)], "fc_count",
     "the cached message count exceeds the threshold 1000, so do flow control, minOffset=0, maxOffset=1000, "
     "count=1001, size=0 MiB, pullRequest=PullRequest [consumerGroup=g, messageQueue=MessageQueue [topic=T, "
     "brokerName=b, queueId=0], nextOffset=0], flowControlTimes=1"),
    ({}, [_msg(o, 1024 * 1024) for o in range(101)], "fc_size",
     "the cached message size exceeds the threshold 100 MiB, so do flow control, minOffset=0, maxOffset=100, "
     "count=101, size=101 MiB"),
    ({}, [_msg(0, 1), _msg(2001, 1)], "fc_span",
     "the queue's messages, span too long, so do flow control, minOffset=0, maxOffset=2001, maxSpan=2001, "),
])
def test_flow_control_thresholds_as_4_9_1(caplog, kw, msgs, counter, text) -> None:
    consumer, req = _consumer(**kw)
    req.pq.put(msgs)
    with caplog.at_level(logging.WARNING, logger="rmq_chaos.consumer"):
        for _ in range(1001):
            assert consumer.pull_service.pull_once(req) == PULL_DELAY_WHEN_FLOW_CONTROL_S
    assert getattr(req, counter) == 1001
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, "logged the 1st and the 1001st time"
    assert lines[0].startswith(text)
    assert lines[1].endswith("flowControlTimes=1001")


def test_below_thresholds_no_flow_control() -> None:
    consumer, req = _consumer()
    req.pq.put([_msg(o, 1) for o in range(1000)])  # exactly the threshold: Java's check is `>`
    assert not consumer.pull_service.flow_control.holds(req)
    req.pq.put([_msg(2000, 1)])  # span 2000: allowed; count now 1001 though
    assert consumer.pull_service.flow_control.holds(req)


def test_pull_address_falls_back_to_the_slave_and_commits_go_to_the_first_address() -> None:
    consumer, _ = _consumer()
    consumer.instance._broker_addrs["b"] = {0: "m:1", 1: "s:1"}
    assert consumer.instance.find_broker_addr_in_subscribe("b", 1) == ("s:1", 1)
    assert consumer.instance.find_broker_addr_in_admin("b") == "m:1"
    consumer.instance._broker_addrs["b"] = {1: "s:1"}  # master gone from the route
    assert consumer.instance.find_broker_addr_in_subscribe("b", 0) == ("s:1", 1)
    assert consumer.instance.find_broker_addr_in_subscribe("b", 0, only_this=True) is None
    assert consumer.instance.find_broker_addr_in_admin("b") == "s:1"
    assert consumer.instance.find_broker_addr_in_publish("b") is None


def test_heartbeat_consumer_data() -> None:
    consumer, _ = _consumer(consume_from="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("U", "a || b")
    data = consumer.instance.consumer_data()
    assert (data["consumeType"], data["messageModel"], data["consumeFromWhere"], data["unitMode"]) == \
        ("CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET", False)
    subs = {s["topic"]: s for s in data["subscriptionDataSet"]}
    assert subs["U"]["tagsSet"] == ["a", "b"] and subs["U"]["codeSet"] == [97, 98]
    assert hash_tag("TagA") == 2598919  # "TagA".hashCode()
    with pytest.raises(ValueError, match="allowed: CONSUME_FROM_LAST_OFFSET, CONSUME_FROM_FIRST_OFFSET"):
        PushConsumer("127.0.0.1:1", "g", consume_from="CONSUME_FROM_TIMESTAMP")


def test_server_initiated_requests_reach_registered_processors() -> None:
    """A real socket: the server sends a one-way NOTIFY_CONSUMER_IDS_CHANGED (processor runs, nothing answered), a
    request with a registered code (answered by the processor) and one without (REQUEST_CODE_NOT_SUPPORTED)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    answers: list[RemotingCommand] = []
    done = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            reader = codec.FrameReader()
            while not reader.feed(conn.recv(65536)):  # the client's first request: ignored
                pass
            conn.sendall(codec.encode(make_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"},
                                                   oneway=True)))
            conn.sendall(codec.encode(make_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g"})))
            conn.sendall(codec.encode(make_request(RequestCode.GET_ALL_CONSUMER_OFFSET)))
            conn.settimeout(10)
            while len(answers) < 2:
                answers.extend(reader.feed(conn.recv(65536)))
        done.set()

    threading.Thread(target=serve, daemon=True).start()
    client = RemotingClient()
    notified = threading.Event()
    client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                              lambda conn, req: notified.set() or RemotingCommand(code=0))
    client.register_processor(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                              lambda conn, req: RemotingCommand(code=ResponseCode.SUCCESS, remark="mine"))
    try:
        try:
            client.invoke_oneway(f"127.0.0.1:{port}", make_request(RequestCode.HEART_BEAT))
        finally:
            assert done.wait(10)
        assert notified.is_set()
        assert [(a.code, a.remark) for a in answers] == [
            (ResponseCode.SUCCESS, "mine"),
            (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {RequestCode.GET_ALL_CONSUMER_OFFSET} not supported")]
        assert all(a.is_response for a in answers)
    finally:
        client.shutdown()
        listener.close()
        time.sleep(0)
