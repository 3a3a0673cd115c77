"""The broker's calls to the controllers (`BrokerOuterAPI` at rocketmq-all-5.3.0): metadata and replica info
(`ControllerAdmin`'s calls), the id registration steps (CONTROLLER_GET_NEXT_BROKER_ID, CONTROLLER_APPLY_BROKER_ID,
CONTROLLER_REGISTER_BROKER), asking to become master (CONTROLLER_ELECT_MASTER with its own id), reporting a new
SyncStateSet (CONTROLLER_ALTER_SYNC_STATE_SET) and the oneway BROKER_HEARTBEAT to each controller. Every call waits
3 s; a non-SUCCESS answer raises MQBrokerException, a dead or frozen controller a RemotingError."""
from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.controller_admin import ControllerAdmin
from remoting.controller_bodies import SyncStateSet
from remoting.controller_headers import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from remoting.errors import MQBrokerException, RemotingError

REACHABLE_TIMEOUT_S = 1.0


class ControllerClient(ControllerAdmin):
    def __init__(self) -> None:
        super().__init__(RemotingClient())
        self._owns_client = True
        self.heartbeat_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="brokerOutApi_thread")

    def close(self) -> None:
        self.heartbeat_pool.shutdown(wait=False)
        super().close()

    @staticmethod
    def reachable(addr: str) -> bool:
        """`isAddressReachable`: a TCP connection can be made."""
        host, _, port = addr.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=REACHABLE_TIMEOUT_S):
                return True
        except (OSError, ValueError):
            return False

    def get_next_broker_id(self, leader: str, cluster: str, name: str) -> int:
        fields = GetNextBrokerIdRequestHeader(cluster, name).to_fields()
        response = self.ok(self.invoke(leader, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, fields), leader)
        return int(GetNextBrokerIdResponseHeader.from_fields(response.ext_fields).nextBrokerId or -1)

    def apply_broker_id(self, leader: str, cluster: str, name: str, broker_id: int, check_code: str) -> None:
        fields = ApplyBrokerIdRequestHeader(cluster, name, broker_id, check_code).to_fields()
        self.ok(self.invoke(leader, RequestCode.CONTROLLER_APPLY_BROKER_ID, fields), leader)

    def register_broker_to_controller(self, leader: str, cluster: str, name: str, broker_id: int,
                                      address: str) -> tuple[RegisterBrokerToControllerResponseHeader, SyncStateSet]:
        fields = RegisterBrokerToControllerRequestHeader(cluster, name, broker_id, address).to_fields()
        response = self.ok(self.invoke(leader, RequestCode.CONTROLLER_REGISTER_BROKER, fields), leader)
        return (RegisterBrokerToControllerResponseHeader.from_fields(response.ext_fields),
                SyncStateSet.decode(response.body))

    def broker_elect(self, leader: str, cluster: str, name: str,
                     broker_id: int) -> tuple[ElectMasterResponseHeader, set[int]]:
        """Ask to become master (`ElectMasterRequestHeader.ofBrokerTrigger`); CONTROLLER_MASTER_STILL_EXIST is an
        answer too (the current master)."""
        fields = ElectMasterRequestHeader(cluster, name, broker_id, False).to_fields()
        response = self.invoke(leader, RequestCode.CONTROLLER_ELECT_MASTER, fields)
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST):
            raise MQBrokerException(response.code, response.remark, leader)
        body = fastjson.loads(response.body) if response.body else {}
        return (ElectMasterResponseHeader.from_fields(response.ext_fields),
                {int(i) for i in body.get("syncStateSet") or ()})

    def alter_sync_state_set(self, leader: str, name: str, master_id: int, master_epoch: int, members: set[int],
                             epoch: int) -> SyncStateSet:
        fields = AlterSyncStateSetRequestHeader(name, master_id, master_epoch).to_fields()
        response = self.ok(self.invoke(leader, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, fields,
                                       SyncStateSet(members, epoch).encode()), leader)
        return SyncStateSet.decode(response.body)

    def send_heartbeat(self, addr: str, header: BrokerHeartbeatRequestHeader, timeout_ms: int) -> None:
        """Oneway, from the broker's outer-API pool (a frozen controller delays only its own heartbeat)."""
        def send() -> None:
            request = self.profile.request(RequestCode.BROKER_HEARTBEAT, header.to_fields())
            try:
                self.client.invoke_oneway(addr, request, timeout_ms)
            except RemotingError:
                pass

        self.heartbeat_pool.submit(send)
