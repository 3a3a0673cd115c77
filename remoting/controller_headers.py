"""Typed custom headers of the 5.x controller protocol (RIP-44): what brokers, `mqadmin` and the controllers put in
`extFields` for BROKER_HEARTBEAT (904), NOTIFY_BROKER_ROLE_CHANGED (1008) and the CONTROLLER_* requests (1001-1013).
Field names and order are the Java classes' under `remoting/.../protocol/header/controller/` and
`.../header/namesrv/BrokerHeartbeatRequestHeader.java` at rocketmq-all-5.3.0; `invokeTime` is sent as Java sends it
(the creation time in ms). Checked on the wire against a real 5.3.0 controller (docs/emulator.md)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from remoting.headers import CommandHeader


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (904), oneway, to every controller."""

    REQUIRED = frozenset({"clusterName", "brokerAddr", "brokerName"})
    clusterName: str | None = None
    brokerAddr: str | None = None
    brokerName: str | None = None
    brokerId: int | None = None
    epoch: int | None = None
    maxOffset: int | None = None
    confirmOffset: int | None = None
    heartbeatTimeoutMills: int | None = None
    electionPriority: int | None = None


@dataclass(slots=True)
class GetMetaDataResponseHeader(CommandHeader):
    """CONTROLLER_GET_METADATA_INFO (1005): the DLedger group, its leader and peers (`n0:ip:port;...;`)."""

    group: str | None = None
    controllerLeaderId: str | None = None
    controllerLeaderAddress: str | None = None
    isLeader: bool | None = False
    peers: str | None = None


@dataclass(slots=True)
class GetReplicaInfoRequestHeader(CommandHeader):
    """CONTROLLER_GET_REPLICA_INFO (1004)."""

    brokerName: str | None = None


@dataclass(slots=True)
class GetReplicaInfoResponseHeader(CommandHeader):
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: int | None = None


@dataclass(slots=True)
class AlterSyncStateSetRequestHeader(CommandHeader):
    """CONTROLLER_ALTER_SYNC_STATE_SET (1001), from the master; body SyncStateSet."""

    brokerName: str | None = None
    masterBrokerId: int | None = None
    masterEpoch: int | None = None
    invokeTime: int | None = field(default_factory=_now_ms)


@dataclass(slots=True)
class AlterSyncStateSetResponseHeader(CommandHeader):
    newSyncStateSetEpoch: int | None = 0


@dataclass(slots=True)
class ElectMasterRequestHeader(CommandHeader):
    """CONTROLLER_ELECT_MASTER (1002). brokerId -1 with designateElect false: triggered by the controller itself;
    a broker's own id: the broker asks to become master; designateElect true: `mqadmin electMaster`."""

    REQUIRED = frozenset({"clusterName", "brokerName", "brokerId", "designateElect"})
    clusterName: str | None = ""
    brokerName: str | None = ""
    brokerId: int | None = -1
    designateElect: bool | None = False
    invokeTime: int | None = field(default_factory=_now_ms)


@dataclass(slots=True)
class ElectMasterResponseHeader(CommandHeader):
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: int | None = None
    syncStateSetEpoch: int | None = None


@dataclass(slots=True)
class GetNextBrokerIdRequestHeader(CommandHeader):
    """CONTROLLER_GET_NEXT_BROKER_ID (1012)."""

    clusterName: str | None = None
    brokerName: str | None = None


@dataclass(slots=True)
class GetNextBrokerIdResponseHeader(CommandHeader):
    clusterName: str | None = None
    brokerName: str | None = None
    nextBrokerId: int | None = None


@dataclass(slots=True)
class ApplyBrokerIdRequestHeader(CommandHeader):
    """CONTROLLER_APPLY_BROKER_ID (1013); `registerCheckCode` is `<brokerAddr>;<ms>`."""

    clusterName: str | None = None
    brokerName: str | None = None
    appliedBrokerId: int | None = None
    registerCheckCode: str | None = None


@dataclass(slots=True)
class ApplyBrokerIdResponseHeader(CommandHeader):
    clusterName: str | None = None
    brokerName: str | None = None


@dataclass(slots=True)
class RegisterBrokerToControllerRequestHeader(CommandHeader):
    """CONTROLLER_REGISTER_BROKER (1003)."""

    clusterName: str | None = None
    brokerName: str | None = None
    brokerId: int | None = None
    brokerAddress: str | None = None
    invokeTime: int | None = field(default_factory=_now_ms)


@dataclass(slots=True)
class RegisterBrokerToControllerResponseHeader(CommandHeader):
    clusterName: str | None = None
    brokerName: str | None = None
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: int | None = None
    syncStateSetEpoch: int | None = None


@dataclass(slots=True)
class NotifyBrokerRoleChangedRequestHeader(CommandHeader):
    """NOTIFY_BROKER_ROLE_CHANGED (1008), oneway from the controller leader to each live broker of the set."""

    masterAddress: str | None = None
    masterEpoch: int | None = None
    syncStateSetEpoch: int | None = None
    masterBrokerId: int | None = None
