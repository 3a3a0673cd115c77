"""The controller's state machine (`ReplicasInfoManager`'s two tables at rocketmq-all-5.3.0): per broker set, the
brokers the controller assigned ids to (`BrokerReplicaInfo`: id -> address and register check code, the next id to
hand out, starting at 1) and the replication state (`SyncStateInfo`: master id, master epoch, SyncStateSet and its
epoch). It changes only by applying events, in log order, on every controller: the events are what the leader
replicates through the DLedger log, so a new leader has the same tables (the SyncStateSet survives the leader).
Events are dicts in a JSON-friendly form; `describe` gives the Java `toString` the controller log prints."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from emulator.controllermode.javatext import java_set, java_text

FIRST_BROKER_CONTROLLER_ID = 1  # MixAll.FIRST_BROKER_CONTROLLER_ID

ALTER_SYNC_STATE_SET = "ALTER_SYNC_STATE_SET_EVENT"
APPLY_BROKER_ID = "APPLY_BROKER_ID_EVENT"
ELECT_MASTER = "ELECT_MASTER_EVENT"
CLEAN_BROKER_DATA = "CLEAN_BROKER_DATA_EVENT"
UPDATE_BROKER_ADDRESS = "UPDATE_BROKER_ADDRESS"


@dataclass
class BrokerReplicaInfo:
    cluster: str
    broker_name: str
    next_assign_broker_id: int = FIRST_BROKER_CONTROLLER_ID
    brokers: dict[int, tuple[str, str]] = field(default_factory=dict)
    """broker id -> (address, registerCheckCode)"""

    def address(self, broker_id: int | None) -> str | None:
        entry = self.brokers.get(broker_id) if broker_id is not None else None
        return entry[0] if entry else None

    def id_table(self) -> dict[int, str]:
        return {bid: entry[0] for bid, entry in sorted(self.brokers.items())}


@dataclass
class SyncStateInfo:
    cluster: str
    broker_name: str
    master_epoch: int = 0
    sync_state_set_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    master_broker_id: int | None = None

    @property
    def first_time_for_elect(self) -> bool:
        return self.master_epoch == 0


class ReplicasState:
    """Both tables; `lock` is held by whoever reads or applies (the event scheduler reads, the log applier writes)."""

    def __init__(self) -> None:
        self.replica_info: dict[str, BrokerReplicaInfo] = {}
        self.sync_state: dict[str, SyncStateInfo] = {}
        self.lock = threading.RLock()

    def contains(self, broker_name: str) -> bool:
        return broker_name in self.replica_info and broker_name in self.sync_state

    def apply(self, event: dict) -> None:
        with self.lock:
            kind = event["eventType"]
            name = event["brokerName"]
            if kind == APPLY_BROKER_ID:
                self._apply_broker_id(event)
            elif not self.contains(name):
                return
            elif kind == ALTER_SYNC_STATE_SET:
                info = self.sync_state[name]
                info.sync_state_set = set(event["newSyncStateSet"])
                info.sync_state_set_epoch += 1
            elif kind == ELECT_MASTER:
                info = self.sync_state[name]
                if event["newMasterElected"]:
                    info.master_broker_id = event["newMasterBrokerId"]
                    info.master_epoch += 1
                    info.sync_state_set = {event["newMasterBrokerId"]}
                    info.sync_state_set_epoch += 1
                else:  # the old master is gone and nobody could be elected: keep the SyncStateSet
                    info.master_broker_id = None
                    info.master_epoch += 1
            elif kind == UPDATE_BROKER_ADDRESS:
                replica = self.replica_info[name]
                old = replica.brokers.get(event["brokerId"])
                if old is not None:
                    replica.brokers[event["brokerId"]] = (event["brokerAddress"], old[1])
            elif kind == CLEAN_BROKER_DATA:
                self._clean(name, event.get("brokerIdSetToClean"))

    def _apply_broker_id(self, event: dict) -> None:
        name = event["brokerName"]
        replica = self.replica_info.get(name)
        if replica is None or name not in self.sync_state:
            replica = BrokerReplicaInfo(event["clusterName"], name)
            self.replica_info[name] = replica
            self.sync_state[name] = SyncStateInfo(event["clusterName"], name)
        if event["newBrokerId"] not in replica.brokers:
            replica.brokers[event["newBrokerId"]] = (event["brokerAddress"], event["registerCheckCode"])
            replica.next_assign_broker_id += 1

    def _clean(self, name: str, ids: list[int] | None) -> None:
        if not ids:
            self.replica_info.pop(name, None)
            self.sync_state.pop(name, None)
            return
        for bid in ids:
            self.replica_info[name].brokers.pop(bid, None)
            self.sync_state[name].sync_state_set.discard(bid)
        if not self.replica_info[name].brokers:
            self.replica_info.pop(name, None)
        if not self.sync_state[name].sync_state_set:
            self.sync_state.pop(name, None)


def describe(event: dict) -> str:
    """The event's Java `toString` (controller log lines)."""
    kind = event["eventType"]
    if kind == ELECT_MASTER:
        return java_text("ElectMasterEvent", ("newMasterElected", event["newMasterElected"]),
                         ("brokerName", repr_q(event["brokerName"])), ("newMasterBrokerId", event.get("newMasterBrokerId")))
    if kind == ALTER_SYNC_STATE_SET:
        return java_text("AlterSyncStateSetEvent", ("brokerName", repr_q(event["brokerName"])),
                         ("newSyncStateSet", java_set(event["newSyncStateSet"])))
    if kind == APPLY_BROKER_ID:
        return java_text("ApplyBrokerIdEvent", ("clusterName", repr_q(event["clusterName"])),
                         ("brokerName", repr_q(event["brokerName"])), ("brokerAddress", repr_q(event["brokerAddress"])),
                         ("registerCheckCode", repr_q(event["registerCheckCode"])), ("newBrokerId", event["newBrokerId"]))
    if kind == UPDATE_BROKER_ADDRESS:
        return java_text("UpdateBrokerAddressEvent", ("clusterName", repr_q(event["clusterName"])),
                         ("brokerName", repr_q(event["brokerName"])), ("brokerAddress", repr_q(event["brokerAddress"])),
                         ("brokerId", event["brokerId"]))
    return java_text("CleanBrokerDataEvent", ("brokerName", repr_q(event["brokerName"])),
                     ("brokerIdSetToClean", java_set(event.get("brokerIdSetToClean"))))


def repr_q(value: object) -> str:
    """A Java string field as `toString` quotes it (`'x'`; null unquoted)."""
    return "null" if value is None else f"'{value}'"
