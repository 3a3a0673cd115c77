"""The push consumer end to end through real sockets against a real cluster: two consumers of one group split the
queues and re-split at once when one shuts down (NOTIFY_CONSUMER_IDS_CHANGED; the periodic rebalance is set to
10 minutes so only the notification can do it), every message sent is delivered, RECONSUME_LATER comes back from
`%RETRY%<group>` with reconsume_times 1 and its own topic, the offsets committed are queried back after shutdown,
and flow control is logged while the listener blocks. On the real 4.9.1 (`ROCKETMQ_HOME`) and on the emulator."""
from __future__ import annotations

import collections
import logging
import os
import threading
import time

import pytest

from remoting.admin import BrokerAdmin
from remoting.client import RemotingClient
from remoting.consumer import PushConsumer, RemoteBrokerOffsetStore
from remoting.profiles import resolve_profile
from remoting.route import MessageQueue

N_MESSAGES = 120


def _poll(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.1)


def _topic_queues(consumer: PushConsumer, topic: str) -> list[int]:
    return [q.queue_id for q in consumer.assigned_queues() if q.topic == topic]


def check_push_consumer(cluster, caplog) -> None:
    ns, topic, master = cluster.namesrv_addr, cluster.topic, cluster.broker_addrs["master"]
    group = f"g_{os.getpid()}_{time.monotonic_ns() % 10**6}"
    seen: dict[str, list[tuple[str, str, int]]] = collections.defaultdict(list)
    lock = threading.Lock()

    def listener(name):
        def fn(msgs, ctx):
            msg = msgs[0]
            with lock:
                seen[msg.keys].append((name, msg.topic, msg.reconsume_times))
            if msg.keys.endswith("7") and msg.reconsume_times == 0:
                return "RECONSUME_LATER"
            return "CONSUME_SUCCESS"
        return fn

    consumers = []
    try:
        for i in range(2):
            c = PushConsumer(ns, group, consume_from="CONSUME_FROM_FIRST_OFFSET", instance_name=f"c{i}",
                             rebalance_interval_s=600)
            c.subscribe(topic)
            c.register_listener(listener(f"c{i}"))
            c.start()
            consumers.append(c)
            if i == 0:
                # the group's %RETRY% topic is created by c0's first heartbeat, after c0 read its routes; the client
                # reads it again 10 ms later (as Java's scheduled route update). Only a rebalance after that can
                # take its queue, and with a 10-minute period that is the one c1's registration notifies.
                _poll(lambda c=c: c.update_route(c.retry_topic), 10, "the name server has the %RETRY% topic's route")
        c0, c1 = consumers
        _poll(lambda: len(_topic_queues(c0, topic)) == 2 and len(_topic_queues(c1, topic)) == 2, 30,
              "two consumers each own 2 of the 4 queues")
        _poll(lambda: len(_topic_queues(c0, c0.retry_topic) + _topic_queues(c1, c0.retry_topic)) == 1, 30,
              "one consumer owns the %RETRY% topic's queue")
        assert set(_topic_queues(c0, topic)) | set(_topic_queues(c1, topic)) == {0, 1, 2, 3}
        broker_name = c0.assigned_queues()[0].broker_name
        keys = [f"{group}-{i}" for i in range(N_MESSAGES)]
        with cluster.producer(group=f"p_{group}") as producer:
            for key in keys:
                assert producer.send(cluster.message(b"m" * 64, key=key), 3000).status == "SEND_OK"
        _poll(lambda: all(k in seen for k in keys), 60, "every message sent delivered")
        assert {seen[k][0][0] for k in keys} == {"c0", "c1"}, "both consumers consumed"
        later = [k for k in keys if k.endswith("7")]
        _poll(lambda: all(len(seen[k]) >= 2 for k in later), 60, "RECONSUME_LATER messages redelivered")
        for key in later:
            assert seen[key][1][1:] == (topic, 1), f"{key}: redelivered with its topic and reconsume_times 1"
        assert all(len(seen[k]) == 1 for k in keys if k not in later), "no other message delivered twice"
        c0.shutdown()
        _poll(lambda: sorted(_topic_queues(c1, topic)) == [0, 1, 2, 3], 15,
              "the remaining consumer takes every queue on NOTIFY_CONSUMER_IDS_CHANGED")
        c1.shutdown()
        client = RemotingClient(ns)
        try:
            store = RemoteBrokerOffsetStore(client, group, resolve_profile(), lambda _b: master, lambda _t: None)
            committed = [store.fetch(MessageQueue(topic, broker_name, q)) for q in range(4)]
            with BrokerAdmin(client) as admin:
                maxima = [admin.get_max_offset(master, topic, q) for q in range(4)]
        finally:
            client.shutdown()
        assert committed == maxima, "every queue committed up to its end"

        # flow control: a listener that blocks; 10 messages per queue allowed in the process queue
        release = threading.Event()
        blocker = PushConsumer(ns, f"{group}_fc", consume_from="CONSUME_FROM_FIRST_OFFSET", consume_threads=1,
                               pull_threshold_for_queue=10, pull_batch_size=16)
        blocker.subscribe(topic)
        blocker.register_listener(lambda msgs, ctx: release.wait(60) and "CONSUME_SUCCESS")
        consumers.append(blocker)
        with caplog.at_level(logging.WARNING, logger="rmq_chaos.consumer"):
            blocker.start()
            _poll(lambda: any("the cached message count exceeds the threshold 10, so do flow control" in r.message
                              for r in caplog.records), 30, "flow control logged")
        stats = blocker.stats()
        assert stats.queue_flow_control_times >= 1
        assert any(q.flow_control_count >= 1 and q.cached_count > 10 for q in stats.queues.values())
        release.set()
    finally:
        for c in consumers:
            c.shutdown()


@pytest.mark.rmq_program("apache")
@pytest.mark.skipif(not os.environ.get("ROCKETMQ_HOME"),
                    reason="needs an Apache RocketMQ 4.9.1 binary distribution at $ROCKETMQ_HOME")
def test_push_consumer_on_apache(rmq_cluster, caplog) -> None:
    check_push_consumer(rmq_cluster, caplog)


def test_push_consumer_on_emulator(rmq_cluster, caplog) -> None:
    """The emulator: RECONSUME_LATER goes back with CONSUMER_SEND_MSG_BACK (36) and returns through delay level 3
    and `%RETRY%<group>`, as on the real broker."""
    check_push_consumer(rmq_cluster, caplog)
