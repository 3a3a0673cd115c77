"""Send semantics of `Producer` per client profile, over real sockets against a scripted name server and brokers
that answer with a chosen code, after a delay, or never (DefaultMQProducerImpl.sendDefaultImpl)."""
from __future__ import annotations

import dataclasses
import re
import threading
import time
import zlib

import pytest
from remoting_scripted_server import SILENT, Reply, route_for, send_ok_reply

from remoting.codes import RequestCode
from remoting.errors import (
    MQBrokerException,
    MQClientException,
    RemotingTooMuchRequestException,
)
from remoting.headers import SendMessageRequestHeaderV2
from remoting.message import Message
from remoting.outcome import outcome_of
from remoting.producer import Producer
from remoting.profiles import resolve_profile
from remoting.route import TopicRouteData

TOPIC = "ChaosTopic"
BUSY = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 206ms, size of queue: 12"


@pytest.fixture
def cluster(broker_factory, namesrv_factory):
    """cluster({broker name: script or address}) -> (namesrv addr, {name: server}); routes for TOPIC."""
    producers: list[Producer] = []

    def make(brokers: dict, extra_routes: dict[str, TopicRouteData] | None = None, topic=TOPIC):
        servers = {name: broker_factory(s) for name, s in brokers.items() if not isinstance(s, str)}
        addrs = {name: (s if isinstance(s, str) else servers[name].addr) for name, s in brokers.items()}
        routes = {topic: route_for(addrs)} if topic else {}
        routes.update(extra_routes or {})
        return namesrv_factory(routes).addr, servers

    def producer(namesrv, profile="java-4.9.1", **kw) -> Producer:
        p = Producer(namesrv, "chaos_producer", profile, **kw)
        producers.append(p)
        return p

    make.producer = producer
    yield make
    for p in producers:
        p.close()


def code_then_ok(code, remark=None, times=10**9):
    """A broker script answering `code` to the first `times` sends and SEND_OK after."""
    return lambda cmd, n: Reply(code, remark) if n < times else send_ok_reply(cmd, 0, n)


PROFILE_RETRIES = {
    "java-4.9.1": {17, 14, 1, 16, 204, 205},
    "java-4.9.3": {17, 14, 1, 16, 204, 205},
    "java-5.3": {17, 14, 1, 16, 204, 205, 2},
}


@pytest.mark.parametrize("profile", sorted(PROFILE_RETRIES))
@pytest.mark.parametrize("code", [1, 2, 13, 14, 16, 17, 204, 205, 1500])
def test_each_profile_retries_exactly_its_codes(cluster, profile, code):
    namesrv, _ = cluster({"broker-a": code_then_ok(code, f"remark {code}")})
    producer = cluster.producer(namesrv, profile)
    with pytest.raises((MQBrokerException, MQClientException)) as err:
        producer.send(Message(TOPIC, b"m"))
    e = err.value
    if code in PROFILE_RETRIES[profile]:
        assert type(e) is MQClientException and e.response_code == code
        assert [a.response_code for a in e.attempts] == [code] * 3
        assert e.error_message.startswith("Send [3] times, still failed, cost [")
        assert "Topic: ChaosTopic, BrokersSent: [broker-a, broker-a, broker-a]" in e.error_message
        assert outcome_of(e)[:2] == ("MQClientException", code)
        assert f"(cause: MQBrokerException: CODE: {code}  DESC: remark {code})" in outcome_of(e)[2]
    else:
        assert type(e) is MQBrokerException and e.response_code == code and e.remark == f"remark {code}"
        assert len(e.attempts) == 1 and e.attempts[0].error == "MQBrokerException"
        assert outcome_of(e) == ("MQBrokerException", code, f"remark {code}")


def test_retry_set_is_configurable(cluster):
    namesrv, _ = cluster({"broker-a": code_then_ok(2, BUSY, times=1)})
    producer = cluster.producer(namesrv, "java-4.9.3", retry_response_codes={17, 14, 1, 16, 204, 205, 2})
    result = producer.send(Message(TOPIC, b"m"))
    assert result.status == "SEND_OK" and [a.response_code for a in result.attempts] == [2, 0]


