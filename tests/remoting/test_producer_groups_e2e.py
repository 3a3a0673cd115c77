"""The producer over two broker groups, through real sockets: a scripted name server whose route names broker-a and
broker-b (4 queues each), and two scripted brokers speaking the remoting protocol. Which group each attempt went to
is asserted, never how long anything took: a slow answer is one during which the broker moves the strategy's clock
(a `FakeClock`) forward, and the avoidance ends when the test moves it on (docs/remoting.md, "Several broker
groups")."""
from __future__ import annotations

import threading
from collections import Counter

import pytest
from fake_clock import FakeClock
from remoting_scripted_server import CLOSE, Reply, route_for, send_ok_reply

from remoting.codes import RequestCode
from remoting.errors import MQBrokerException
from remoting.headers import GetMaxOffsetRequestHeader
from remoting.message import Message
from remoting.producer import Producer

TOPIC = "ChaosTopic"
BUSY = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 206ms, size of queue: 12"


@pytest.fixture
def groups(broker_factory, namesrv_factory):
    """groups(script_a, script_b=None, profile, **overrides) -> (producer, broker-a, broker-b)."""
    producers: list[Producer] = []

    def make(script_a, script_b=None, profile="java-4.9.1", **overrides):
        a, b = broker_factory(script_a), broker_factory(script_b)
        namesrv = namesrv_factory({TOPIC: route_for({"broker-a": a.addr, "broker-b": b.addr})})
        producer = Producer(namesrv.addr, "chaos_producer", profile, heartbeat=False, **overrides)
        producers.append(producer)
        return producer, a, b

    yield make
    for p in producers:
        p.close()


def send(producer: Producer):
    """The result, or the exception, of one send."""
    try:
        return producer.send(Message(TOPIC, b"m"))
    except MQBrokerException as e:
        return e


def first_brokers(outcomes) -> list[str]:
    return [o.attempts[0].broker_name for o in outcomes]


def all_attempt_brokers(outcomes) -> set[str]:
    return {a.broker_name for o in outcomes for a in o.attempts}


def busy(cmd, n):
    return Reply(2, BUSY)


@pytest.mark.parametrize("profile", ["java-4.9.1", "java-4.9.3", "java-5.3"])
def test_system_busy_on_one_group(groups, profile):
    """broker-a answers SYSTEM_BUSY to every send, broker-b SEND_OK. 4.9.x does not retry code 2: the sends whose
    first attempt went to broker-a (one step per send over 8 queues: exactly 4 of 8) raise it to the application.
    5.3.0 retries it (PR #5845) on broker-b."""
    producer, a, _ = groups(busy, profile=profile)
    outcomes = [send(producer) for _ in range(8)]
    to_a = [o for o in outcomes if o.attempts[0].broker_name == "broker-a"]
    to_b = [o for o in outcomes if o.attempts[0].broker_name == "broker-b"]
    assert all(o.status == "SEND_OK" and len(o.attempts) == 1 for o in to_b)
    if profile == "java-5.3":
        assert to_a and all(o.status == "SEND_OK" and o.broker_name == "broker-b" for o in to_a)
        assert all([(x.broker_name, x.response_code) for x in o.attempts] == [("broker-a", 2), ("broker-b", 0)]
                   for o in to_a)
    else:
        assert len(to_a) == 4
        assert all(isinstance(o, MQBrokerException) and (o.response_code, o.remark) == (2, BUSY)
                   and len(o.attempts) == 1 for o in to_a)
    assert len(a.requests_with(RequestCode.SEND_MESSAGE_V2)) == len(to_a)


