"""`ClientInstance`: the push consumer's part of `MQClientInstance`. One `RemotingClient` and the name server; the
topic routes and broker addresses (`updateTopicRouteInfoFromNameServer`, `findBrokerAddressInSubscribe` /
`InAdmin` / `InPublish`) and the readable queues of each subscribed topic; heartbeats with the consumer data to
every broker address (consumers heartbeat slaves too); the group's consumer ids (`findConsumerIdList`); a queue's
max offset; unregistering; and the scheduled tasks: heartbeat 1 s after start and every 30 s, routes 10 ms after
start and every 30 s, offsets persisted 10 s after start and every 5 s (`persist_interval_s`)."""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from remoting import fastjson
from remoting.admin import heartbeat_body
from remoting.broker_caller import BrokerCaller
from remoting.codes import RequestCode, ResponseCode
from remoting.consumer.allocation import subscribe_queues
from remoting.consumer.headers import GetConsumerListByGroupRequestHeader
from remoting.consumer.subscription import consumer_data, is_retry_topic
from remoting.errors import MQClientException, RemotingCommandException, RemotingError
from remoting.headers import MASTER_ID, UnregisterClientRequestHeader
from remoting.namesrv import NameServerClient
from remoting.profiles import ClientProfile
from remoting.route import MessageQueue, TopicRouteData

log = logging.getLogger("rmq_chaos.consumer")

CLIENT_TIMEOUT_MS = 3000  # getConsumerIdListByGroup, unregisterClient, heartbeat, getMaxOffset
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"  # MixAll.CLIENT_INNER_PRODUCER_GROUP


def resolve_addr(find: Callable[[str], str | None], refresh: Callable[[str], object], mq: MessageQueue) -> str:
    """The address `find` gives for the queue's broker, asking again after one route refresh of its topic; none:
    `MQClientException` "The broker[...] not exist", as the Java client says."""
    addr = find(mq.broker_name)
    if addr is None:
        refresh(mq.topic)
        addr = find(mq.broker_name)
    if addr is None:
        raise MQClientException(-1, f"The broker[{mq.broker_name}] not exist")
    return addr


class ClientInstance(BrokerCaller):
    """`subscriptions`: the consumer's table topic -> SubscriptionData (shared with it); `stop` ends the scheduled
    tasks."""

    def __init__(self, namesrv_addr: str | list[str], profile: ClientProfile, *, group: str, client_ip: str,
                 instance_name: str, consume_from: str, subscriptions: dict[str, dict],
                 stop: threading.Event) -> None:
        super().__init__(None, profile, CLIENT_TIMEOUT_MS, namesrv_addr=namesrv_addr)
        self.namesrv = NameServerClient(self.client, version=profile.version, language=profile.language,
                                        serialize_type=profile.serialize_type)
        self.group = group
        self.client_ip = client_ip
        self.instance_name = instance_name
        self.consume_from = consume_from
        self.subscriptions = subscriptions
        self._stop = stop
        self._lock = threading.Lock()
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._topic_queues: dict[str, set[MessageQueue]] = {}

    @property
    def client_id(self) -> str:
        """`buildMQClientId`: `clientIP@instanceName`."""
        return f"{self.client_ip}@{self.instance_name}"

    # -- routes and addresses -----------------------------------------------------------------------------------

    def update_route(self, topic: str) -> bool:
        """`updateTopicRouteInfoFromNameServer(topic)`: False when the name server has no route (or is not reached)."""
        try:
            route = self.namesrv.get_route(topic)
        except (MQClientException, RemotingError) as e:
            if not is_retry_topic(topic):
                log.warning("updateTopicRouteInfoFromNameServer Exception, %s: %s", topic, e)
            return False
        with self._lock:
            self._routes[topic] = route
            for bd in route.broker_datas:
                self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
            if topic in self.subscriptions:
                self._topic_queues[topic] = subscribe_queues(topic, route)
        return True

    def subscribe_info(self, topic: str) -> set[MessageQueue] | None:
        """`topicSubscribeInfoTable`: the readable queues of a subscribed topic (None before its route is known)."""
        return self._topic_queues.get(topic)

    def all_broker_addrs(self) -> list[str]:
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

    # -- calls to brokers ---------------------------------------------------------------------------------------

    def consumer_data(self) -> dict:
        return consumer_data(self.group, self.consume_from, self.subscriptions)

    def send_heartbeat(self) -> int:
        """`sendHeartbeatToAllBroker`: to every address (consumers heartbeat slaves too); returns how many answered
        SUCCESS."""
        body = heartbeat_body(self.client_id, [CLIENT_INNER_PRODUCER_GROUP], [self.consumer_data()])
        ok = 0
        for addr in self.all_broker_addrs():
            try:
                response = self.invoke(addr, RequestCode.HEART_BEAT, None, body)
                if response.code == ResponseCode.SUCCESS:
                    ok += 1
                else:
                    log.warning("send heart beat to broker %s: code %s %s", addr, response.code, response.remark)
            except RemotingError as e:
                log.info("send heart beat to broker[%s] exception: %s", addr, e)
        return ok

    def unregister(self) -> None:
        """`unregisterClient`: UNREGISTER_CLIENT of the consumer group to every broker address."""
        for addr in self.all_broker_addrs():
            header = UnregisterClientRequestHeader(self.client_id, None, self.group)
            try:
                response = self.invoke(addr, RequestCode.UNREGISTER_CLIENT, header.to_fields())
                if response.code != ResponseCode.SUCCESS:
                    log.warning("unregister client[Consumer: %s] from broker %s: code %s %s", self.group, addr,
                                response.code, response.remark)
            except RemotingError as e:
                log.warning("unregister client[Consumer: %s] from broker %s exception: %s", self.group, addr, e)

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
            response = self.invoke(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_fields())
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

    def max_offset(self, mq: MessageQueue) -> int:
        """GET_MAX_OFFSET to the queue's master (`findBrokerAddressInPublish`)."""
        addr = resolve_addr(self.find_broker_addr_in_publish, self.update_route, mq)
        return self.get_max_offset(addr, mq.topic, mq.queue_id)

    # -- scheduled tasks ----------------------------------------------------------------------------------------

    def start_scheduled_tasks(self, persist_offsets: Callable[[], None], persist_interval_s: float) -> threading.Thread:
        """`startScheduledTask`: one thread (returned, started) running the heartbeat, the route updates of the
        subscribed topics and `persist_offsets` until `stop`."""
        thread = threading.Thread(target=self._schedule_loop, args=(persist_offsets, persist_interval_s), daemon=True,
                                  name=f"MQClientFactoryScheduledThread-{self.group}")
        thread.start()
        return thread

    def _schedule_loop(self, persist_offsets: Callable[[], None], persist_interval_s: float) -> None:
        now = time.monotonic()
        due = {"heartbeat": now + 1.0, "route": now + 0.01, "persist": now + 10.0}
        period = {"heartbeat": self.profile.heartbeat_broker_interval_ms / 1000.0,
                  "route": self.profile.poll_name_server_interval_ms / 1000.0, "persist": persist_interval_s}
        while not self._stop.is_set():
            name = min(due, key=due.get)
            if self._stop.wait(max(due[name] - time.monotonic(), 0.0)):
                return
            due[name] = time.monotonic() + period[name]
            try:
                if name == "heartbeat":
                    self.send_heartbeat()
                elif name == "route":
                    for topic in list(self.subscriptions):
                        self.update_route(topic)
                else:
                    persist_offsets()
            except Exception:  # noqa: BLE001 - a scheduled task's failure is logged, as ScheduledExecutorService's
                log.exception("scheduled %s failed", name)
