"""Admin calls of the 5.x controller mode, as `mqadmin` makes them (`MQClientAPIImpl` at rocketmq-all-5.3.0):
`getControllerMetaData` (CONTROLLER_GET_METADATA_INFO, 1005, to any controller's DLedger peer port),
`getSyncStateSet` (CONTROLLER_GET_SYNC_STATE_DATA, 1006: first the metadata, then the leader), the replica info a
broker polls (CONTROLLER_GET_REPLICA_INFO, 1004), `electMaster` (CONTROLLER_ELECT_MASTER, 1002, admin trigger),
`updateControllerConfig` / `getControllerConfig` (1009 / 1010, to the controller named) and,
to a broker, `getBrokerEpoch` (GET_BROKER_EPOCH_CACHE, 1007) and `haStatus` (GET_BROKER_HA_STATUS, 907).
A non-SUCCESS answer raises `MQBrokerException(code, remark, addr)`; a controller that is not the leader answers
CONTROLLER_NOT_LEADER (2007) to everything but the metadata."""
from __future__ import annotations

from dataclasses import dataclass

from remoting import fastjson, javaprops
from remoting.broker_caller import BrokerCaller
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.controller_bodies import (
    EpochEntryCache,
    ReplicasInfo,
    SyncStateSet,
    decode_replicas_info_table,
)
from remoting.controller_headers import (
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
)
from remoting.errors import MQBrokerException
from remoting.profiles import ClientProfile

CONTROLLER_TIMEOUT_MS = 3000  # MQClientAPIImpl: every controller call waits 3000 ms


@dataclass(slots=True)
class ControllerMetadata:
    group: str | None
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    peers: str | None


@dataclass(slots=True)
class ReplicaInfo:
    """CONTROLLER_GET_REPLICA_INFO: the master and the SyncStateSet of one broker set."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set: SyncStateSet


class ControllerAdmin(BrokerCaller):
    """Typed controller-mode admin calls; `client` shares a connection pool."""

    def __init__(self, client: RemotingClient | None = None, *, profile: str | ClientProfile = "java-5.3",
                 timeout_ms: float = CONTROLLER_TIMEOUT_MS) -> None:
        super().__init__(client, profile, timeout_ms)

    def get_controller_metadata(self, controller_addr: str, timeout_ms: float | None = None) -> ControllerMetadata:
        """`mqadmin getControllerMetaData -a <controller>`."""
        response = self.ok(self.invoke(controller_addr, RequestCode.CONTROLLER_GET_METADATA_INFO,
                                       timeout_ms=timeout_ms), controller_addr)
        h = GetMetaDataResponseHeader.from_fields(response.ext_fields)
        return ControllerMetadata(h.group, h.controllerLeaderId, h.controllerLeaderAddress, bool(h.isLeader), h.peers)

    def leader_address(self, controller_addr: str) -> str:
        """The leader's address as `controller_addr` knows it (MQBrokerException when it knows none)."""
        leader = self.get_controller_metadata(controller_addr).leader_address
        if not leader:
            raise MQBrokerException(-1, f"controller {controller_addr} knows no leader", controller_addr)
        return leader

    def get_sync_state_data(self, controller_addr: str, broker_names: list[str],
                            timeout_ms: float | None = None) -> dict[str, ReplicasInfo]:
        """`mqadmin getSyncStateSet -a <controller> -b <brokerName>`: the metadata first, then the leader."""
        leader = self.leader_address(controller_addr)
        body = fastjson.dumps(list(broker_names)).encode()
        response = self.ok(self.invoke(leader, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, None, body, timeout_ms),
                           leader)
        return decode_replicas_info_table(response.body)

    def get_replica_info(self, controller_addr: str, broker_name: str,
                         timeout_ms: float | None = None) -> ReplicaInfo:
        """CONTROLLER_GET_REPLICA_INFO to `controller_addr` as given (a broker sends it to the leader it knows)."""
        fields = GetReplicaInfoRequestHeader(broker_name).to_fields()
        response = self.ok(self.invoke(controller_addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, fields,
                                       timeout_ms=timeout_ms), controller_addr)
        h = GetReplicaInfoResponseHeader.from_fields(response.ext_fields)
        return ReplicaInfo(h.masterBrokerId, h.masterAddress, int(h.masterEpoch or 0),
                           SyncStateSet.decode(response.body))

    def elect_master(self, controller_addr: str, cluster: str, broker_name: str, broker_id: int,
                     timeout_ms: float | None = None) -> ElectMasterResponseHeader:
        """`mqadmin electMaster`: designate `broker_id` as the master (through the leader)."""
        leader = self.leader_address(controller_addr)
        fields = ElectMasterRequestHeader(cluster, broker_name, broker_id, True).to_fields()
        response = self.ok(self.invoke(leader, RequestCode.CONTROLLER_ELECT_MASTER, fields, timeout_ms=timeout_ms),
                           leader)
        return ElectMasterResponseHeader.from_fields(response.ext_fields)

    def update_controller_config(self, controller_addr: str, properties: dict[str, object],
                                 timeout_ms: float | None = None) -> None:
        """`mqadmin updateControllerConfig`: UPDATE_CONTROLLER_CONFIG (1009) with `key=value` lines."""
        body = javaprops.dumps(properties).encode("utf-8")
        self.ok(self.invoke(controller_addr, RequestCode.UPDATE_CONTROLLER_CONFIG, None, body, timeout_ms),
                controller_addr)

    def get_controller_config(self, controller_addr: str, timeout_ms: float | None = None) -> dict[str, str]:
        """`mqadmin getControllerConfig`: GET_CONTROLLER_CONFIG (1010)."""
        response = self.ok(self.invoke(controller_addr, RequestCode.GET_CONTROLLER_CONFIG, timeout_ms=timeout_ms),
                           controller_addr)
        return javaprops.loads(response.body)

    def get_broker_epoch_cache(self, broker_addr: str, timeout_ms: float | None = None) -> EpochEntryCache:
        """`mqadmin getBrokerEpoch`: the broker's epoch entries and max offset."""
        response = self.ok(self.invoke(broker_addr, RequestCode.GET_BROKER_EPOCH_CACHE, timeout_ms=timeout_ms),
                           broker_addr)
        return EpochEntryCache.decode(response.body)

    def get_broker_ha_status(self, broker_addr: str, timeout_ms: float | None = None) -> dict:
        """`mqadmin haStatus`: the broker's HARuntimeInfo as a dict (`master`, `inSyncSlaveNums`,
        `haConnectionInfo`, `haClientRuntimeInfo`)."""
        response = self.ok(self.invoke(broker_addr, RequestCode.GET_BROKER_HA_STATUS, timeout_ms=timeout_ms),
                           broker_addr)
        return fastjson.loads(response.body)
