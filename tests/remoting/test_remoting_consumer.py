"""PullConsumer and offset calls over real sockets against a scripted broker that serves one queue the way a 4.9.1
broker answers PULL_MESSAGE (FOUND with stored messages, NO_NEW_MSG at the end, OFFSET_MOVED before the start)."""
from __future__ import annotations

import pytest
from remoting_scripted_server import Reply

from remoting.admin import BrokerAdmin
from remoting.codes import RequestCode, ResponseCode
from remoting.consumer import PullConsumer
from remoting.errors import MQBrokerException, MQClientException, RemotingCommandException
from remoting.headers import GetMaxOffsetRequestHeader, PullMessageRequestHeader
from remoting.stored import encode_stored_message

TOPIC = "ReadTopic"


def queue_server(first: int, count: int, port_holder: dict, slave: bool = False, stuck: bool = False):
    """A handler serving queue 0 of TOPIC with offsets first..first+count-1 (bodies b"m<offset>")."""
    def stored(offset: int) -> bytes:
        return encode_stored_message(
            topic=TOPIC, queue_id=0, body=f"m{offset}".encode(), properties={"KEYS": f"k{offset}", "UNIQ_KEY": f"U{offset}"},
            queue_offset=offset, commitlog_offset=1000 + offset * 100, born_timestamp=1, born_host="127.0.0.1:4000",
            store_timestamp=2, store_host=f"127.0.0.1:{port_holder.get('port', 0)}")

    lo, hi = first, first + count

    def handle(cmd):
        if cmd.code == RequestCode.GET_MAX_OFFSET:
            assert GetMaxOffsetRequestHeader.from_fields(cmd.ext_fields).topic == TOPIC
            return Reply(ext={"offset": hi})
        if cmd.code == RequestCode.GET_MIN_OFFSET:
            return Reply(ext={"offset": lo})
        if cmd.code != RequestCode.PULL_MESSAGE:
            return Reply()
        h = PullMessageRequestHeader.from_fields(cmd.ext_fields)
        assert (h.sysFlag, h.subscription, h.expressionType, h.commitOffset) == (4, "*", "TAG", 0)
        ext = {"suggestWhichBrokerId": 1 if slave else 0, "minOffset": lo, "maxOffset": hi}
        if stuck:
            return Reply(ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE", {**ext, "nextBeginOffset": h.queueOffset})
        if h.queueOffset < lo:
            return Reply(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL", {**ext, "nextBeginOffset": lo})
        if h.queueOffset == hi:
            return Reply(ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", {**ext, "nextBeginOffset": hi})
        if h.queueOffset > hi:
            return Reply(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", {**ext, "nextBeginOffset": hi})
        end = min(hi, h.queueOffset + h.maxMsgNums)
        body = b"".join(stored(o) for o in range(h.queueOffset, end))
        return Reply(ResponseCode.SUCCESS, "FOUND", {**ext, "nextBeginOffset": end}, body)

    return handle


@pytest.fixture
def queue_broker(server_factory):
    def make(first=0, count=0, **kw):
        holder: dict = {}
        server = server_factory(queue_server(first, count, holder, **kw))
        holder["port"] = server.port
        return server

    return make


@pytest.fixture
def consumer(client_factory):
    return PullConsumer("readback_group", client_factory())


def test_iter_queue_pages_through_the_whole_queue(queue_broker, consumer):
    broker = queue_broker(first=5, count=75)
    messages = list(consumer.iter_queue(broker.addr, TOPIC, 0, batch=32))
    assert [m.queue_offset for m in messages] == list(range(5, 80))
    assert [m.body for m in messages[:2]] == [b"m5", b"m6"] and messages[-1].keys == "k79"
    assert messages[0].uniq_key == "U5" and messages[0].commitlog_offset == 1500
    assert messages[0].store_host == broker.addr
    pulls = broker.requests_with(RequestCode.PULL_MESSAGE)
    assert [int(p.ext_fields["queueOffset"]) for p in pulls] == [5, 37, 69, 80]
    assert consumer.get_max_offset(broker.addr, TOPIC, 0) == 80 and consumer.get_min_offset(broker.addr, TOPIC, 0) == 5


def test_iter_queue_moves_past_a_too_small_offset_and_stops_past_the_end(queue_broker, consumer):
    broker = queue_broker(first=10, count=3)
    assert [m.queue_offset for m in consumer.iter_queue(broker.addr, TOPIC, 0, start_offset=0)] == [10, 11, 12]
    assert list(consumer.iter_queue(broker.addr, TOPIC, 0, start_offset=50)) == []
    assert list(consumer.iter_queue(queue_broker().addr, TOPIC, 0)) == []


def test_pull_results_map_like_process_pull_response(queue_broker, consumer):
    broker = queue_broker(first=0, count=2, slave=True)
    found = consumer.pull(broker.addr, TOPIC, 0, 0, 1)
    assert (found.status, found.remark, found.next_begin_offset, found.suggest_which_broker_id) == ("FOUND", "FOUND", 1, 1)
    end = consumer.pull(broker.addr, TOPIC, 0, 2)
    assert (end.status, end.remark, end.messages) == ("NO_NEW_MSG", "OFFSET_OVERFLOW_ONE", [])
    moved = consumer.pull(broker.addr, TOPIC, 0, 9)
    assert (moved.status, moved.next_begin_offset) == ("OFFSET_ILLEGAL", 2)


def test_a_broker_that_never_moves_on_is_reported(queue_broker, consumer):
    broker = queue_broker(first=0, count=5, stuck=True)
    with pytest.raises(MQClientException, match="stays at offset 0: NO_MATCHED_MSG"):
        list(consumer.iter_queue(broker.addr, TOPIC, 0))


def test_other_codes_raise_broker_exceptions(server_factory, consumer, client_factory):
    server = server_factory(lambda cmd: Reply(26, "subscription group not exist"))
    with pytest.raises(MQBrokerException) as err:
        consumer.pull(server.addr, TOPIC, 0, 0)
    assert (err.value.response_code, err.value.remark, err.value.broker_addr) == (26, "subscription group not exist",
                                                                                   server.addr)
    admin = BrokerAdmin(client_factory())
    for call in (lambda: admin.get_max_offset(server.addr, TOPIC, 0), lambda: admin.get_runtime_info(server.addr),
                 lambda: admin.get_broker_config(server.addr)):
        with pytest.raises(MQBrokerException):
            call()
    with pytest.raises(MQClientException) as err:
        admin.create_topic(server.addr, TOPIC)
    assert err.value.response_code == 26


def test_admin_offsets(queue_broker, client_factory):
    broker = queue_broker(first=3, count=4)
    admin = BrokerAdmin(client_factory())
    assert (admin.get_min_offset(broker.addr, TOPIC, 0), admin.get_max_offset(broker.addr, TOPIC, 0)) == (3, 7)


def test_a_found_body_that_does_not_decode_names_the_queue_and_offset(server_factory, consumer):
    """A broker that advanced past bytes it never wrote can serve zeros as FOUND: a clear RemotingCommandException,
    not a bare struct.error, and the pages before it were yielded."""
    good = encode_stored_message(
        topic=TOPIC, queue_id=3, body=b"m0", properties={"KEYS": "k0"}, queue_offset=0, commitlog_offset=0,
        born_timestamp=1, born_host="127.0.0.1:4000", store_timestamp=2, store_host="127.0.0.1:4001")

    def handle(cmd):
        if cmd.code == RequestCode.GET_MIN_OFFSET:
            return Reply(ext={"offset": 0})
        h = PullMessageRequestHeader.from_fields(cmd.ext_fields)
        ext = {"suggestWhichBrokerId": 1, "minOffset": 0, "maxOffset": 9, "nextBeginOffset": h.queueOffset + 1}
        return Reply(ResponseCode.SUCCESS, "FOUND", ext, good if h.queueOffset == 0 else bytes(200))

    server = server_factory(handle)
    got = []
    with pytest.raises(RemotingCommandException) as err:
        for m in consumer.iter_queue(server.addr, TOPIC, 3):
            got.append(m.queue_offset)
    assert got == [0]
    text = str(err.value)
    assert f"PULL_MESSAGE from {server.addr} {TOPIC}:3 at offset 1" in text and "200 bytes" in text
    assert "bad magic code" in text and isinstance(err.value.__cause__, RemotingCommandException)
