"""Queue allocation of a consumer group (CLUSTERING): `AllocateMessageQueueAveragely` over the topic's message
queues sorted as `MessageQueue.compareTo` (topic, broker name, queue id) and the group's client ids sorted as
strings, as `RebalanceImpl.rebalanceByTopic` calls it; and the readable queues of a route
(`topicRouteData2TopicSubscribeInfo`)."""
from __future__ import annotations

import logging

from remoting.headers import PERM_READ
from remoting.route import MessageQueue, TopicRouteData

log = logging.getLogger("rmq_chaos.consumer")


def sort_queues(mqs) -> list[MessageQueue]:
    """`Collections.sort(mqAll)`."""
    return sorted(mqs, key=lambda mq: (mq.topic, mq.broker_name, mq.queue_id))


def allocate_averagely(group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]) -> list[MessageQueue]:
    """`AllocateMessageQueueAveragely.allocate`: `mq_all` and `cid_all` sorted by the caller. A client id not in
    `cid_all` gets nothing (logged, as Java does)."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all or not cid_all:
        return []
    if current_cid not in cid_all:
        log.info("[BUG] ConsumerGroup: %s The consumerId: %s not in cidAll: %s", group, current_cid, cid_all)
        return []
    index = cid_all.index(current_cid)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    count = min(average, n_mq - start)
    return [mq_all[(start + i) % n_mq] for i in range(max(count, 0))]


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """`topicRouteData2TopicSubscribeInfo`: queues 0..readQueueNums-1 of every readable queue data."""
    return {MessageQueue(topic, qd.broker_name, i)
            for qd in route.queue_datas if qd.perm & PERM_READ for i in range(qd.read_queue_nums)}