def test_timeout_clean_queue_not_retried_by_4_9_1_retried_by_5_3(cluster):
    namesrv, _ = cluster({"broker-a": code_then_ok(2, BUSY, times=1)})
    with pytest.raises(MQBrokerException) as err:
        cluster.producer(namesrv, "java-4.9.1").send(Message(TOPIC, b"m"))
    assert (err.value.response_code, err.value.remark) == (2, BUSY)
    assert str(err.value).startswith(f"CODE: 2  DESC: {BUSY} BROKER: 127.0.0.1:")
    namesrv, _ = cluster({"broker-a": code_then_ok(2, BUSY, times=1)})
    result = cluster.producer(namesrv, "java-5.3").send(Message(TOPIC, b"m"))
    assert result.status == "SEND_OK" and [a.response_code for a in result.attempts] == [2, 0]


def test_silent_broker_uses_the_whole_budget_in_one_attempt(cluster):
    namesrv, servers = cluster({"broker-a": lambda cmd, n: SILENT})
    producer = cluster.producer(namesrv)
    with pytest.raises(RemotingTooMuchRequestException) as err:
        producer.send(Message(TOPIC, b"m"), 3000)
    assert str(err.value) == "sendDefaultImpl call timeout"
    # the first attempt had the whole budget, less the route lookup and connect; when it expired within the
    # deadline's millisecond, `timeout < cost` does not hold yet (whole milliseconds, as in Java) and a second
    # attempt goes out with 0 ms left, as the Java client's does
    attempts = err.value.attempts
    assert [a.error for a in attempts] in (["RemotingTimeoutException"], ["RemotingTimeoutException"] * 2)
    addr = servers["broker-a"].addr
    assert re.fullmatch(rf"wait response on the channel <{addr}> timeout, (29\d\d|3000)\(ms\)", attempts[0].remark)
    assert all(a.remark in (f"wait response on the channel <{addr}> timeout, 0(ms)", "invokeSync call timeout")
               for a in attempts[1:])
    assert outcome_of(err.value) == ("RemotingTooMuchRequestException", None, "sendDefaultImpl call timeout")
    assert len(servers["broker-a"].requests_with(RequestCode.SEND_MESSAGE_V2)) <= len(attempts)


def test_last_attempt_timing_out_is_access_broker_timeout(cluster):
    namesrv, _ = cluster({"broker-a": lambda cmd, n: Reply(1, "busy") if n < 2 else SILENT})
    producer = cluster.producer(namesrv)
    with pytest.raises(MQClientException) as err:
        producer.send(Message(TOPIC, b"m"), 1500)
    assert err.value.response_code == 10002
    assert [a.error for a in err.value.attempts] == ["MQBrokerException", "MQBrokerException",
                                                     "RemotingTimeoutException"]


@pytest.mark.parametrize("code, status", [(11, "SLAVE_NOT_AVAILABLE"), (12, "FLUSH_SLAVE_TIMEOUT"),
                                          (10, "FLUSH_DISK_TIMEOUT")])
def test_not_store_ok_statuses_are_returned_not_raised(cluster, code, status):
    namesrv, servers = cluster({"broker-a": lambda cmd, n: send_ok_reply(cmd, 10911, 42, code=code)})
    result = cluster.producer(namesrv).send(Message(TOPIC, b"m"))
    assert (result.status, result.response_code, len(result.attempts)) == (status, code, 1)
    assert outcome_of(result) == (status, code, None)
    assert result.offset_msg_id == "7F00000100002A9F000000000000002A" and result.queue_offset == 42
    namesrv, _ = cluster({"broker-a": lambda cmd, n: send_ok_reply(cmd, 10911, n, code=code)})
    again = cluster.producer(namesrv, retry_another_broker_when_not_store_ok=True).send(Message(TOPIC, b"m"))
    assert again.status == status and [a.response_code for a in again.attempts] == [code] * 3


