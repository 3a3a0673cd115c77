"""`PushConsumer`: Apache RocketMQ 4.9.1's `DefaultMQPushConsumer` (CLUSTERING, consume concurrently) with plain
threads. What runs:
- a scheduler thread: heartbeat to every broker address of the routes (master and slave) at 1 s and every 30 s,
  with the consumer data (group, CONSUME_PASSIVELY, CLUSTERING, consume-from, the subscriptions including the
  automatic `%RETRY%<group>` one) and the inner producer group; route refresh every 30 s; offsets persisted every
  5 s (`remoting.offset_store`);
- a rebalance thread: every 20 s and at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED (40) on one of the
  client's connections; GET_CONSUMER_LIST_BY_GROUP (38) gives the client ids, `AllocateMessageQueueAveragely`
  the queues (`remoting.rebalance`); a new queue starts where `computePullFromWhere` says;
- one pull thread per assigned message queue (Java has one PullMessageService thread and async callbacks; a
  blocking long poll per queue is the same traffic): PULL_MESSAGE with sysFlag commitOffset|suspend (no
  subscription flag: 4.9.1's `postSubscriptionWhenPull` is false, the broker uses the heartbeat's), suspend 15 s,
  call timeout 30 s, 32 messages; to the broker id the previous answer suggested (`findBrokerAddressInSubscribe`:
  another id when that one is not in the route), without the commit flag when it is a slave; FOUND / NO_NEW_MSG /
  NO_MATCHED_MSG / OFFSET_ILLEGAL as `DefaultMQPushConsumerImpl.pullMessage`, an exception retries after 3 s;
  flow control per queue (1000 messages, 100 MiB, span 2000: the pull waits 50 ms, logged every 1000th time in
  the Java client's words on the `rmq_chaos.consumer` logger);
- a consume pool of 20 threads, one message per consume request (`ConsumeMessageConcurrentlyService`):
  RECONSUME_LATER (or a raising listener, or None) sends the message back (CONSUMER_SEND_MSG_BACK to the master);
  when that fails the message goes to `%RETRY%<group>` through the inner producer, and when that fails too it is
  consumed again here after 5 s. After each consume the committed offset is the smallest offset still cached
  (`remoting.process_queue`)."""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from remoting import fastjson
from remoting.admin import heartbeat_body
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, make_request
from remoting.consumer import PULL_STATUS_BY_CODE
from remoting.consumer_headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
)
from remoting.errors import MQBrokerException, MQClientException, RemotingCommandException, RemotingError
from remoting.headers import (
    MASTER_ID,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUSPEND,
    GetMaxOffsetRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    UnregisterClientRequestHeader,
)
from remoting.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_OFFSET,
    PROPERTY_MIN_OFFSET,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    Message,
)
from remoting.message_id import local_ip_string
from remoting.namesrv import NameServerClient
from remoting.offset_store import NOT_FOUND, RemoteBrokerOffsetStore
from remoting.process_queue import ProcessQueue
from remoting.profiles import ClientProfile, resolve_profile
from remoting.rebalance import allocate_averagely, sort_queues, subscribe_queues
from remoting.route import MessageQueue, TopicRouteData
from remoting.stored import MessageExt, decode_stored_messages

log = logging.getLogger("rmq_chaos.consumer")

CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"
CONSUME_FROM = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET")
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIME = "CONSUME_START_TIME"

PULL_DELAY_WHEN_EXCEPTION_S = 3.0  # pullTimeDelayMillsWhenException
PULL_DELAY_WHEN_FLOW_CONTROL_S = 0.05  # PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL
BROKER_SUSPEND_MAX_TIME_MS = 15_000  # BROKER_SUSPEND_MAX_TIME_MILLIS
CONSUMER_TIMEOUT_WHEN_SUSPEND_MS = 30_000  # CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND
OFFSET_ILLEGAL_FIX_DELAY_S = 10.0  # the OFFSET_ILLEGAL branch's executeTaskLater(..., 10000)
CONSUME_AGAIN_DELAY_S = 5.0  # submitConsumeRequestLater
SEND_BACK_TIMEOUT_MS = 5000
CLIENT_TIMEOUT_MS = 3000  # getConsumerIdListByGroup, unregisterClient, heartbeat
JAVA_INT_MAX = 2**31 - 1


