"""`RebalanceImpl` (CLUSTERING, push) with `RebalanceService`'s thread: every 20 s (`interval_s`) and at once when a
broker sends NOTIFY_CONSUMER_IDS_CHANGED (40) on one of the client's connections, for every subscribed topic:
GET_CONSUMER_LIST_BY_GROUP (38) gives the group's client ids, `AllocateMessageQueueAveragely`
(`remoting.consumer.allocation`) this client's queues. A queue taken away is dropped, its offset persisted and
forgotten; a new queue starts where `computePullFromWhere` says and gets its pull thread; a changed assignment sends
a heartbeat at once (`RebalancePushImpl.messageQueueChanged`)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from remoting.command import RemotingCommand
from remoting.consumer.allocation import allocate_averagely, sort_queues
from remoting.consumer.client_instance import ClientInstance
from remoting.consumer.offset_store import NOT_FOUND, RemoteBrokerOffsetStore
from remoting.consumer.pull_request import ProcessQueueTable, PullRequest, mq_str
from remoting.consumer.stats import ConsumerCounters
from remoting.consumer.subscription import is_retry_topic
from remoting.errors import MQClientException, RemotingError
from remoting.route import MessageQueue

log = logging.getLogger("rmq_chaos.consumer")


@dataclass(eq=False)
class RebalanceImpl:
    """`dispatch(req)` starts the pulls of a queue newly assigned; `stop` ends the rebalance thread."""

    instance: ClientInstance
    offsets: RemoteBrokerOffsetStore
    table: ProcessQueueTable
    dispatch: Callable[[PullRequest], None]
    counters: ConsumerCounters
    stop: threading.Event
    consume_from: str = field(kw_only=True)
    interval_s: float = field(kw_only=True)
    group: str = field(init=False)
    _now: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.group = self.instance.group

    # -- RebalanceService ---------------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        """The rebalance thread (returned, started); it waits for `wakeup()` or the interval."""
        thread = threading.Thread(target=self._run, name=f"RebalanceService-{self.group}", daemon=True)
        thread.start()
        return thread

    def wakeup(self) -> None:
        self._now.set()

    def on_notify_ids_changed(self, _conn, request: RemotingCommand) -> None:
        """The processor of the broker's NOTIFY_CONSUMER_IDS_CHANGED (one-way: nothing answered)."""
        log.info("receive broker's notification[%s], the consumer group: %s changed, rebalance immediately",
                 _conn.addr, request.field("consumerGroup"))
        self._now.set()
        return None

    def _run(self) -> None:
        while not self.stop.is_set():
            self._now.wait(self.interval_s)
            self._now.clear()
            if self.stop.is_set():
                return
            try:
                self.do_rebalance()
            except Exception:  # noqa: BLE001
                log.exception("doRebalance failed, %s", self.group)

    # -- RebalanceImpl ------------------------------------------------------------------------------------------

    def do_rebalance(self) -> None:
        """`RebalanceImpl.doRebalance` for every subscribed topic (CLUSTERING)."""
        with self._lock:
            self.counters.add("rebalances")
            client_id = self.instance.client_id
            for topic in list(self.instance.subscriptions):
                mq_set = self.instance.subscribe_info(topic)
                if mq_set is None:
                    if not is_retry_topic(topic):
                        log.warning("doRebalance, %s, but the topic[%s] not exist.", self.group, topic)
                    continue
                cids = self.instance.find_consumer_ids(topic)
                if not cids:
                    log.warning("doRebalance, %s %s, get consumer id list failed", self.group, topic)
                    continue
                mq_all = sort_queues(mq_set)
                cid_all = sorted(cids)
                allocated = set(allocate_averagely(self.group, client_id, mq_all, cid_all))
                if self._update_process_queues(topic, allocated):
                    log.info("rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=%s, topic=%s, "
                             "clientId=%s, mqAllSize=%d, cidAllSize=%d, rebalanceResultSize=%d, rebalanceResultSet=%s",
                             self.group, topic, client_id, len(mq_all), len(cid_all), len(allocated),
                             sorted(allocated, key=lambda q: (q.broker_name, q.queue_id)))
                    self.instance.send_heartbeat()  # RebalancePushImpl.messageQueueChanged

    def _update_process_queues(self, topic: str, mq_set: set[MessageQueue]) -> bool:
        """`updateProcessQueueTableInRebalance`: True when the topic's assignment changed."""
        changed = False
        current = self.table.of_topic(topic)
        for mq, req in current.items():
            if mq not in mq_set:
                req.pq.dropped = True
                self.offsets.persist(mq)  # removeUnnecessaryMessageQueue
                self.offsets.remove(mq)
                self.table.remove(req)
                changed = True
                log.info("doRebalance, %s, remove unnecessary mq, %s", self.group, mq_str(mq))
        for mq in sorted(mq_set - set(current), key=lambda q: (q.broker_name, q.queue_id)):
            if self.stop.is_set():
                break
            self.offsets.remove(mq)  # removeDirtyOffset
            next_offset = self.compute_pull_from_where(mq)
            if next_offset < 0:
                log.warning("doRebalance, %s, add new mq failed, %s", self.group, mq_str(mq))
                continue
            log.info("doRebalance, %s, add a new mq, %s", self.group, mq_str(mq))
            req = PullRequest(self.group, mq, next_offset)
            self.table.add(req)
            self.dispatch(req)
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
        if self.consume_from == "CONSUME_FROM_FIRST_OFFSET" or is_retry_topic(mq.topic):
            return 0
        try:
            return self.instance.max_offset(mq)
        except (RemotingError, MQClientException) as e:
            log.warning("compute consume offset exception, mq=%s: %s", mq_str(mq), e)
            return -1
