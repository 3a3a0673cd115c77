"""`PushConsumer`: Apache RocketMQ 4.9.1's `DefaultMQPushConsumer` (CLUSTERING, consume concurrently) with plain
threads; a facade over the parts the Java client has too:
- `ClientInstance` (`MQClientInstance`): routes, broker addresses, heartbeats, unregistering, and the scheduler
  thread (heartbeat 1 s after start and every 30 s, routes every 30 s, offsets persisted every 5 s);
- `RebalanceImpl` with its `RebalanceService` thread: every 20 s and on NOTIFY_CONSUMER_IDS_CHANGED, queues
  allocated averagely over the group's client ids, the `ProcessQueueTable` of the assigned queues;
- `PullMessageService` with `PullAPIWrapper` and `FlowControl`: one long-polling pull thread per assigned queue,
  to the broker id the broker suggests, held back over 1000 messages / 100 MiB / a span of 2000 per queue;
- `ConsumeMessageConcurrentlyService` with `SendBack`: 20 consume threads, RECONSUME_LATER sent back to
  `%RETRY%<group>`;
- `RemoteBrokerOffsetStore` (`OffsetStore`): the committed offset of a queue is the smallest offset still in its
  `ProcessQueue`."""
from __future__ import annotations

import os
import threading
import time

from remoting.codes import RequestCode
from remoting.consumer.allocation import sort_queues
from remoting.consumer.client_instance import ClientInstance
from remoting.consumer.consume_service import ConsumeMessageConcurrentlyService, Listener
from remoting.consumer.flow_control import FlowControl
from remoting.consumer.offset_store import RemoteBrokerOffsetStore
from remoting.consumer.pull_api import PullAPIWrapper
from remoting.consumer.pull_request import ProcessQueueTable
from remoting.consumer.pull_service import PullMessageService
from remoting.consumer.rebalance import RebalanceImpl
from remoting.consumer.send_back import SendBack
from remoting.consumer.stats import ConsumerCounters, ConsumerStats
from remoting.consumer.subscription import build_subscription, retry_topic
from remoting.errors import MQClientException
from remoting.message_id import local_ip_string
from remoting.profiles import ClientProfile, resolve_profile
from remoting.route import MessageQueue

CONSUME_FROM = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET")