def mq_str(mq: MessageQueue) -> str:
    """`MessageQueue.toString()`."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


@dataclass(slots=True)
class ConsumeContext:
    """`ConsumeConcurrentlyContext` plus where the messages came from: `broker_id` the pull went to, `pulled_ns`
    (time.time_ns()) when its answer came. A listener may set `delay_level_when_next_consume` (0: the broker
    decides, 3 + reconsume times) and `ack_index`."""

    message_queue: MessageQueue
    broker_id: int
    pulled_ns: int
    delay_level_when_next_consume: int = 0
    ack_index: int = JAVA_INT_MAX


@dataclass(slots=True)
class QueueStats:
    """One assigned message queue (`stats()`)."""

    cached_count: int
    cached_size: int
    span: int
    committed_offset: int
    next_offset: int
    broker_id: int
    pulls: int
    pull_errors: int
    flow_control_count: int
    flow_control_size: int
    flow_control_span: int


@dataclass(slots=True)
class ConsumerStats:
    client_id: str
    queues: dict[MessageQueue, QueueStats] = field(default_factory=dict)
    queue_flow_control_times: int = 0
    queue_max_span_flow_control_times: int = 0
    consumed_ok: int = 0
    consumed_later: int = 0
    sent_back: int = 0
    sent_back_by_producer: int = 0
    consume_again_local: int = 0
    rebalances: int = 0


class PullRequest:
    """One assigned queue: its process queue, the next offset to pull and its counters."""

    __slots__ = ("group", "mq", "pq", "next_offset", "broker_id", "pulls", "pull_errors", "fc_count", "fc_size",
                 "fc_span", "thread")

    def __init__(self, group: str, mq: MessageQueue, next_offset: int) -> None:
        self.group = group
        self.mq = mq
        self.pq = ProcessQueue()
        self.next_offset = next_offset
        self.broker_id = MASTER_ID
        self.pulls = 0
        self.pull_errors = 0
        self.fc_count = 0
        self.fc_size = 0
        self.fc_span = 0
        self.thread: threading.Thread | None = None

    def __str__(self) -> str:
        return f"PullRequest [consumerGroup={self.group}, messageQueue={mq_str(self.mq)}, nextOffset={self.next_offset}]"


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
        self.consume_threads = consume_threads
        self.pull_batch_size = pull_batch_size
        self.consume_from = consume_from
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.max_reconsume_times = max_reconsume_times
        self.rebalance_interval_s = rebalance_interval_s
        self.persist_interval_s = persist_interval_s
        self.client = RemotingClient(namesrv_addr, rules=self.profile.rules())
        self.namesrv = NameServerClient(self.client, version=self.profile.version, language=self.profile.language,
                                        serialize_type=self.profile.serialize_type)
        self.offsets = RemoteBrokerOffsetStore(self.client, group, self.profile, self.find_broker_addr_in_admin,
                                               self.update_route)
        self._listener = None
        self._subscriptions: dict[str, dict] = {}
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._topic_queues: dict[str, set[MessageQueue]] = {}
        self._pull_from: dict[MessageQueue, int] = {}
        self._requests: dict[MessageQueue, PullRequest] = {}
        self._lock = threading.RLock()
        self._rebalance_lock = threading.Lock()
        self._stop = threading.Event()
        self._rebalance_now = threading.Event()
        self._threads: list[threading.Thread] = []
        self._executor: ThreadPoolExecutor | None = None
        self._inner_producer = None
        self._stats = ConsumerStats(self.client_id)
        self._stats_lock = threading.Lock()
        self.started = False

    @property
    def client_id(self) -> str:
        """`buildMQClientId`: `clientIP@instanceName`."""
        return f"{self.client_ip}@{self.instance_name}"

    @property
    def retry_topic(self) -> str:
        return RETRY_GROUP_TOPIC_PREFIX + self.group

    # -- setup --------------------------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """`subscribe(topic, subExpression)`: TAG expressions (`*` or `a || b`)."""
        expression = (expression or "*").strip() or "*"
        tags = [] if expression == "*" else sorted({t.strip() for t in expression.split("||") if t.strip()})
        self._subscriptions[topic] = {
            "classFilterMode": False, "codeSet": [hash_tag(t) for t in tags], "expressionType": "TAG",
            "subString": expression, "subVersion": int(time.time() * 1000), "tagsSet": tags, "topic": topic}

    def register_listener(self, fn) -> None:
        """`fn(msgs, ctx) -> "CONSUME_SUCCESS" | "RECONSUME_LATER"`; raising or returning None is RECONSUME_LATER."""
        self._listener = fn

    def start(self) -> None:
        if self.started:
            raise MQClientException(-1, "The PushConsumer service state not OK, maybe started once")
        if self._listener is None:
            raise MQClientException(-1, "messageListener is null")
        if not self._subscriptions:
            raise MQClientException(-1, "subscription is empty")
        self.started = True
        self.subscribe(self.retry_topic, "*")  # copySubscription: CLUSTERING subscribes the group's retry topic
        self.client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify_ids_changed)
        self._executor = ThreadPoolExecutor(self.consume_threads, thread_name_prefix=f"ConsumeMessageThread_{self.group}")
        for topic in list(self._subscriptions):
            self.update_route(topic)
        self.send_heartbeat()
        for target, name in ((self._schedule_loop, "MQClientFactoryScheduledThread"),
                             (self._rebalance_loop, "RebalanceService")):
            thread = threading.Thread(target=target, name=f"{name}-{self.group}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._rebalance_now.set()

    def shutdown(self) -> None:
        """Stop pulling and consuming, persist the offsets once more, unregister from every broker, close."""
        if not self.started or self._stop.is_set():
            return
        self._stop.set()
        self._rebalance_now.set()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            mqs = set(self._requests)
        self.offsets.persist_all(mqs)
        for addr in self._all_broker_addrs():
            header = UnregisterClientRequestHeader(self.client_id, None, self.group)
            try:
                response = self.client.invoke_sync(addr, self._request(RequestCode.UNREGISTER_CLIENT,
                                                                       header.to_fields()), CLIENT_TIMEOUT_MS)
                if response.code != ResponseCode.SUCCESS:
                    log.warning("unregister client[Consumer: %s] from broker %s: code %s %s", self.group, addr,
                                response.code, response.remark)
            except RemotingError as e:
                log.warning("unregister client[Consumer: %s] from broker %s exception: %s", self.group, addr, e)
        with self._lock:
            for req in self._requests.values():
                req.pq.dropped = True
        if self._inner_producer is not None:
            self._inner_producer.close()
        self.client.shutdown()
        for thread in self._threads + [r.thread for r in list(self._requests.values()) if r.thread is not None]:
            if thread is not threading.current_thread():
                thread.join(timeout=5)

    def __enter__(self) -> PushConsumer:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- routes and addresses -----------------------------------------------------------------------------------

    def update_route(self, topic: str) -> bool:
        """`updateTopicRouteInfoFromNameServer(topic)`: False when the name server has no route (or is not reached)."""
        try:
            route = self.namesrv.get_route(topic)
        except (MQClientException, RemotingError) as e:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("updateTopicRouteInfoFromNameServer Exception, %s: %s", topic, e)
            return False
        with self._lock:
            self._routes[topic] = route
            for bd in route.broker_datas:
                self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
            if topic in self._subscriptions:
                self._topic_queues[topic] = subscribe_queues(topic, route)
        return True

    def _all_broker_addrs(self) -> list[str]:
        with self._lock:
            return [addr for addrs in self._broker_addrs.values() for _, addr in sorted(addrs.items())]

    def find_broker_addr_in_subscribe(self, broker_name: str, broker_id: int,
                                      only_this: bool = False) -> tuple[str, int] | None:
        """`findBrokerAddressInSubscribe`: the address of `broker_id`, else of `broker_id + 1` (for a slave id),
        else (unless `only_this`) the first address of the broker (HashMap order: the lowest id)."""
        addrs = self._broker_addrs.get(broker_name)
        if not addrs:
            return None
        addr = addrs.get(broker_id)
        if addr is not None:
            return addr, broker_id
        if broker_id != MASTER_ID and (addr := addrs.get(broker_id + 1)) is not None:
            return addr, broker_id + 1
        if only_this:
            return None
        first = min(addrs)
        return addrs[first], first

    def find_broker_addr_in_admin(self, broker_name: str) -> str | None:
        """`findBrokerAddressInAdmin`: the first address (the master while it is in the route)."""
        addrs = self._broker_addrs.get(broker_name)
        return addrs[min(addrs)] if addrs else None

    def find_broker_addr_in_publish(self, broker_name: str) -> str | None:
        addrs = self._broker_addrs.get(broker_name)
        return addrs.get(MASTER_ID) if addrs else None

    # -- heartbeat, scheduling ----------------------------------------------------------------------------------

    def consumer_data(self) -> dict:
        """`ConsumerData` as fastjson writes it (properties in name order)."""
        return {"consumeFromWhere": self.consume_from, "consumeType": "CONSUME_PASSIVELY",
                "groupName": self.group, "messageModel": "CLUSTERING",
                "subscriptionDataSet": list(self._subscriptions.values()), "unitMode": False}

    def send_heartbeat(self) -> int:
        """`sendHeartbeatToAllBroker`: to every address (consumers heartbeat slaves too); returns how many answered
        SUCCESS."""
        body = heartbeat_body(self.client_id, [CLIENT_INNER_PRODUCER_GROUP], [self.consumer_data()])
        ok = 0
        for addr in self._all_broker_addrs():
            try:
                response = self.client.invoke_sync(addr, self._request(RequestCode.HEART_BEAT, None, body),
                                                   CLIENT_TIMEOUT_MS)
                if response.code == ResponseCode.SUCCESS:
                    ok += 1
                else:
                    log.warning("send heart beat to broker %s: code %s %s", addr, response.code, response.remark)
            except RemotingError as e:
                log.info("send heart beat to broker[%s] exception: %s", addr, e)
        return ok

    def _schedule_loop(self) -> None:
        now = time.monotonic()
        due = {"heartbeat": now + 1.0, "route": now + 0.01, "persist": now + 10.0}
        period = {"heartbeat": self.profile.heartbeat_broker_interval_ms / 1000.0,
                  "route": self.profile.poll_name_server_interval_ms / 1000.0, "persist": self.persist_interval_s}
        while not self._stop.is_set():
            name = min(due, key=due.get)
            if self._stop.wait(max(due[name] - time.monotonic(), 0.0)):
                return
            due[name] = time.monotonic() + period[name]
            try:
                if name == "heartbeat":
                    self.send_heartbeat()
                elif name == "route":
                    for topic in list(self._subscriptions):
                        self.update_route(topic)
                else:
                    with self._lock:
                        mqs = set(self._requests)
                    self.offsets.persist_all(mqs)
            except Exception:  # noqa: BLE001 - a scheduled task's failure is logged, as ScheduledExecutorService's
                log.exception("scheduled %s failed", name)

    # -- rebalance ----------------------------------------------------------------------------------------------

    def _on_notify_ids_changed(self, _conn, request: RemotingCommand) -> None:
        log.info("receive broker's notification[%s], the consumer group: %s changed, rebalance immediately",
                 _conn.addr, request.field("consumerGroup"))
        self._rebalance_now.set()
        return None

    def _rebalance_loop(self) -> None:
        while not self._stop.is_set():
            self._rebalance_now.wait(self.rebalance_interval_s)
            self._rebalance_now.clear()
            if self._stop.is_set():
                return
            try:
                self.do_rebalance()
            except Exception:  # noqa: BLE001
                log.exception("doRebalance failed, %s", self.group)

    def find_consumer_ids(self, topic: str) -> list[str] | None:
        """`findConsumerIdList`: GET_CONSUMER_LIST_BY_GROUP to a broker of the topic (its master, else a slave)."""
        route = self._routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = random.choice(route.broker_datas)
        addrs = self._broker_addrs.get(bd.broker_name) or bd.broker_addrs
        if not addrs:
            return None
        addr = addrs.get(MASTER_ID) or random.choice(list(addrs.values()))
        header = GetConsumerListByGroupRequestHeader(self.group)
        try:
            response = self.client.invoke_sync(addr, self._request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                                                   header.to_fields()), CLIENT_TIMEOUT_MS)
        except RemotingError as e:
            log.warning("getConsumerIdListByGroup exception, %s %s: %s", addr, self.group, e)
            return None
        if response.code != ResponseCode.SUCCESS or not response.body:
            log.warning("getConsumerIdListByGroup %s %s: code %s %s", addr, self.group, response.code,
                        response.remark)
            return None
        try:
            return list(fastjson.loads(response.body).get("consumerIdList") or [])
        except (ValueError, AttributeError, UnicodeDecodeError):
            raise RemotingCommandException("consumer list body does not parse") from None

    def do_rebalance(self) -> None:
        """`RebalanceImpl.doRebalance` for every subscribed topic (CLUSTERING)."""
        with self._rebalance_lock:
            with self._stats_lock:
                self._stats.rebalances += 1
            for topic in list(self._subscriptions):
                mq_set = self._topic_queues.get(topic)
                if mq_set is None:
                    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                        log.warning("doRebalance, %s, but the topic[%s] not exist.", self.group, topic)
                    continue
                cids = self.find_consumer_ids(topic)
                if not cids:
                    log.warning("doRebalance, %s %s, get consumer id list failed", self.group, topic)
                    continue
                mq_all = sort_queues(mq_set)
                cid_all = sorted(cids)
                allocated = set(allocate_averagely(self.group, self.client_id, mq_all, cid_all))
                if self._update_process_queues(topic, allocated):
                    log.info("rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=%s, topic=%s, "
                             "clientId=%s, mqAllSize=%d, cidAllSize=%d, rebalanceResultSize=%d, rebalanceResultSet=%s",
                             self.group, topic, self.client_id, len(mq_all), len(cid_all), len(allocated),
                             sorted(allocated, key=lambda q: (q.broker_name, q.queue_id)))
                    self.send_heartbeat()  # RebalancePushImpl.messageQueueChanged

    def _update_process_queues(self, topic: str, mq_set: set[MessageQueue]) -> bool:
        changed = False
        with self._lock:
            current = {mq: req for mq, req in self._requests.items() if mq.topic == topic}
        for mq, req in current.items():
            if mq not in mq_set:
                req.pq.dropped = True
                self.offsets.persist(mq)  # removeUnnecessaryMessageQueue
                self.offsets.remove(mq)
                with self._lock:
                    if self._requests.get(mq) is req:
                        del self._requests[mq]
                changed = True
                log.info("doRebalance, %s, remove unnecessary mq, %s", self.group, mq_str(mq))
        for mq in sorted(mq_set - set(current), key=lambda q: (q.broker_name, q.queue_id)):
            if self._stop.is_set():
                break
            self.offsets.remove(mq)  # removeDirtyOffset
            next_offset = self.compute_pull_from_where(mq)
            if next_offset < 0:
                log.warning("doRebalance, %s, add new mq failed, %s", self.group, mq_str(mq))
                continue
            log.info("doRebalance, %s, add a new mq, %s", self.group, mq_str(mq))
            req = PullRequest(self.group, mq, next_offset)
            with self._lock:
                self._requests[mq] = req
            req.thread = threading.Thread(target=self._pull_loop, args=(req,), daemon=True,
                                          name=f"PullMessageService-{mq.topic}-{mq.broker_name}-{mq.queue_id}")
            req.thread.start()
            changed = True
        return changed

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """`RebalancePushImpl.computePullFromWhere` (4.9.1): the broker's offset for the group, else the queue's max
        offset (CONSUME_FROM_LAST_OFFSET; 0 for a retry topic) or 0 (CONSUME_FROM_FIRST_OFFSET); -1: not now."""
        last = self.offsets.read(mq, from_store=True)
        if last >= 0:
            return last
        if last != NOT_FOUND:
            return -1
        if self.consume_from == "CONSUME_FROM_FIRST_OFFSET" or mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return 0
        try:
            return self.max_offset(mq)
        except (RemotingError, MQClientException) as e:
            log.warning("compute consume offset exception, mq=%s: %s", mq_str(mq), e)
            return -1

    def max_offset(self, mq: MessageQueue) -> int:
        """GET_MAX_OFFSET to the queue's master (`findBrokerAddressInPublish`)."""
        addr = self.find_broker_addr_in_publish(mq.broker_name)
        if addr is None:
            self.update_route(mq.topic)
            addr = self.find_broker_addr_in_publish(mq.broker_name)
        if addr is None:
            raise MQClientException(-1, f"The broker[{mq.broker_name}] not exist")
        fields = GetMaxOffsetRequestHeader(mq.topic, mq.queue_id).to_fields()
        response = self.client.invoke_sync(addr, self._request(RequestCode.GET_MAX_OFFSET, fields), CLIENT_TIMEOUT_MS)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        return int(OffsetResponseHeader.from_fields(response.ext_fields).offset or 0)

    # -- pulling ------------------------------------------------------------------------------------------------

    def _pull_loop(self, req: PullRequest) -> None:
        while not self._stop.is_set() and not req.pq.dropped:
            try:
                delay = self._pull_once(req)
            except Exception:  # noqa: BLE001 - never let a pull thread die silently
                log.exception("pull of %s failed", req)
                delay = PULL_DELAY_WHEN_EXCEPTION_S
            if delay and self._stop.wait(delay):
                return

    def _flow_controlled(self, req: PullRequest) -> bool:
        pq = req.pq
        count = pq.count
        size_mib = pq.size // (1024 * 1024)
        kind = None
        if count > self.pull_threshold_for_queue:
            kind = "count"
            req.fc_count += 1
        elif size_mib > self.pull_threshold_size_for_queue:
            kind = "size"
            req.fc_size += 1
        elif pq.max_span > self.consume_concurrently_max_span:
            kind = "span"
            req.fc_span += 1
        if kind is None:
            return False
        with self._stats_lock:
            if kind == "span":
                times = self._stats.queue_max_span_flow_control_times
                self._stats.queue_max_span_flow_control_times = times + 1
            else:
                times = self._stats.queue_flow_control_times
                self._stats.queue_flow_control_times = times + 1
        if times % 1000 == 0:
            first, last = pq.first_last()
            if kind == "count":
                log.warning("the cached message count exceeds the threshold %s, so do flow control, minOffset=%s, "
                            "maxOffset=%s, count=%s, size=%s MiB, pullRequest=%s, flowControlTimes=%s",
                            self.pull_threshold_for_queue, first, last, count, size_mib, req, times + 1)
            elif kind == "size":
                log.warning("the cached message size exceeds the threshold %s MiB, so do flow control, minOffset=%s, "
                            "maxOffset=%s, count=%s, size=%s MiB, pullRequest=%s, flowControlTimes=%s",
                            self.pull_threshold_size_for_queue, first, last, count, size_mib, req, times + 1)
            else:
                log.warning("the queue's messages, span too long, so do flow control, minOffset=%s, maxOffset=%s, "
                            "maxSpan=%s, pullRequest=%s, flowControlTimes=%s", first, last, pq.max_span, req,
                            times + 1)
        return True

    def _pull_once(self, req: PullRequest) -> float:
        """One round of `pullMessage` and its callback; returns the delay before the next round (seconds)."""
        pq, mq = req.pq, req.mq
        pq.last_pull_timestamp = time.time()
        if self._flow_controlled(req):
            return PULL_DELAY_WHEN_FLOW_CONTROL_S
        sub = self._subscriptions.get(mq.topic)
        if sub is None:
            log.warning("find the consumer's subscription failed, %s", req)
            return PULL_DELAY_WHEN_EXCEPTION_S
        commit_offset = self.offsets.read(mq, from_store=False)
        found = self.find_broker_addr_in_subscribe(mq.broker_name, self._pull_from.get(mq, MASTER_ID))
        if found is None:
            self.update_route(mq.topic)
            found = self.find_broker_addr_in_subscribe(mq.broker_name, self._pull_from.get(mq, MASTER_ID))
        if found is None:
            log.warning("execute the pull request exception: The broker[%s] not exist", mq.broker_name)
            req.pull_errors += 1
            return PULL_DELAY_WHEN_EXCEPTION_S
        addr, broker_id = found
        sys_flag = PULL_FLAG_SUSPEND
        if commit_offset > 0 and broker_id == MASTER_ID:  # a slave pull clears the commit flag
            sys_flag |= PULL_FLAG_COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumerGroup=self.group, topic=mq.topic, queueId=mq.queue_id, queueOffset=req.next_offset,
            maxMsgNums=self.pull_batch_size, sysFlag=sys_flag, commitOffset=commit_offset,
            suspendTimeoutMillis=BROKER_SUSPEND_MAX_TIME_MS, subscription=None, subVersion=sub["subVersion"],
            expressionType=sub["expressionType"])
        req.broker_id = broker_id
        try:
            response = self.client.invoke_sync(addr, self._request(RequestCode.PULL_MESSAGE, header.to_fields()),
                                               CONSUMER_TIMEOUT_WHEN_SUSPEND_MS)
            status = PULL_STATUS_BY_CODE.get(response.code)
            if status is None:
                raise MQBrokerException(response.code, response.remark, addr)
            rh = PullMessageResponseHeader.from_fields(response.ext_fields)
            msgs = decode_stored_messages(response.body) if status == "FOUND" and response.body else []
        except (RemotingError, MQClientException) as e:
            req.pull_errors += 1
            if self._stop.is_set():
                return 0.0
            if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("execute the pull request exception, %s: %s", req, e)
            return PULL_DELAY_WHEN_EXCEPTION_S
        pulled_ns = time.time_ns()
        req.pulls += 1
        self._pull_from[mq] = rh.suggestWhichBrokerId or 0  # updatePullFromWhichNode
        if self._stop.is_set() or pq.dropped:
            return 0.0
        if status == "FOUND":
            req.next_offset = rh.nextBeginOffset or 0
            msgs = self._filter(msgs, sub, rh)
            if msgs:
                pq.put(msgs)
                self._submit(msgs, pq, ConsumeContext(mq, broker_id, pulled_ns))
            return 0.0
        if status in ("NO_NEW_MSG", "NO_MATCHED_MSG"):
            req.next_offset = rh.nextBeginOffset or 0
            if pq.count == 0:  # correctTagsOffset
                self.offsets.update(mq, req.next_offset, True)
            return 0.0
        # OFFSET_ILLEGAL
        log.warning("the pull request offset illegal, %s %s", req, response.remark)
        req.next_offset = rh.nextBeginOffset or 0
        pq.dropped = True
        if not self._stop.wait(OFFSET_ILLEGAL_FIX_DELAY_S):
            self.offsets.update(mq, req.next_offset, False)
            self.offsets.persist(mq)
            with self._lock:
                if self._requests.get(mq) is req:
                    del self._requests[mq]  # the next rebalance adds it again from the stored offset
            log.warning("fix the pull request offset, %s", req)
        return 0.0

    @staticmethod
    def _filter(msgs: list[MessageExt], sub: dict, rh: PullMessageResponseHeader) -> list[MessageExt]:
        """`processPullResult`: the client-side tag filter, and MIN_OFFSET / MAX_OFFSET on every message."""
        tags = sub["tagsSet"]
        if tags and not sub["classFilterMode"]:
            msgs = [m for m in msgs if m.tags in tags]
        for m in msgs:
            m.properties[PROPERTY_MIN_OFFSET] = str(rh.minOffset or 0)
            m.properties[PROPERTY_MAX_OFFSET] = str(rh.maxOffset or 0)
        return msgs

    # -- consuming ----------------------------------------------------------------------------------------------

    def _submit(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        executor = self._executor
        if executor is None or self._stop.is_set():
            return
        try:
            for msg in msgs:  # consumeMessageBatchMaxSize 1
                executor.submit(self._consume, [msg], pq, ConsumeContext(ctx.message_queue, ctx.broker_id,
                                                                         ctx.pulled_ns))
        except RuntimeError:  # shut down meanwhile
            pass

    def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        """`ConsumeRequest.run`."""
        if pq.dropped:
            log.info("the message queue not be able to consume, because it's dropped. group=%s %s", self.group,
                     mq_str(ctx.message_queue))
            return
        retry_topic = self.retry_topic
        now_ms = str(int(time.time() * 1000))
        for msg in msgs:  # resetRetryAndNamespace
            original = msg.properties.get(PROPERTY_RETRY_TOPIC)
            if original and msg.topic == retry_topic:
                msg.topic = original
            msg.properties[PROPERTY_CONSUME_START_TIME] = now_ms
        status = None
        try:
            status = self._listener(msgs, ctx)
        except Exception as e:  # noqa: BLE001 - the listener's exception means RECONSUME_LATER, as Java
            log.warning("consumeMessage exception: %s Group: %s Msgs: %s MQ: %s", e, self.group, len(msgs),
                        mq_str(ctx.message_queue))
        status = getattr(status, "value", status)
        if status not in (CONSUME_SUCCESS, RECONSUME_LATER):
            if status is not None:
                log.warning("consumeMessage returned %r, Group: %s", status, self.group)
            else:
                log.warning("consumeMessage return null, Group: %s Msgs: %s MQ: %s", self.group, len(msgs),
                            mq_str(ctx.message_queue))
            status = RECONSUME_LATER
        if pq.dropped:
            log.warning("processQueue is dropped without process consume result. messageQueue=%s, msgs=%s",
                        mq_str(ctx.message_queue), len(msgs))
            return
        self._process_consume_result(status, ctx, msgs, pq)

    def _process_consume_result(self, status: str, ctx: ConsumeContext, msgs: list[MessageExt],
                                pq: ProcessQueue) -> None:
        if status == CONSUME_SUCCESS:
            ack = min(ctx.ack_index, len(msgs) - 1)
            with self._stats_lock:
                self._stats.consumed_ok += ack + 1
        else:
            ack = -1
            with self._stats_lock:
                self._stats.consumed_later += len(msgs)
        failed: list[MessageExt] = []
        for msg in msgs[ack + 1:]:
            if not self._send_message_back(msg, ctx):
                msg.reconsume_times += 1
                failed.append(msg)
        done = [m for m in msgs if all(m is not f for f in failed)]
        if failed:
            with self._stats_lock:
                self._stats.consume_again_local += len(failed)
            self._consume_later(failed, pq, ctx)
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(ctx.message_queue, offset, True)

    def _consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        """`submitConsumeRequestLater`: the same messages again after 5 s, here."""
        def later() -> None:
            if not self._stop.wait(CONSUME_AGAIN_DELAY_S):
                self._submit(msgs, pq, ctx)
        threading.Thread(target=later, daemon=True, name="ConsumeAgainLater").start()

    def _send_message_back(self, msg: MessageExt, ctx: ConsumeContext) -> bool:
        """`sendMessageBack`: CONSUMER_SEND_MSG_BACK to the queue's master; when it fails, the inner producer sends a
        copy to the retry topic (delay level 3 + reconsume times); False when both failed."""
        origin_msg_id = msg.uniq_key or msg.msg_id  # MessageClientExt.getMsgId
        try:
            addr = self.find_broker_addr_in_publish(ctx.message_queue.broker_name)
            if addr is None:
                raise MQClientException(-1, f"The broker[{ctx.message_queue.broker_name}] not exist")
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commitlog_offset, group=self.group, delayLevel=ctx.delay_level_when_next_consume,
                originMsgId=origin_msg_id, originTopic=msg.topic, unitMode=False,
                maxReconsumeTimes=self.max_reconsume_times)
            response = self.client.invoke_sync(addr, self._request(RequestCode.CONSUMER_SEND_MSG_BACK,
                                                                   header.to_fields()), SEND_BACK_TIMEOUT_MS)
            if response.code != ResponseCode.SUCCESS:
                raise MQBrokerException(response.code, response.remark, addr)
            with self._stats_lock:
                self._stats.sent_back += 1
            return True
        except (RemotingError, MQClientException) as e:
            log.error("sendMessageBack Exception, %s: %s", self.group, e)
        try:
            props = dict(msg.properties)
            props.pop(PROPERTY_TRANSACTION_PREPARED, None)
            props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, origin_msg_id)
            props[PROPERTY_RETRY_TOPIC] = msg.topic
            props[PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
            props[PROPERTY_MAX_RECONSUME_TIMES] = str(self.max_reconsume_times)
            props[PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
            self._producer().send(Message(self.retry_topic, msg.body, flag=msg.flag, properties=props))
            with self._stats_lock:
                self._stats.sent_back_by_producer += 1
            return True
        except (RemotingError, MQClientException) as e:
            log.error("sendMessageBack exception, group: %s msg: %s: %s", self.group, origin_msg_id, e)
            return False

    def _producer(self):
        with self._lock:
            if self._inner_producer is None:
                from remoting.producer import Producer

                self._inner_producer = Producer(self.client.namesrv_addrs, CLIENT_INNER_PRODUCER_GROUP, self.profile,
                                                instance_name=self.instance_name, client_ip=self.client_ip,
                                                heartbeat=False, client=self.client)
            return self._inner_producer

    # -- stats, helpers -----------------------------------------------------------------------------------------

    def stats(self) -> ConsumerStats:
        """Per assigned queue: cached count / size / span, committed offset, pulls, flow-control counters."""
        committed = self.offsets.snapshot()
        with self._lock:
            requests = list(self._requests.items())
        queues = {}
        for mq, req in requests:
            pq = req.pq
            queues[mq] = QueueStats(pq.count, pq.size, pq.max_span, committed.get(mq, -1), req.next_offset,
                                    req.broker_id, req.pulls, req.pull_errors, req.fc_count, req.fc_size, req.fc_span)
        with self._stats_lock:
            s = self._stats
            return ConsumerStats(self.client_id, queues, s.queue_flow_control_times,
                                 s.queue_max_span_flow_control_times, s.consumed_ok, s.consumed_later, s.sent_back,
                                 s.sent_back_by_producer, s.consume_again_local, s.rebalances)

    def assigned_queues(self) -> list[MessageQueue]:
        with self._lock:
            return sort_queues(self._requests)

    def _request(self, code: int, fields: dict[str, str] | None, body: bytes = b"") -> RemotingCommand:
        p = self.profile
        return make_request(code, fields, body, version=p.version, language=p.language,
                            serialize_type=p.serialize_type)


def hash_tag(tag: str) -> int:
    """Java's `String.hashCode` (SubscriptionData.codeSet)."""
    h = 0
    for ch in tag:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h
