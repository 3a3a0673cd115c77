"""`DefaultBrokerHeartbeatManager` (rocketmq-all-5.3.0): every controller keeps a live table of the brokers that
send it BROKER_HEARTBEAT (each broker heartbeats every controller every `brokerHeartbeatInterval`, 1 s), with the
timeout the broker asked for (`controllerHeartBeatTimeoutMills`, 10 s), its epoch, max offset, confirm offset and
election priority. A broker is inactive when its last heartbeat is older than its timeout (checked by
`scanNotActiveBroker` every `scanNotActiveBrokerInterval` after a 2 s delay) or when its channel to this controller
closes (a killed broker's socket closes at once: that is why the real controller elects within a second of a
`kill -9`, while a frozen broker is noticed only after the timeout). Listeners hear (cluster, name, id)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from emulator.logs import controller_log

DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS = 1000 * 10
SCAN_INITIAL_DELAY_S = 2.0
INT_MAX = 2**31 - 1

Listener = Callable[[str, str, int], None]


@dataclass
class BrokerLiveInfo:
    broker_name: str
    broker_addr: str
    broker_id: int
    last_update_ms: float
    timeout_ms: int
    channel: object
    epoch: int
    max_offset: int
    election_priority: int
    confirm_offset: int = -1


class BrokerHeartbeatManager:
    def __init__(self, scan_interval_ms: int) -> None:
        self.scan_interval_s = scan_interval_ms / 1000.0
        self.table: dict[tuple[str, str, int], BrokerLiveInfo] = {}
        self.listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._scan_loop, name="DefaultBrokerHeartbeatManager_scheduledService_1",
                         daemon=True).start()

    def shutdown(self) -> None:
        self._stop.set()

    def on_heartbeat(self, cluster: str, name: str, addr: str, broker_id: int, timeout_ms: int | None,
                     channel: object, epoch: int | None, max_offset: int | None, confirm_offset: int | None,
                     priority: int | None) -> None:
        key = (cluster, name, broker_id)
        now = time.time() * 1000
        real_epoch = -1 if epoch is None else epoch
        real_offset = -1 if max_offset is None else max_offset
        with self._lock:
            prev = self.table.get(key)
            if prev is None:
                self.table[key] = BrokerLiveInfo(name, addr, broker_id, now,
                                                 timeout_ms or DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS, channel,
                                                 real_epoch, real_offset, INT_MAX if priority is None else priority)
                controller_log.info("new broker registered, BrokerIdentityInfo{clusterName='%s', brokerName='%s', "
                                    "brokerId=%d}, brokerId:%d", cluster, name, broker_id, broker_id)
                return
            prev.last_update_ms = now
            prev.channel = channel
            prev.timeout_ms = timeout_ms or DEFAULT_BROKER_CHANNEL_EXPIRED_TIME_MS
            prev.election_priority = INT_MAX if priority is None else priority
            if real_epoch > prev.epoch or (real_epoch == prev.epoch and real_offset > prev.max_offset):
                prev.epoch, prev.max_offset = real_epoch, real_offset
                prev.confirm_offset = -1 if confirm_offset is None else confirm_offset

    def is_active(self, cluster: str, name: str, broker_id: int) -> bool:
        info = self.table.get((cluster, name, broker_id))
        return info is not None and info.last_update_ms + info.timeout_ms >= time.time() * 1000

    def live_info(self, cluster: str, name: str, broker_id: int) -> BrokerLiveInfo | None:
        return self.table.get((cluster, name, broker_id))

    def on_channel_closed(self, channel: object) -> None:
        with self._lock:
            found = next(((k, v) for k, v in self.table.items() if v.channel is channel), None)
            if found is None:
                return
            key, info = found
            del self.table[key]
        controller_log.info("Channel %s inactive, broker %s, addr:%s, id:%d", channel, info.broker_name,
                            info.broker_addr, info.broker_id)
        self._notify(key)

    def scan_not_active(self) -> None:
        controller_log.info("start scanNotActiveBroker")
        now = time.time() * 1000
        expired = []
        with self._lock:
            for key, info in list(self.table.items()):
                if now - info.last_update_ms > info.timeout_ms:
                    del self.table[key]
                    expired.append((key, info))
        for key, info in expired:
            close = getattr(info.channel, "close", None)
            if close is not None:
                close()
            controller_log.warning("The broker channel %s expired, brokerInfo BrokerIdentityInfo{clusterName='%s', "
                                   "brokerName='%s', brokerId=%d}, expired %dms", info.channel, key[0], key[1],
                                   key[2], info.timeout_ms)
            self._notify(key)

    def _notify(self, key: tuple[str, str, int]) -> None:
        for listener in self.listeners:
            threading.Thread(target=listener, args=key, name="DefaultBrokerHeartbeatManager_executorService_1",
                             daemon=True).start()

    def _scan_loop(self) -> None:
        if self._stop.wait(SCAN_INITIAL_DELAY_S):
            return
        while not self._stop.is_set():
            try:
                self.scan_not_active()
            except Exception as e:  # the Java task logs and goes on
                controller_log.error("scanNotActiveBroker exception %s", e)
            if self._stop.wait(self.scan_interval_s):
                return