class PushConsumer:
    """See the module docstring. `overrides` are client profile settings (`remoting.profiles.OVERRIDABLE`)."""

    def __init__(self, namesrv_addr: str | list[str], group: str, profile: str | ClientProfile = "java-4.9.1", *,
                 instance_name: str | None = None, client_ip: str | None = None, consume_threads: int = 20,
                 pull_batch_size: int = 32, consume_from: str = "CONSUME_FROM_LAST_OFFSET",
                 pull_threshold_for_queue: int = 1000, pull_threshold_size_for_queue: int = 100,
                 consume_concurrently_max_span: int = 2000, max_reconsume_times: int = 16,
                 rebalance_interval_s: float = 20.0, persist_interval_s: float = 5.0, **overrides) -> None:
        if consume_from not in CONSUME_FROM:
            raise ValueError(f"consume_from {consume_from!r} is not supported; allowed: {', '.join(CONSUME_FROM)}")
        if consume_threads < 1 or pull_batch_size < 1:
            raise ValueError("consume_threads and pull_batch_size must be at least 1")
        self.profile = resolve_profile(profile, **overrides)
        self.group = group
        self.instance_name = instance_name or f"{os.getpid()}#{time.monotonic_ns()}"
        self.client_ip = client_ip or local_ip_string()
        self.consume_from = consume_from
        self.persist_interval_s = persist_interval_s
        self._subscriptions: dict[str, dict] = {}
        self._stop = threading.Event()
        self.instance = ClientInstance(namesrv_addr, self.profile, group=group, client_ip=self.client_ip,
                                       instance_name=self.instance_name, consume_from=consume_from,
                                       subscriptions=self._subscriptions, stop=self._stop)
        self.client = self.instance.client
        self.namesrv = self.instance.namesrv
        self.offsets = RemoteBrokerOffsetStore(self.client, group, self.profile, self.instance.find_broker_addr_in_admin,
                                               self.instance.update_route)
        self.counters = ConsumerCounters(self.client_id)
        self.table = ProcessQueueTable()
        self.consume_service = ConsumeMessageConcurrentlyService(
            group, consume_threads, self.offsets, SendBack(self.instance, group, max_reconsume_times, self.counters),
            self.counters, self._stop)
        flow_control = FlowControl(self.counters, pull_threshold_for_queue, pull_threshold_size_for_queue,
                                   consume_concurrently_max_span)
        self.pull_service = PullMessageService(PullAPIWrapper(self.instance, group, pull_batch_size), flow_control,
                                               self.offsets, self.table, self.consume_service, self._subscriptions,
                                               self._stop)
        self.rebalance = RebalanceImpl(self.instance, self.offsets, self.table, self.pull_service.dispatch,
                                       self.counters, self._stop, consume_from=consume_from,
                                       interval_s=rebalance_interval_s)
        self._threads: list[threading.Thread] = []
        self.started = False

    @property
    def client_id(self) -> str:
        """`buildMQClientId`: `clientIP@instanceName`."""
        return self.instance.client_id

    @property
    def retry_topic(self) -> str:
        return retry_topic(self.group)

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """`subscribe(topic, subExpression)`: TAG expressions (`*` or `a || b`)."""
        self._subscriptions[topic] = build_subscription(topic, expression)

    def register_listener(self, fn: Listener) -> None:
        """`fn(msgs, ctx) -> "CONSUME_SUCCESS" | "RECONSUME_LATER"`; raising or returning None is RECONSUME_LATER."""
        self.consume_service.listener = fn

    def start(self) -> None:
        if self.started:
            raise MQClientException(-1, "The PushConsumer service state not OK, maybe started once")
        if self.consume_service.listener is None:
            raise MQClientException(-1, "messageListener is null")
        if not self._subscriptions:
            raise MQClientException(-1, "subscription is empty")
        self.started = True
        self.subscribe(self.retry_topic, "*")  # copySubscription: CLUSTERING subscribes the group's retry topic
        self.client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self.rebalance.on_notify_ids_changed)
        self.consume_service.start()
        for topic in list(self._subscriptions):
            self.instance.update_route(topic)
        self.instance.send_heartbeat()
        self._threads.append(self.instance.start_scheduled_tasks(self._persist_offsets, self.persist_interval_s))
        self._threads.append(self.rebalance.start())
        self.rebalance.wakeup()

    def shutdown(self) -> None:
        """Stop pulling and consuming, persist the offsets once more, unregister from every broker, close."""
        if not self.started or self._stop.is_set():
            return
        self._stop.set()
        self.rebalance.wakeup()
        self.consume_service.shutdown()
        self._persist_offsets()
        self.instance.unregister()
        self.table.drop_all()
        self.consume_service.send_back.close()
        self.instance.close()
        for thread in self._threads + [r.thread for r in self.table.requests() if r.thread is not None]:
            if thread is not threading.current_thread():
                thread.join(timeout=5)

    def __enter__(self) -> PushConsumer:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def update_route(self, topic: str) -> bool:
        """`updateTopicRouteInfoFromNameServer(topic)`: False when the name server has no route (or is not reached)."""
        return self.instance.update_route(topic)

    def stats(self) -> ConsumerStats:
        """Per assigned queue: cached count / size / span, committed offset, pulls, flow-control counters."""
        committed = self.offsets.snapshot()
        queues = {req.mq: req.stats(committed.get(req.mq, -1)) for req in self.table.requests()}
        return self.counters.snapshot(queues)

    def assigned_queues(self) -> list[MessageQueue]:
        return sort_queues(self.table.queues())

    def _persist_offsets(self) -> None:
        """`persistConsumerOffset`: the offsets of the assigned queues to the brokers."""
        self.offsets.persist_all(self.table.queues())
