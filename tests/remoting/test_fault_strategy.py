"""`remoting.fault_strategy` per client version against known answers read in the client sources
(MQFaultStrategy, LatencyFaultToleranceImpl, TopicPublishInfo, ThreadLocalIndex of rocketmq-all-4.9.1, 4.9.3 and
5.3.0; docs/remoting.md, "Several broker groups"). A fake clock: no test waits for time to pass."""
from __future__ import annotations

import threading
from collections import Counter

import pytest
from fake_clock import T0, FakeClock
from remoting_scripted_server import route_for

from remoting.errors import MQBrokerException, MQClientException, RemotingConnectException, RemotingTimeoutException
from remoting.fault_strategy import MQFaultStrategy
from remoting.profiles import resolve_profile
from remoting.route import INT_MAX, INT_MIN, MessageQueue, ThreadLocalIndex, publish_info_from_route

TOPIC = "ChaosTopic"


def two_groups(style: str = "4.9"):
    """Publish info of broker-a (positions 0-3) and broker-b (positions 4-7), 4 queues each."""
    return publish_info_from_route(TOPIC, route_for({"broker-a": "127.0.0.1:1", "broker-b": "127.0.0.1:2"}),
                                   "4.9" if style == "4.9" else "5")


def strategy(style: str, clock: FakeClock, **kw) -> MQFaultStrategy:
    return MQFaultStrategy(style, enabled=True, clock=clock, **kw)


def start_at(info, index: int) -> None:
    """This thread's index, so that its next step gives `index + 1`."""
    info.send_which_queue._local.index = index


def avoided_for(s: MQFaultStrategy, clock: FakeClock, name: str) -> int:
    item = s.tolerance.items[name]
    return item.start_ms - clock.ms


@pytest.mark.parametrize("style, answers", [
    ("4.9", {0: 0, 49: 0, 50: 0, 549: 0, 550: 30_000, 999: 30_000, 1000: 60_000, 1200: 60_000, 2000: 120_000,
             3000: 180_000, 14_999: 180_000, 15_000: 600_000}),
    ("5.3", {0: 0, 549: 0, 550: 2000, 1200: 2000, 1799: 2000, 1800: 5000, 3000: 6000, 5000: 10_000,
             15_000: 30_000}),
])
def test_not_available_duration_tables(style, answers):
    s = strategy(style, FakeClock())
    assert {latency: s.compute_not_available_duration(latency) for latency in answers} == answers


@pytest.mark.parametrize("profile, avoided, isolated", [("java-4.9.1", 60_000, 600_000),
                                                        ("java-4.9.3", 60_000, 600_000),
                                                        ("java-5.3", 2000, 10_000)])
def test_a_send_of_1200_ms_and_an_isolating_failure(profile, avoided, isolated):
    """A broker whose send took 1200 ms is not available for 60 s with 4.9.x's tables, 2 s with 5.3's; an exception
    isolates it for 600 s / 10 s."""
    p = resolve_profile(profile)
    clock = FakeClock()
    s = strategy(p.fault_strategy, clock, latency_max=p.latency_max, not_available_duration=p.not_available_duration)
    s.record("broker-a", 1200, None)
    assert avoided_for(s, clock, "broker-a") == avoided
    clock.advance(avoided - 1)
    assert not s.tolerance.is_available("broker-a")
    clock.advance(1)
    assert s.tolerance.is_available("broker-a")
    s.update_fault_item("broker-b", 3, isolation=True)
    assert avoided_for(s, clock, "broker-b") == isolated


