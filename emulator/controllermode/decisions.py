"""What the controller leader decides for each request (`ReplicasInfoManager` at rocketmq-all-5.3.0): a
`ControllerResult` (response code, remark, header, body) and the events that, once the DLedger log has committed
them, change the state on every controller. Reads the state only; `alive(cluster, name, id)` is the heartbeat
manager's view. Codes and remarks are Apache's (`CONTROLLER_*` 2000-2016)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from emulator.controllermode import replicas as ev
from emulator.controllermode.elect_policy import AliveCheck, ElectPolicy
from emulator.controllermode.javatext import java_text
from emulator.controllermode.replicas import ReplicasState, repr_q
from emulator.logs import controller_log
from remoting.codes import ResponseCode
from remoting.controller_bodies import (
    ReplicaIdentity,
    ReplicasInfo,
    SyncStateSet,
    encode_elect_master_body,
    encode_replicas_info_table,
)


@dataclass
class ControllerResult:
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    header: dict[str, object] = field(default_factory=dict)
    header_name: str = ""
    body: bytes | None = None
    events: list[dict] = field(default_factory=list)

    def fail(self, code: int, remark: str) -> ControllerResult:
        self.code, self.remark = code, remark
        return self

    def describe(self) -> str:
        events = "[" + ", ".join(ev.describe(e) for e in self.events) + "]"
        response = java_text(self.header_name, *((k, repr_q(v) if isinstance(v, str) else v)
                                                 for k, v in self.header.items())) if self.header_name else "null"
        return f"ControllerResult{{events={events}, response={response}}}"


class Decisions:
    def __init__(self, state: ReplicasState, alive: AliveCheck, policy: ElectPolicy, unclean: Callable[[], bool]) -> None:
        self.state, self.alive, self.policy, self.unclean = state, alive, policy, unclean
        """`unclean()`: `enableElectUncleanMaster` now (UPDATE_CONTROLLER_CONFIG changes it live)"""

    def alter_sync_state_set(self, name: str, master_id: int | None, master_epoch: int | None,
                             new: SyncStateSet) -> ControllerResult:
        result = ControllerResult(header_name="AlterSyncStateSetResponseHeader", header={"newSyncStateSetEpoch": 0})
        if not self.state.contains(name):
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed")
        info, replica = self.state.sync_state[name], self.state.replica_info[name]
        if info.sync_state_set == new.sync_state_set:
            err = "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet"
            controller_log.warning("%s", err)
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, err)
        if info.master_broker_id is None or info.master_broker_id != master_id:
            err = (f"Rejecting alter syncStateSet request because the current leader is:{{{info.master_broker_id}}}, "
                   f"not {{{master_id}}}")
            controller_log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_INVALID_MASTER, err)
        if master_epoch != info.master_epoch:
            err = (f"Rejecting alter syncStateSet request because the current master epoch is:{{{info.master_epoch}}}"
                   f", not {{{master_epoch}}}")
            controller_log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH, err)
        if new.sync_state_set_epoch != info.sync_state_set_epoch:
            err = ("Rejecting alter syncStateSet request because the current syncStateSet epoch is:"
                   f"{{{info.sync_state_set_epoch}}}, not {{{new.sync_state_set_epoch}}}")
            controller_log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, err)
        for replica_id in sorted(new.sync_state_set):
            if replica_id not in replica.brokers:
                err = f"Rejecting alter syncStateSet request because the replicas {{{replica_id}}} don't exist"
                controller_log.error("%s", err)
                return result.fail(ResponseCode.CONTROLLER_INVALID_REPLICAS, err)
            if not self.alive(replica.cluster, name, replica_id):
                err = f"Rejecting alter syncStateSet request because the replicas {{{replica_id}}} don't alive"
                controller_log.error("%s", err)
                return result.fail(ResponseCode.CONTROLLER_BROKER_NOT_ALIVE, err)
        if info.master_broker_id not in new.sync_state_set:
            err = ("Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader "
                   f"{{{info.master_broker_id}}}")
            controller_log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, err)
        epoch = info.sync_state_set_epoch + 1
        result.header["newSyncStateSetEpoch"] = epoch
        result.body = SyncStateSet(set(new.sync_state_set), epoch).encode()
        result.events.append({"eventType": ev.ALTER_SYNC_STATE_SET, "brokerName": name,
                              "newSyncStateSet": sorted(new.sync_state_set)})
        return result

    def elect_master(self, cluster: str, name: str, broker_id: int | None, designate: bool) -> ControllerResult:
        result = ControllerResult(header_name="ElectMasterResponseHeader")
        if not self.state.contains(name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")
        info, replica = self.state.sync_state[name], self.state.replica_info[name]
        old_master = info.master_broker_id
        all_brokers = set(replica.brokers) if self.unclean() else None
        new_master = broker_id if info.first_time_for_elect else None
        if new_master is None or new_master == -1:
            prefer = broker_id if designate else None
            new_master = self.policy.elect(replica.cluster, name, set(info.sync_state_set), all_brokers, old_master,
                                           prefer)
        header = result.header
        if new_master is not None and new_master == old_master:
            err = (f"The old master {old_master} is still alive, not need to elect new master for broker "
                   f"{replica.broker_name}")
            controller_log.warning("%s", err)
            header.update(masterBrokerId=old_master, masterAddress=replica.address(old_master),
                          masterEpoch=info.master_epoch, syncStateSetEpoch=info.sync_state_set_epoch)
            result.body = encode_elect_master_body(set(info.sync_state_set))
            return result.fail(ResponseCode.CONTROLLER_MASTER_STILL_EXIST, err)
        if new_master is not None:
            header.update(masterBrokerId=new_master, masterAddress=replica.address(new_master),
                          masterEpoch=info.master_epoch + 1, syncStateSetEpoch=info.sync_state_set_epoch + 1)
            group = {"brokerAddrs": replica.id_table(), "brokerName": replica.broker_name, "cluster": replica.cluster}
            result.body = encode_elect_master_body({new_master}, group)
            result.events.append({"eventType": ev.ELECT_MASTER, "brokerName": name, "newMasterElected": True,
                                  "newMasterBrokerId": new_master})
            controller_log.info("Elect new master %d for broker %s", new_master, name)
            return result
        if broker_id is None or broker_id == -1:
            result.events.append({"eventType": ev.ELECT_MASTER, "brokerName": name, "newMasterElected": False,
                                  "newMasterBrokerId": None})
            result.fail(ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                        "Old master has down and failed to elect a new broker master")
        else:
            result.fail(ResponseCode.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")
        controller_log.warning("Failed to elect a new master for broker %s", name)
        return result

    def get_next_broker_id(self, cluster: str, name: str) -> ControllerResult:
        replica = self.state.replica_info.get(name)
        next_id = replica.next_assign_broker_id if replica else ev.FIRST_BROKER_CONTROLLER_ID
        return ControllerResult(header_name="GetNextBrokerIdResponseHeader",
                                header={"clusterName": cluster, "brokerName": name, "nextBrokerId": next_id})

    def apply_broker_id(self, cluster: str, name: str, broker_id: int, check_code: str) -> ControllerResult:
        result = ControllerResult(header_name="ApplyBrokerIdResponseHeader",
                                  header={"clusterName": cluster, "brokerName": name})
        event = {"eventType": ev.APPLY_BROKER_ID, "clusterName": cluster, "brokerName": name,
                 "brokerAddress": check_code.split(";")[0], "newBrokerId": broker_id, "registerCheckCode": check_code}
        replica = self.state.replica_info.get(name)
        if replica is None:
            if broker_id == ev.FIRST_BROKER_CONTROLLER_ID:
                result.events.append(event)
                return result
            return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                               f"Broker-set: {name} hasn't been registered in controller, but broker try to apply "
                               f"brokerId: {broker_id}")
        if broker_id not in replica.brokers or replica.brokers[broker_id][1] == check_code:
            result.events.append(event)
            return result
        return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                           f"Fail to apply brokerId: {broker_id} in broker-set: {name}")

    def register_broker(self, cluster: str, name: str, broker_id: int, address: str) -> ControllerResult:
        result = ControllerResult(header_name="RegisterBrokerToControllerResponseHeader",
                                  header={"clusterName": cluster, "brokerName": name})
        if not self.state.contains(name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                               f"Broker-set: {name} hasn't been registered in controller")
        info, replica = self.state.sync_state[name], self.state.replica_info[name]
        if broker_id not in replica.brokers:
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                               f"BrokerId: {broker_id} hasn't been registered in broker-set: {name}")
        master = info.master_broker_id
        if master is not None and self.alive(cluster, name, master):
            result.header.update(masterBrokerId=master, masterAddress=replica.address(master),
                                 masterEpoch=info.master_epoch, syncStateSetEpoch=info.sync_state_set_epoch)
        result.body = SyncStateSet(set(info.sync_state_set), info.sync_state_set_epoch).encode()
        if address != replica.address(broker_id):
            result.events.append({"eventType": ev.UPDATE_BROKER_ADDRESS, "clusterName": cluster, "brokerName": name,
                                  "brokerAddress": address, "brokerId": broker_id})
        return result

    def get_replica_info(self, name: str) -> ControllerResult:
        result = ControllerResult(header_name="GetReplicaInfoResponseHeader")
        if not self.state.contains(name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")
        info, replica = self.state.sync_state[name], self.state.replica_info[name]
        result.header.update(masterBrokerId=info.master_broker_id, masterAddress=replica.address(info.master_broker_id),
                             masterEpoch=info.master_epoch)
        result.body = SyncStateSet(set(info.sync_state_set), info.sync_state_set_epoch).encode()
        return result

    def get_sync_state_data(self, names: list[str]) -> ControllerResult:
        table: dict[str, ReplicasInfo] = {}
        for name in names:
            if not self.state.contains(name):
                continue
            info, replica = self.state.sync_state[name], self.state.replica_info[name]
            ins, outs = [], []
            for bid, addr in replica.id_table().items():
                identity = ReplicaIdentity(name, bid, addr, self.alive(replica.cluster, name, bid))
                (ins if bid in info.sync_state_set else outs).append(identity)
            table[name] = ReplicasInfo(info.master_broker_id, replica.address(info.master_broker_id),
                                       info.master_epoch, info.sync_state_set_epoch, ins, outs)
        return ControllerResult(body=encode_replicas_info_table(table))

    def scan_need_reelect(self) -> list[str]:
        """Broker sets whose master is not alive while another of their brokers is."""
        out = []
        for name, info in self.state.sync_state.items():
            master = info.master_broker_id
            if master is None or self.alive(info.cluster, name, master):
                continue
            ids = self.state.replica_info[name].brokers
            if any(self.alive(info.cluster, name, bid) for bid in ids):
                out.append(name)
        return out