@pytest.mark.parametrize("profile, avoided", [("java-4.9.1", 60_000), ("java-5.3", 2000)])
def test_a_slow_answer_turns_sends_away_for_the_computed_duration(groups, profile, avoided):
    """With sendLatencyFaultEnable, a send that took 1200 ms makes broker-a unavailable for 60 s (4.9.1's tables) or
    2 s (5.3's): every send of every thread goes to broker-b until then, and broker-a gets its share again after.
    4.9.1's walk hands broker-a's positions to broker-b's first queue (5 of 8 sends); 5.3's filter spreads them."""
    clock = FakeClock()

    def slow_once(cmd, n):
        if n == 0:
            clock.advance(1200)
        return send_ok_reply(cmd, 0, n)

    producer, a, b = groups(slow_once, profile=profile, send_latency_fault_enable=True)
    producer.fault.clock = clock
    outcomes = [send(producer) for _ in range(8)]
    assert "broker-a" in first_brokers(outcomes) and all(o.status == "SEND_OK" for o in outcomes)
    slow = next(o for o in outcomes if o.attempts[0].broker_name == "broker-a")
    after = outcomes[outcomes.index(slow) + 1:]
    assert all_attempt_brokers(after) <= {"broker-b"}
    item = producer.fault.tolerance.items["broker-a"]
    assert item.current_latency == 1200 and item.start_ms - clock.ms == avoided

    avoiding = [send(producer) for _ in range(8)]
    assert all_attempt_brokers(avoiding) == {"broker-b"}
    spread = Counter(o.queue_id for o in avoiding)
    assert spread == ({0: 5, 1: 1, 2: 1, 3: 1} if profile == "java-4.9.1" else {0: 2, 1: 2, 2: 2, 3: 2})

    seen: list[set[str]] = []

    def many():
        seen.append(all_attempt_brokers([send(producer) for _ in range(10)]))

    threads = [threading.Thread(target=many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen == [{"broker-b"}] * 4

    clock.advance(avoided - 1)
    assert all_attempt_brokers([send(producer) for _ in range(8)]) == {"broker-b"}
    clock.advance(1)
    back = [send(producer) for _ in range(8)]
    assert Counter(first_brokers(back)) == {"broker-a": 4, "broker-b": 4}
    assert len(a.requests_with(RequestCode.SEND_MESSAGE_V2)) == 5


@pytest.mark.parametrize("profile, isolated", [("java-4.9.1", 600_000), ("java-5.3", 10_000)])
def test_system_busy_with_the_latency_switch_on(groups, profile, isolated):
    """The broker error isolates broker-a: 4.9.1 for 600 s, after the application saw code 2 once; 5.3 for 10 s,
    the send itself retried on broker-b (and broker-a marked unreachable, which availability ignores since 5.2.0)."""
    clock = FakeClock()
    producer, a, _ = groups(busy, profile=profile, send_latency_fault_enable=True)
    producer.fault.clock = clock
    outcomes = [send(producer) for _ in range(8)]
    failed = [o for o in outcomes if o.attempts[0].broker_name == "broker-a"]
    assert len(failed) == 1
    if profile == "java-4.9.1":
        assert isinstance(failed[0], MQBrokerException) and failed[0].response_code == 2
    else:
        assert failed[0].status == "SEND_OK" and [x.broker_name for x in failed[0].attempts] == ["broker-a",
                                                                                                 "broker-b"]
        assert not producer.fault.tolerance.is_reachable("broker-a")
    assert producer.fault.tolerance.items["broker-a"].start_ms - clock.ms == isolated
    clock.advance(isolated - 1)
    assert all_attempt_brokers([send(producer) for _ in range(8)]) == {"broker-b"}
    clock.advance(1)
    assert "broker-a" in first_brokers([send(producer) for _ in range(8)])


def test_5_3_detector_marks_a_group_reachable_again(groups):
    """startDetectorEnable (5.1.4+): a remoting failure marks broker-a unreachable instead of isolating it as
    reachable; a detector round asks it GET_MAX_OFFSET (queue 0 of a topic the producer sends to) and its answer
    makes it reachable. The round is run here by the test; the producer's background thread runs one every 3 s."""
    clock = FakeClock()
    producer, a, _ = groups(lambda cmd, n: CLOSE if n == 0 else send_ok_reply(cmd, 0, n), profile="java-5.3",
                            send_latency_fault_enable=True, start_detector_enable=True)
    producer.fault.clock = clock
    outcomes = [send(producer) for _ in range(8)]
    failed = next(o for o in outcomes if o.attempts[0].broker_name == "broker-a")
    assert failed.status == "SEND_OK" and failed.attempts[0].error is not None
    assert not producer.fault.tolerance.is_reachable("broker-a")
    producer.fault.tolerance.detect_one_round(producer.routes.master_addr, producer.detect)
    assert producer.fault.tolerance.is_reachable("broker-a")
    (probe,) = a.requests_with(RequestCode.GET_MAX_OFFSET)
    header = GetMaxOffsetRequestHeader.from_fields(probe.ext_fields)
    assert (header.topic, header.queueId) == (TOPIC, 0)