def test_4_9_updates_set_the_start_5_3_only_moves_it_later():
    clock = FakeClock()
    old, new = strategy("4.9", clock), strategy("5.3", clock)
    for s in (old, new):
        s.update_fault_item("broker-a", 40, isolation=True)
        s.record("broker-a", 3, None)  # a fast answer afterwards
    assert old.tolerance.is_available("broker-a")  # 4.9: start = now + 0
    assert avoided_for(new, clock, "broker-a") == 10_000  # 5.3: a duration of 0 changes nothing
    clock.advance(5000)
    new.record("broker-a", 600, None)  # 2 s from now ends before the 5 s left: kept
    assert avoided_for(new, clock, "broker-a") == 5000
    new.record("broker-a", 15_000, None)  # 30 s from now: moved
    assert avoided_for(new, clock, "broker-a") == 30_000


@pytest.mark.parametrize("error, detector, isolated_5_3, reachable_5_3", [
    (None, False, False, True),
    (MQClientException(-1, "The broker[broker-a] not exist"), False, False, True),
    (MQBrokerException(2, "[TIMEOUT_CLEAN_QUEUE]broker busy", "127.0.0.1:1"), False, True, False),
    (RemotingConnectException("127.0.0.1:1"), False, True, True),
    (RemotingConnectException("127.0.0.1:1"), True, True, False),
    (RemotingTimeoutException("wait response timeout"), True, True, False),
])
def test_what_each_ending_tells_the_strategy(error, detector, isolated_5_3, reachable_5_3):
    """sendDefaultImpl's updateFaultItem calls: 4.9 isolates on every exception; 5.3 per exception type."""
    clock = FakeClock()
    old = strategy("4.9", clock)
    new = strategy("5.3", clock, start_detector_enable=detector)
    old.record("broker-a", 7, error)
    new.record("broker-a", 7, error)
    assert avoided_for(old, clock, "broker-a") == (0 if error is None else 600_000)
    assert avoided_for(new, clock, "broker-a") == (10_000 if isolated_5_3 else -T0)  # never set: start 0
    assert new.tolerance.is_reachable("broker-a") is reachable_5_3
    assert old.tolerance.items["broker-a"].current_latency == new.tolerance.items["broker-a"].current_latency == 7


def test_switched_off_it_records_nothing_and_keeps_round_robin():
    clock = FakeClock()
    for style in ("4.9", "5.3"):
        s = MQFaultStrategy(style, clock=clock)
        s.record("broker-a", 20_000, MQBrokerException(2, "busy", "a"))
        assert s.tolerance.items == {}
        info = two_groups(style)
        start_at(info, 7)  # next step: position 0
        assert [s.select_one_message_queue(info, None).queue_id for _ in range(5)] == [0, 1, 2, 3, 0]
        assert [s.select_one_message_queue(info, None).broker_name for _ in range(3)] == ["broker-b"] * 3


@pytest.mark.parametrize("style", ["4.9", "5.3"])
def test_a_retry_avoids_the_last_broker(style):
    """`selectOneMessageQueue(lastBrokerName)` (5.x: the BrokerFilter): one step per candidate until another
    broker's queue; with one broker only, one more step."""
    s = MQFaultStrategy(style)
    info = two_groups(style)
    start_at(info, 7)  # positions 0, 1, 2, 3 are broker-a's: the fifth step, position 4, is broker-b's queue 0
    assert s.select_one_message_queue(info, "broker-a", True) == MessageQueue(TOPIC, "broker-b", 0)
    assert info.send_which_queue._local.index == 12
    single = publish_info_from_route(TOPIC, route_for({"broker-a": "127.0.0.1:1"}), "4.9" if style == "4.9" else "5")
    start_at(single, 0)
    assert s.select_one_message_queue(single, "broker-a") == MessageQueue(TOPIC, "broker-a", 1)
    assert single.send_which_queue._local.index == 5  # four candidates, then one more step


