"""The name server's route tables (`RouteInfoManager`): brokers register every 30 s, masters' topic configs become
queue data, brokers not heard from for 120 s (or whose connection closed) are dropped, and route and cluster data are
answered in fastjson's layout (bean keys sorted, broker ids as bare integer keys). An address registering under a
new broker id (a slave switched to master, id 0) leaves its old id; a registration for an id another address holds
with a larger `stateVersion` (a 5.x controller-mode master epoch) is ignored, as 5.x does."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from emulator.logs import namesrv_log

BROKER_CHANNEL_EXPIRED_MS = 1000 * 60 * 2
MASTER_ID = 0


@dataclass
class BrokerLive:
    last_update_ms: float
    data_version: dict
    channel_id: int
    ha_server_addr: str


@dataclass
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"brokerAddrs": dict(sorted(self.broker_addrs.items())), "brokerName": self.broker_name,
                "cluster": self.cluster}


class RouteTable:
    def __init__(self, five_x: bool = False) -> None:
        self.five_x = five_x  # 5.x's RouteInfoManager: a closed or expired broker is unregistered (its log lines)
        self._lock = threading.RLock()
        self.topic_queue: dict[str, dict[str, dict]] = {}
        self.broker_addr: dict[str, BrokerData] = {}
        self.cluster_addr: dict[str, set[str]] = {}
        self.broker_live: dict[str, BrokerLive] = {}

    def register(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int, ha_server_addr: str,
                 topic_wrapper: dict | None, channel_id: int) -> dict[str, str]:
        """RouteInfoManager.registerBroker; returns the response fields (a slave learns its master's addresses)."""
        with self._lock:
            self.cluster_addr.setdefault(cluster, set()).add(broker_name)
            data = self.broker_addr.setdefault(broker_name, BrokerData(cluster, broker_name))
            for bid, addr in list(data.broker_addrs.items()):
                if addr == broker_addr and bid != broker_id:
                    del data.broker_addrs[bid]
            version = (topic_wrapper or {}).get("dataVersion") or {}
            old_addr = data.broker_addrs.get(broker_id)
            old_live = self.broker_live.get(old_addr) if old_addr not in (None, broker_addr) else None
            if old_live is not None and old_live.data_version.get("stateVersion", 0) > version.get("stateVersion", 0):
                namesrv_log.warning("Registering Broker conflicts with the existed one, just ignore.: Cluster:%s, "
                                    "BrokerName:%s, BrokerId:%d, Old BrokerAddr:%s, Old Version:%s, New BrokerAddr:%s, "
                                    "New Version:%s.", cluster, broker_name, broker_id, old_addr,
                                    old_live.data_version.get("stateVersion", 0), broker_addr,
                                    version.get("stateVersion", 0))
                self.broker_live.pop(broker_addr, None)
                return {}
            first = data.broker_addrs.get(broker_id) != broker_addr
            data.broker_addrs[broker_id] = broker_addr
            live = self.broker_live.get(broker_addr)
            changed = live is None or live.data_version != version
            if topic_wrapper is not None and broker_id == MASTER_ID and (changed or first):
                for topic, conf in (topic_wrapper.get("topicConfigTable") or {}).items():
                    self.topic_queue.setdefault(topic, {})[broker_name] = {
                        "brokerName": broker_name, "perm": conf.get("perm", 6),
                        "readQueueNums": conf.get("readQueueNums", 0), "topicSysFlag": conf.get("topicSysFlag", 0),
                        "writeQueueNums": conf.get("writeQueueNums", 0)}
            if live is None:
                namesrv_log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)
            self.broker_live[broker_addr] = BrokerLive(time.time() * 1000, version, channel_id, ha_server_addr)
            result: dict[str, str] = {}
            if broker_id != MASTER_ID:
                master = data.broker_addrs.get(MASTER_ID)
                if master is not None:
                    master_live = self.broker_live.get(master)
                    if master_live is not None:
                        result["haServerAddr"] = master_live.ha_server_addr
                    result["masterAddr"] = master
            return result

    def unregister(self, broker_addr: str, broker_name: str, broker_id: int) -> None:
        with self._lock:
            self._unregister(broker_addr)

    def _unregister(self, broker_addr: str) -> None:
        live = self.broker_live.get(broker_addr) is not None
        namesrv_log.info("unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if live else "Failed",
                         self._named(broker_addr))
        self._remove(broker_addr, "unregister")

    def _named(self, broker_addr: str) -> str:
        """A broker as the version's log names it: 4.x its address, 5.x its `BrokerAddrInfo`."""
        if not self.five_x:
            return broker_addr
        cluster = next((d.cluster for d in self.broker_addr.values() if broker_addr in d.broker_addrs.values()), "")
        return f"BrokerIdentityInfo [clusterName={cluster}, brokerAddr={broker_addr}]"

    def route(self, topic: str) -> dict | None:
        with self._lock:
            queues = self.topic_queue.get(topic)
            if not queues:
                return None
            datas = [self.broker_addr[name].to_json() for name in queues if name in self.broker_addr]
            if not datas:
                return None
            return {"brokerDatas": datas, "filterServerTable": {},
                    "queueDatas": [dict(q) for q in queues.values()]}

    def cluster_info(self) -> dict:
        with self._lock:
            return {"brokerAddrTable": {n: d.to_json() for n, d in self.broker_addr.items()},
                    "clusterAddrTable": {c: sorted(names) for c, names in self.cluster_addr.items()}}

    def scan_not_active(self) -> None:
        now = time.time() * 1000
        with self._lock:
            for addr, live in list(self.broker_live.items()):
                if live.last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now:
                    namesrv_log.warning("The broker channel expired, %s %dms", self._named(addr),
                                        BROKER_CHANNEL_EXPIRED_MS)
                    self._destroyed(addr, "expired")

    def channel_closed(self, channel_id: int) -> None:
        with self._lock:
            for addr, live in list(self.broker_live.items()):
                if live.channel_id == channel_id:
                    self._destroyed(addr, "closed")

    def _destroyed(self, broker_addr: str, how: str) -> None:
        """onChannelDestroy: 4.x drops the broker itself; 5.x submits an unregister request for it."""
        if not self.five_x:
            self._remove(broker_addr, how)
            return
        namesrv_log.info("the broker's channel destroyed, submit the unregister request at once, broker info: "
                         "org.apache.rocketmq.remoting.protocol.header.namesrv.UnRegisterBrokerRequestHeader@%x, "
                         "submit result: true", id(broker_addr) & 0x7FFFFFFF)
        self._unregister(broker_addr)

    def _remove(self, broker_addr: str, how: str) -> None:
        """Drop a broker as 4.9.1's RouteInfoManager does, with its log lines: `unregisterBroker` for a broker that
        said goodbye ("unregister"), `onChannelDestroy` for one whose connection closed ("closed": found by its
        channel, so named first) or expired ("expired": already out of the live table, so not)."""
        unregister = how == "unregister"
        self.broker_live.pop(broker_addr, None)
        if how == "closed":
            namesrv_log.info("the broker's channel destroyed, %s, clean it's data structure at once", broker_addr)
        for name, data in list(self.broker_addr.items()):
            for bid, addr in list(data.broker_addrs.items()):
                if addr == broker_addr:
                    named = self._named(addr)
                    del data.broker_addrs[bid]
                    if unregister:
                        namesrv_log.info("unregisterBroker, remove addr from brokerAddrTable OK, %s", named)
                    else:
                        namesrv_log.info("remove brokerAddr[%s, %s] from brokerAddrTable, because channel destroyed",
                                         bid, addr)
            if not data.broker_addrs:
                del self.broker_addr[name]
                for names in self.cluster_addr.values():
                    names.discard(name)
                for topic in list(self.topic_queue):
                    self.topic_queue[topic].pop(name, None)
                    if not self.topic_queue[topic]:
                        del self.topic_queue[topic]