def test_connection_refused_tries_the_next_broker_then_gives_up(cluster, refused_addr):
    dead = refused_addr()
    namesrv, servers = cluster({"broker-a": dead, "broker-b": None})
    producer = cluster.producer(namesrv)
    results = [producer.send(Message(TOPIC, b"m")) for _ in range(6)]
    assert all(r.status == "SEND_OK" and r.broker_name == "broker-b" for r in results)
    failed_first = [r.attempts for r in results if r.attempts[0].broker_name == "broker-a"]
    assert failed_first and all(a[0].error == "RemotingConnectException" and len(a) == 2 for a in failed_first)

    namesrv, _ = cluster({"broker-a": dead, "broker-b": refused_addr()})
    with pytest.raises(MQClientException) as err:
        cluster.producer(namesrv).send(Message(TOPIC, b"m"))
    e = err.value
    assert e.response_code == 10001 and len(e.attempts) == 3
    names = [a.broker_name for a in e.attempts]
    assert names[0] != names[1] and names[1] != names[2]
    assert f"BrokersSent: [{', '.join(names)}]" in e.error_message
    assert outcome_of(e)[2].endswith(f"(cause: RemotingConnectException: connect to {e.attempts[2].addr} failed)")


def test_a_sync_timeout_fails_other_threads_in_flight_requests(cluster):
    namesrv, servers = cluster({"broker-a": lambda cmd, n: SILENT if n < 2 else send_ok_reply(cmd, 0, n)})
    broker = servers["broker-a"]
    producer = cluster.producer(namesrv)
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("r", producer.send(Message(TOPIC, b"slow"), 20000)))
    thread.start()
    deadline = time.monotonic() + 5
    while not broker.requests_with(RequestCode.SEND_MESSAGE_V2) and time.monotonic() < deadline:
        time.sleep(0.005)
    with pytest.raises(RemotingTooMuchRequestException):
        producer.send(Message(TOPIC, b"fast"), 150)  # its timeout closes the shared connection
    thread.join(10)
    result = box["r"]
    assert result.status == "SEND_OK"
    assert result.attempts[0].error == "RemotingSendRequestException"
    assert result.attempts[0].remark == f"send request to <{broker.addr}> failed"


def test_unknown_topic_falls_back_to_the_tbw102_route(cluster):
    namesrv, servers = cluster({"broker-a": None}, topic=None)
    broker = servers["broker-a"]
    tbw = route_for({"broker-a": broker.addr}, queues=8)
    namesrv, _ = cluster({}, extra_routes={"TBW102": tbw}, topic=None)
    producer = cluster.producer(namesrv)
    results = [producer.send(Message("NewTopic", b"m")) for _ in range(12)]
    assert all(r.status == "SEND_OK" for r in results)
    headers = [SendMessageRequestHeaderV2.from_fields(r.ext_fields) for r in broker.requests_with(310)]
    assert {h.e for h in headers} == {0, 1, 2, 3} and {h.c for h in headers} == {"TBW102"} and headers[0].d == 4


def test_no_route_at_all_is_not_found_topic(cluster):
    namesrv, _ = cluster({}, topic=None)
    with pytest.raises(MQClientException) as err:
        cluster.producer(namesrv).send(Message("Nowhere", b"m"))
    assert err.value.response_code == 10005
    assert err.value.error_message.startswith("No route info of this topic: Nowhere\nSee http")


def test_bad_messages_are_refused_before_sending(cluster):
    namesrv, servers = cluster({"broker-a": None})
    producer = cluster.producer(namesrv)
    cases = [(Message(TOPIC, b""), 13, "the message body length is zero"),
             (Message(TOPIC, b"x" * (4 * 1024 * 1024 + 1)), 13, "the message body size over max value, MAX: 4194304"),
             (Message("bad topic", b"x"), -1, "The specified topic[bad topic] contains illegal characters")]
    for msg, code, text in cases:
        with pytest.raises(MQClientException) as err:
            producer.send(msg)
        assert err.value.response_code == code and text in str(err.value)
    assert servers["broker-a"].requests == []


@pytest.mark.parametrize("profile, version, flag, has_n", [("java-4.9.1", 395, 0x1, False),
                                                           ("java-4.9.3", 399, 0x1, False),
                                                           ("java-5.3", 473, 0x301, True)])