def test_4_9_latency_path_walks_past_an_avoided_group_and_ignores_the_last_broker():
    """4.9.1: the thread's index moves one step per send and a local count walks on, so broker-b's first queue
    takes the sends of broker-a's four positions too (5 of 8); a retry may go back to the last broker."""
    clock = FakeClock()
    s = strategy("4.9", clock)
    info = two_groups("4.9")
    s.record("broker-a", 1200, None)
    start_at(info, 7)
    chosen = [s.select_one_message_queue(info, None) for _ in range(8)]
    assert {q.broker_name for q in chosen} == {"broker-b"}
    assert Counter(q.queue_id for q in chosen) == {0: 5, 1: 1, 2: 1, 3: 1}
    clock.advance(60_000)
    start_at(info, 7)
    assert s.select_one_message_queue(info, "broker-a", True) == MessageQueue(TOPIC, "broker-a", 0)


def test_5_3_latency_path_filters_and_restarts_the_index_on_a_retry(monkeypatch):
    """5.3.0: available and not the last broker, each candidate one step (so broker-b's queues share evenly); a
    retry starts from `Math.abs(random.nextInt(Integer.MAX_VALUE))`."""
    clock = FakeClock()
    s = strategy("5.3", clock)
    info = two_groups("5.3")
    s.record("broker-a", 1200, None)
    start_at(info, 7)
    chosen = [s.select_one_message_queue(info, None) for _ in range(8)]
    assert Counter((q.broker_name, q.queue_id) for q in chosen) == {("broker-b", i): 2 for i in range(4)}
    monkeypatch.setattr("remoting.route.random.randrange", lambda n: 41)  # next step 42: position 2
    clock.advance(2000)
    assert s.select_one_message_queue(info, "broker-b", True) == MessageQueue(TOPIC, "broker-a", 2)
    assert s.select_one_message_queue(info, "broker-a", False) == MessageQueue(TOPIC, "broker-b", 0)


def test_5_3_when_no_group_is_available_reachable_then_any():
    clock = FakeClock()
    s = strategy("5.3", clock)
    info = two_groups("5.3")
    s.record("broker-a", 1200, None)  # slow: unavailable, reachable
    s.record("broker-b", 9, MQBrokerException(2, "busy", "b"))  # unavailable, unreachable
    start_at(info, 5)  # 8 steps find nothing available (index 13); then 14, 15 (broker-b), 16: broker-a's queue 0
    assert s.select_one_message_queue(info, None) == MessageQueue(TOPIC, "broker-a", 0)
    # avoiding broker-a: 8 steps, 8 more (nothing reachable but broker-a), then any queue, broker-a's too: step 33
    assert s.select_one_message_queue(info, "broker-a") == MessageQueue(TOPIC, "broker-a", 1)
    assert info.send_which_queue._local.index == 33
    assert s.tolerance.pick_one_at_least() == "broker-a"  # the only reachable item (unused by the 5.3 producer)


def test_4_9_pick_one_at_least_order():
    """Available first, then lower latency, then earlier start; one of the better half by its own index."""
    clock = FakeClock()
    s = strategy("4.9", clock)
    tolerance = s.tolerance
    assert tolerance.pick_one_at_least() is None
    tolerance.update_fault_item("slow-available", 300, 0)
    tolerance.update_fault_item("fast-available", 100, 0)
    tolerance.update_fault_item("avoided-10", 10, 60_000)
    tolerance.update_fault_item("avoided-5", 5, 60_000)
    tolerance._which_item_worst._local.index = 9  # next: 10, 11, 12 -> 0, 1, 0 of the better half
    assert [tolerance.pick_one_at_least() for _ in range(3)] == ["fast-available", "slow-available",
                                                                 "fast-available"]
    only = strategy("4.9", clock).tolerance
    only.update_fault_item("x", 1, 5)
    only.update_fault_item("y", 1, 7)  # same latency: the earlier start first; half of 2 is 1: always index 0
    assert {only.pick_one_at_least() for _ in range(5)} == {"x"}


