"""Route data and the producer's view of it: `TopicRouteData` (queue datas, broker datas with their id → address
maps), `ClusterInfo`, `MessageQueue`, and `TopicPublishInfo` with the Java client's queue selection
(`TopicPublishInfo.selectOneMessageQueue`, a per-thread index started at a random value, avoiding the last broker
on a retry when another broker has queues; the filtered selection and `getQueueIdByBroker` that the latency-fault
strategy of `remoting.fault_strategy` builds on). JSON in and out is fastjson's (bare integer keys)."""
from __future__ import annotations

import random
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from remoting import fastjson
from remoting.errors import RemotingCommandException
from remoting.hashmap import java_hashmap_order
from remoting.headers import MASTER_ID, PERM_WRITE

_INT_MASK = 0xFFFFFFFF
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1


@contextmanager
def _body_errors(what: str):
    try:
        yield
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError) as e:
        raise RemotingCommandException(f"{what} body does not parse: {type(e).__name__}: {e}") from None


@dataclass(slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_doc(cls, doc: dict) -> QueueData:
        return cls(doc["brokerName"], int(doc.get("readQueueNums", 0)), int(doc.get("writeQueueNums", 0)),
                   int(doc.get("perm", 0)), int(doc.get("topicSysFlag", doc.get("topicSynFlag", 0))))

    def to_doc(self) -> dict:
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}


@dataclass(slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    @classmethod
    def from_doc(cls, doc: dict) -> BrokerData:
        addrs = {int(k): v for k, v in (doc.get("brokerAddrs") or {}).items()}
        return cls(doc.get("cluster", ""), doc["brokerName"], addrs)

    def to_doc(self) -> dict:
        # HashMap<Long, String>: Long.hashCode of small ids is the id, so ascending ids are its iteration order
        return {"brokerAddrs": dict(sorted(self.broker_addrs.items())), "brokerName": self.broker_name,
                "cluster": self.cluster}


@dataclass(slots=True)
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: bytes | str) -> TopicRouteData:
        """Parse a route body; anything that is not route data raises RemotingCommandException."""
        with _body_errors("route data"):
            doc = fastjson.loads(body)
            return cls(
                queue_datas=[QueueData.from_doc(q) for q in doc.get("queueDatas") or []],
                broker_datas=[BrokerData.from_doc(b) for b in doc.get("brokerDatas") or []],
                order_topic_conf=doc.get("orderTopicConf"),
                filter_server_table=doc.get("filterServerTable") or {},
            )

    def to_json(self) -> bytes:
        """fastjson's bytes: properties in name order, null ones left out, broker ids written bare."""
        doc: dict = {"brokerDatas": [b.to_doc() for b in self.broker_datas],
                     "filterServerTable": self.filter_server_table}
        if self.order_topic_conf is not None:
            doc["orderTopicConf"] = self.order_topic_conf
        doc["queueDatas"] = [q.to_doc() for q in self.queue_datas]
        return fastjson.dumps(doc).encode("utf-8")

    def broker(self, broker_name: str) -> BrokerData | None:
        for bd in self.broker_datas:
            if bd.broker_name == broker_name:
                return bd
        return None