def test_profile_wire_details_and_compression(cluster, profile, version, flag, has_n):
    namesrv, servers = cluster({"broker-a": None})
    producer = cluster.producer(namesrv, profile)
    body = b"abc" * 3000
    producer.send(Message(TOPIC, body))
    (request,) = servers["broker-a"].requests_with(310)
    header = SendMessageRequestHeaderV2.from_fields(request.ext_fields)
    assert request.version == version and request.language == "JAVA"
    assert header.f == flag and zlib.decompress(request.body) == body
    assert (header.n == "broker-a") is has_n
    assert list(request.ext_fields) == list(header.to_fields())


def test_the_header_follows_a_profile_or_group_changed_after_sends(cluster):
    namesrv, servers = cluster({"broker-a": None})
    producer = cluster.producer(namesrv, "java-4.9.1")
    producer.send(Message(TOPIC, b"m"))
    producer.profile = dataclasses.replace(resolve_profile("java-5.3"), default_topic_queue_nums=8)
    producer.group = "other-group"
    producer.send(Message(TOPIC, b"m"))
    first, second = (SendMessageRequestHeaderV2.from_fields(r.ext_fields)
                     for r in servers["broker-a"].requests_with(310))
    assert (first.d, first.n) == (4, None) and first.a != "other-group"
    assert (second.a, second.d, second.n) == ("other-group", 8, "broker-a")


def test_one_producer_shared_by_many_threads_uses_one_connection(cluster):
    namesrv, servers = cluster({"broker-a": None})
    producer = cluster.producer(namesrv)
    outcomes: list[str] = []

    def work():
        for _ in range(40):
            outcomes.append(producer.send(Message(TOPIC, b"m")).status)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert outcomes == ["SEND_OK"] * 640
    assert servers["broker-a"].connections_accepted == 1
    queues = [SendMessageRequestHeaderV2.from_fields(r.ext_fields).e for r in servers["broker-a"].requests_with(310)]
    assert set(queues) == {0, 1, 2, 3}


def test_routes_are_refreshed_and_heartbeats_sent(broker_factory, namesrv_factory, cluster):
    a, b = broker_factory(), broker_factory()
    routes = {TOPIC: route_for({"broker-a": a.addr})}
    namesrv = namesrv_factory(routes)
    producer = cluster.producer(namesrv.addr, poll_name_server_interval_ms=100, heartbeat_broker_interval_ms=100)
    assert producer.send(Message(TOPIC, b"m")).broker_name == "broker-a"
    routes[TOPIC] = route_for({"broker-b": b.addr})
    deadline = time.monotonic() + 10
    while producer.send(Message(TOPIC, b"m")).broker_name != "broker-b":
        assert time.monotonic() < deadline, "route was never refreshed"
        time.sleep(0.02)
    deadline = time.monotonic() + 10
    while not b.requests_with(RequestCode.HEART_BEAT):
        assert time.monotonic() < deadline, "no heartbeat"
        time.sleep(0.02)
    beat = b.requests_with(RequestCode.HEART_BEAT)[0]
    assert b'"groupName":"chaos_producer"' in beat.body and producer.client_id.encode() in beat.body


def test_closed_producer_refuses(cluster):
    namesrv, _ = cluster({"broker-a": None})
    producer = cluster.producer(namesrv)
    producer.close()
    with pytest.raises(MQClientException, match="SHUTDOWN_ALREADY"):
        producer.send(Message(TOPIC, b"m"))


def test_profiles_refuse_unknown_names_and_settings():
    from remoting.profiles import resolve_profile

    with pytest.raises(ValueError, match="unknown client profile 'java-9'; allowed: java-4.9.1, java-4.9.3, java-5.3"):
        resolve_profile("java-9")
    with pytest.raises(ValueError, match="unknown client setting\\(s\\) retries; allowed: retry_times_when_send_failed"):
        resolve_profile("java-4.9.1", retries=3)
    with pytest.raises(ValueError, match="serialize_type 'XML'; allowed: JSON, ROCKETMQ"):
        resolve_profile("java-4.9.1", serialize_type="XML")
    p = resolve_profile("java-4.9.1", retry_times_when_send_failed=0, client_close_socket_if_timeout=False)
    assert p.retry_times_when_send_failed == 0 and p.rules().close_socket_if_timeout is False
    assert resolve_profile("java-5.3").retry_response_codes == frozenset({17, 14, 1, 16, 204, 205, 2})