def test_4_9_pick_one_at_least_rewrites_the_chosen_entry_of_the_publish_info():
    """Every group avoided: the least bad broker goes onto the queue entry of the next step, with a queue id from
    one more step, and the topic's queue list keeps that entry (4.9.1-4.9.7)."""
    clock = FakeClock()
    s = strategy("4.9", clock)
    info = two_groups("4.9")
    s.record("broker-a", 3000, None)  # 180 s
    s.record("broker-b", 600, None)  # 30 s, lower latency: the better one
    start_at(info, 15)  # the walk starts at 16; the entry: step 17 (position 1, broker-a's queue 1); id: 18 % 4
    mq = s.select_one_message_queue(info, None)
    assert mq == MessageQueue(TOPIC, "broker-b", 2)
    assert info.message_queue_list[1] == mq
    assert Counter(q.broker_name for q in info.message_queue_list) == {"broker-a": 3, "broker-b": 5}
    assert info.write_queue_nums_of("broker-b") == 4 and info.write_queue_nums_of("broker-x") == -1


def test_thread_local_index_start_and_steps(monkeypatch):
    """4.9.x: start `Math.abs(nextInt())`, `Math.abs(++index)`; 5.x: start `nextInt()`, `++index & MAX_VALUE`."""
    monkeypatch.setattr("remoting.route.random.getrandbits", lambda bits: 0xFFFFFFFF)  # nextInt() == -1
    old, new = ThreadLocalIndex("4.9"), ThreadLocalIndex("5")
    assert [old.increment_and_get() for _ in range(3)] == [2, 3, 4]
    assert [new.increment_and_get() for _ in range(3)] == [0, 1, 2]
    old._local.index = new._local.index = INT_MAX
    assert old.increment_and_get() == INT_MIN  # Math.abs(Integer.MIN_VALUE)
    assert new.increment_and_get() == 0
    info = two_groups("4.9")
    start_at(info, INT_MAX)
    assert info.next_position() == 0  # `if (pos < 0) pos = 0`
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(old.increment_and_get()))
    thread.start()
    thread.join()
    assert seen == [2]  # another thread starts from its own random value


def test_5_3_detector_round():
    clock = FakeClock()
    tolerance = strategy("5.3", clock, start_detector_enable=True).tolerance
    tolerance.update_fault_item("broker-a", 5, 10_000, reachable=False)
    tolerance.update_fault_item("broker-b", 5, 10_000, reachable=False)
    probes: list[str] = []

    def detect(addr: str, timeout_ms: int) -> bool:
        probes.append(addr)
        return timeout_ms == 200

    resolve = {"broker-a": "127.0.0.1:1"}.get
    tolerance.detect_one_round(resolve, detect)
    assert probes == ["127.0.0.1:1"] and tolerance.is_reachable("broker-a") and "broker-b" not in tolerance.items
    clock.advance(1999)
    tolerance.detect_one_round(resolve, detect)
    assert probes == ["127.0.0.1:1"]  # at most one probe per broker every 2 s
    clock.advance(1)
    tolerance.detect_one_round(resolve, detect)
    assert len(probes) == 2


def test_profile_switches():
    for name in ("java-4.9.1", "java-4.9.3", "java-5.3"):
        assert resolve_profile(name).send_latency_fault_enable is False
        assert resolve_profile(name, send_latency_fault_enable=True).send_latency_fault_enable is True
    assert resolve_profile("java-5.3").latency_max == (50, 100, 550, 1800, 3000, 5000, 15_000)
    assert resolve_profile("java-4.9.1", not_available_duration=[0, 0, 1, 2, 3, 4, 5]).not_available_duration[2] == 1
    with pytest.raises(ValueError, match="start_detector_enable is a 5.1.4\\+ client setting"):
        resolve_profile("java-4.9.1", start_detector_enable=True)
    with pytest.raises(ValueError, match="same length"):
        resolve_profile("java-5.3", latency_max=[1, 2])
    with pytest.raises(ValueError, match="negative"):
        resolve_profile("java-5.3", not_available_duration=[0, 0, 0, 0, 0, 0, -1])
