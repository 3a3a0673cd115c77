"""`ControllerManager` (rocketmq-all-5.3.0): what the controller does when a broker goes inactive (its heartbeats
stopped or its channel closed) or the leader's scan finds a broker set whose master is gone: if this controller is
the leader and the inactive broker was the master, elect a new one (`electMasterMaxRetryCount` tries, 3 s each),
and tell every live broker of the set the new role (NOTIFY_BROKER_ROLE_CHANGED, oneway, when
`notifyBrokerRoleChanged`). Brokers also find the change themselves by polling the replica info every
`syncBrokerMetadataPeriod`."""
from __future__ import annotations

import threading
from concurrent.futures import Future

from emulator.controllermode.config import ControllerConfig
from emulator.controllermode.controller import DLedgerController
from emulator.controllermode.decisions import ControllerResult
from emulator.controllermode.heartbeats import BrokerHeartbeatManager
from emulator.controllermode.javatext import java_identity, remoting_command_text
from emulator.logs import controller_log
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import make_request, next_opaque
from remoting.controller_bodies import SyncStateSet
from remoting.controller_headers import NotifyBrokerRoleChangedRequestHeader
from remoting.errors import RemotingError

ELECT_WAIT_S = 3.0
NOTIFY_TIMEOUT_MS = 3000


class ControllerManager:
    def __init__(self, config: ControllerConfig, version: int) -> None:
        self.config = config
        self.version = version
        self.heartbeats = BrokerHeartbeatManager(config.get_int("scanNotActiveBrokerInterval"))
        self.controller = DLedgerController(config, self.heartbeats, version)
        self.heartbeats.listeners.append(self.on_broker_inactive)
        self.controller.inactive_master_listeners.append(lambda name: self.on_broker_inactive("", name, None))
        self.client = RemotingClient()

    def start(self) -> None:
        self.controller.start()
        self.heartbeats.start()

    def shutdown(self) -> None:
        self.heartbeats.shutdown()
        self.controller.shutdown()
        self.client.shutdown()

    def on_broker_inactive(self, cluster: str, name: str, broker_id: int | None) -> None:
        controller_log.info("Controller Manager received broker inactive event, clusterName: %s, brokerName: %s, "
                            "brokerId: %s", cluster or None, name, broker_id)
        if not self.controller.is_leader_state():
            controller_log.warning("The broker with brokerId: %s in broker-set: %s has been inactive", broker_id, name)
            return
        if broker_id is None:
            self.trigger_elect_master(name)
            return
        decisions = self.controller.decisions
        result = self._wait(self.controller.append_event("getReplicaInfo", lambda: decisions.get_replica_info(name),
                                                          False))
        if result is None or result.code != ResponseCode.SUCCESS:
            controller_log.error("Failed to get replica-info for broker-set: %s when OnBrokerInactive", name)
            return
        if result.header.get("masterBrokerId") != broker_id:
            controller_log.warning("The broker with brokerId: %s in broker-set: %s has been inactive", broker_id, name)
            return
        self.trigger_elect_master(name)

    def trigger_elect_master(self, name: str) -> None:
        decisions = self.controller.decisions
        for attempt in range(self.config.get_int("electMasterMaxRetryCount")):
            result = self._wait(self.controller.append_event(
                "electMaster", lambda: decisions.elect_master("", name, -1, False), True))
            if result is not None and result.code == ResponseCode.SUCCESS:
                controller_log.info("Elect a new master in broker-set: %s done, result: %s", name,
                                    remoting_command_text(0, self.version, next_opaque()))
                self.notify_role_changed(result)
                return
            controller_log.error("Failed to trigger elect-master in broker-set: %s", name)
            if attempt + 1 < self.config.get_int("electMasterMaxRetryCount"):
                controller_log.warning("Failed to trigger elect-master in broker-set: %s, retryCount: %d", name,
                                       attempt)

    def notify_role_changed(self, result: ControllerResult) -> None:
        """`notifyBrokerRoleChanged`: every live member of the set hears the new master (oneway)."""
        if not self.config.get_bool("notifyBrokerRoleChanged") or not result.body:
            return
        body = fastjson.loads(result.body)
        group = body.get("brokerMemberGroup")
        master = result.header.get("masterBrokerId")
        if not group or master is None:
            return
        sync = SyncStateSet({int(i) for i in body.get("syncStateSet") or ()},
                            int(result.header.get("syncStateSetEpoch") or 0))
        header = NotifyBrokerRoleChangedRequestHeader(result.header.get("masterAddress"),
                                                      result.header.get("masterEpoch"), sync.sync_state_set_epoch,
                                                      master)
        for bid, addr in sorted(group.get("brokerAddrs", {}).items(), key=lambda kv: int(kv[0])):
            if not self.heartbeats.is_active(group.get("cluster", ""), group.get("brokerName", ""), int(bid)):
                continue
            threading.Thread(target=self._notify, args=(addr, header, sync), name="ControllerManager_NotifyService_1",
                             daemon=True).start()

    def _notify(self, addr: str, header: NotifyBrokerRoleChangedRequestHeader, sync: SyncStateSet) -> None:
        entry = java_identity("org.apache.rocketmq.remoting.protocol.body.RoleChangeNotifyEntry", header)
        controller_log.info("Try notify broker %s that role changed, RoleChangeNotifyEntry:%s", addr, entry)
        request = make_request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header.to_fields(), sync.encode(),
                               version=self.version)
        try:
            self.client.invoke_oneway(addr, request, NOTIFY_TIMEOUT_MS)
        except RemotingError as e:
            controller_log.error("Failed to notify broker %s that role changed %s", addr, e)

    @staticmethod
    def _wait(future: Future) -> ControllerResult | None:
        try:
            return future.result(timeout=ELECT_WAIT_S)
        except Exception:
            return None