@dataclass(slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO: brokers by name, broker names by cluster."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: bytes | str) -> ClusterInfo:
        """Parse a cluster-info body; anything else raises RemotingCommandException."""
        with _body_errors("cluster info"):
            doc = fastjson.loads(body)
            return cls({name: BrokerData.from_doc(b) for name, b in (doc.get("brokerAddrTable") or {}).items()},
                       {name: list(v) for name, v in (doc.get("clusterAddrTable") or {}).items()})

    def to_json(self) -> bytes:
        brokers = {k: self.broker_addr_table[k].to_doc() for k in java_hashmap_order(self.broker_addr_table)}
        clusters = {k: java_hashmap_order(self.cluster_addr_table[k])
                    for k in java_hashmap_order(self.cluster_addr_table)}
        return fastjson.dumps({"brokerAddrTable": brokers, "clusterAddrTable": clusters}).encode("utf-8")


@dataclass(frozen=True, slots=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int


def java_int(value: int) -> int:
    """`value` wrapped to a Java int (32-bit two's complement)."""
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_abs(value: int) -> int:
    """`Math.abs(int)`: `Integer.MIN_VALUE` stays negative."""
    return value if value == INT_MIN else abs(value)


def java_rem(value: int, n: int) -> int:
    """Java's `value % n` for ints: the remainder takes the sign of `value`."""
    r = abs(value) % n
    return -r if value < 0 else r


class ThreadLocalIndex:
    """`ThreadLocalIndex`: each thread (greenlet under gevent) counts from its own random start.
    4.9.1-4.9.3 start at `Math.abs(random.nextInt())` and return `Math.abs(++index)` (negative once, at
    `Integer.MIN_VALUE`); 5.x starts at `random.nextInt()` and returns `++index & Integer.MAX_VALUE`."""

    def __init__(self, style: str = "4.9") -> None:
        self._local = threading.local()
        self._positive_mask = style != "4.9"

    def increment_and_get(self) -> int:
        index = getattr(self._local, "index", None)
        if index is None:
            index = random.getrandbits(32) if self._positive_mask else abs(java_int(random.getrandbits(32)))
        index = java_int(index + 1)
        self._local.index = index
        if self._positive_mask:
            return index & 0x7FFFFFFF
        return java_abs(index)  # Math.abs(Integer.MIN_VALUE) stays negative

    def reset(self) -> None:
        """5.x `reset()`: this thread's index starts again at `Math.abs(random.nextInt(Integer.MAX_VALUE))`."""
        self._local.index = random.randrange(INT_MAX)


class TopicPublishInfo:
    """The writable queues of a topic, masters only, in the order Java builds them (queue datas sorted by broker
    name, then queue ids)."""

    def __init__(self, queues: list[MessageQueue], route: TopicRouteData | None = None, order_topic: bool = False,
                 index_style: str = "4.9") -> None:
        self.message_queue_list = queues
        self.route = route
        self.order_topic = order_topic
        self.have_topic_router_info = route is not None
        self.send_which_queue = ThreadLocalIndex(index_style)

    def ok(self) -> bool:
        return bool(self.message_queue_list)

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """`selectOneMessageQueue(lastBrokerName)`: on a retry prefer a queue of another broker (each candidate takes
        one step of the index; none found: one more step, whatever the broker). 5.x's `MQFaultStrategy` without the
        latency-fault switch (a `BrokerFilter`, then the unfiltered choice) takes the same steps."""
        queues = self.message_queue_list
        if last_broker_name is not None:
            for _ in range(len(queues)):
                mq = queues[self.next_position()]
                if mq.broker_name != last_broker_name:
                    return mq
        return queues[self.next_position()]

    def next_position(self) -> int:
        """One step of this thread's index: the position of `selectOneMessageQueue()` (a negative index, which only
        4.9's `Math.abs(Integer.MIN_VALUE)` gives, is position 0 as `if (pos < 0) pos = 0` makes it)."""
        index = self.send_which_queue.increment_and_get()
        return index % len(self.message_queue_list) if index >= 0 else 0

    def select_where(self, accept: Callable[[MessageQueue], bool]) -> MessageQueue | None:
        """5.x `selectOneMessageQueue(QueueFilter...)` (rocketmq-all-5.3.0): up to one candidate per queue, each one
        step of the index; the first that `accept`s, else None."""
        queues = self.message_queue_list
        for _ in range(len(queues)):
            mq = queues[self.next_position()]
            if accept(mq):
                return mq
        return None

    def write_queue_nums_of(self, broker_name: str | None) -> int:
        """`getQueueIdByBroker` (4.9.1-4.9.7; 5.x `getWriteQueueNumsByBroker`): the write queue count of the first
        queue data of that broker in the route's order, whatever its permission (4.9.8 added a writable test); -1
        when the route names no such broker."""
        for qd in self.route.queue_datas if self.route is not None else ():
            if qd.broker_name == broker_name:
                return qd.write_queue_nums
        return -1


def publish_info_from_route(topic: str, route: TopicRouteData, index_style: str = "4.9") -> TopicPublishInfo:
    """`MQClientInstance.topicRouteData2TopicPublishInfo`."""
    queues: list[MessageQueue] = []
    order = bool(route.order_topic_conf)
    if order:
        for item in (route.order_topic_conf or "").split(";"):
            name, _, nums = item.partition(":")
            queues.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
    else:
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if not qd.perm & PERM_WRITE:
                continue
            bd = route.broker(qd.broker_name)
            if bd is None or MASTER_ID not in bd.broker_addrs:
                continue
            queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(queues, route, order, index_style)
