"""The producer's routes, as `MQClientInstance` and `DefaultMQProducerImpl` keep them: publish info by topic,
broker addresses by broker name, `tryToFindTopicPublishInfo` (the topic's own route, else the `TBW102` route with
`min(defaultTopicQueueNums, readQueueNums)` queues so the broker auto-creates the topic), and the periodic refresh."""
from __future__ import annotations

import dataclasses
import threading

from remoting.errors import MQClientException, RemotingError
from remoting.headers import MASTER_ID
from remoting.namesrv import NameServerClient
from remoting.route import TopicPublishInfo, TopicRouteData, publish_info_from_route

LOCK_TIMEOUT_S = 3.0  # MQClientInstance.LOCK_TIMEOUT_MILLIS
ROUTE_TIMEOUT_MS = 3000  # updateTopicRouteInfoFromNameServer: 1000 * 3


class RouteTable:
    """Thread-safe route state of one producer."""

    def __init__(self, namesrv: NameServerClient, *, create_topic_key: str = "TBW102",
                 default_topic_queue_nums: int = 4, index_style: str = "4.9") -> None:
        self.namesrv = namesrv
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.index_style = index_style
        self._publish: dict[str, TopicPublishInfo] = {}
        self._routes: dict[str, TopicRouteData] = {}
        self._broker_addrs: dict[str, dict[int, str]] = {}
        self._lock = threading.Lock()

    def find_publish_info(self, topic: str) -> TopicPublishInfo:
        """`tryToFindTopicPublishInfo`. Remoting errors talking to the name server propagate (Java wraps them in an
        IllegalStateException)."""
        info = self._publish.get(topic)
        if info is None or not info.ok():
            self._publish.setdefault(topic, TopicPublishInfo([], None, index_style=self.index_style))
            self.update(topic)
            info = self._publish[topic]
        if info.have_topic_router_info or info.ok():
            return info
        self.update(topic, is_default=True)
        return self._publish[topic]

    def update(self, topic: str, is_default: bool = False) -> bool:
        """`updateTopicRouteInfoFromNameServer`: True when the publish info was replaced."""
        if not self._lock.acquire(timeout=LOCK_TIMEOUT_S):
            return False
        try:
            try:
                if is_default:
                    route = self.namesrv.get_route(self.create_topic_key, ROUTE_TIMEOUT_MS)
                    nums = self.default_topic_queue_nums
                    route = dataclasses.replace(route, queue_datas=[
                        dataclasses.replace(q, read_queue_nums=min(nums, q.read_queue_nums),
                                            write_queue_nums=min(nums, q.read_queue_nums))
                        for q in route.queue_datas])
                else:
                    route = self.namesrv.get_route(topic, ROUTE_TIMEOUT_MS)
            except MQClientException:
                return False
            old = self._routes.get(topic)
            info = self._publish.get(topic)
            if old == route and info is not None and info.ok():
                return False
            for bd in route.broker_datas:
                self._broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
            self._publish[topic] = publish_info_from_route(topic, route, self.index_style)
            self._routes[topic] = route
            return True
        finally:
            self._lock.release()

    def refresh_all(self) -> None:
        """The scheduled `updateTopicRouteInfoFromNameServer()` over every topic in use; errors are only skipped."""
        for topic in list(self._publish):
            try:
                self.update(topic)
            except RemotingError:
                pass

    def master_addr(self, broker_name: str) -> str | None:
        """`findBrokerAddressInPublish`."""
        addrs = self._broker_addrs.get(broker_name)
        return addrs.get(MASTER_ID) if addrs else None

    def master_addrs(self) -> list[str]:
        return [a[MASTER_ID] for a in list(self._broker_addrs.values()) if MASTER_ID in a]

    def topics(self) -> list[str]:
        """The topics this producer has looked up, in the order of their first send."""
        return list(self._publish)

    def route(self, topic: str) -> TopicRouteData | None:
        return self._routes.get(topic)
