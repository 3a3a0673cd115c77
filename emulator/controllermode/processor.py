"""`ControllerRequestProcessor` (rocketmq-all-5.3.0) on the controller's DLedger peer port: BROKER_HEARTBEAT,
CONTROLLER_GET_METADATA_INFO and the config calls are answered by any controller; the others go through the
leader's event scheduler and wait for it (5 s). Codes, remarks and headers as a real 5.3.0 controller answered them
(docs/emulator.md); a request whose future was cancelled (the log did not commit) is answered SYSTEM_ERROR."""
from __future__ import annotations

from concurrent.futures import CancelledError

from emulator.config.properties import parse_properties
from emulator.controllermode.decisions import ControllerResult
from emulator.controllermode.manager import ControllerManager
from emulator.logs import controller_log
from emulator.server import NOT_SET, Channel, CodeTableProcessor
from remoting import fastjson
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.controller_bodies import SyncStateSet
from remoting.controller_headers import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)

WAIT_TIMEOUT_S = 5.0


class ControllerRequestProcessor(CodeTableProcessor[ControllerManager]):
    HANDLERS = {
        RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: "_alter_sync_state_set",
        RequestCode.CONTROLLER_ELECT_MASTER: "_elect_master",
        RequestCode.CONTROLLER_REGISTER_BROKER: "_register_broker",
        RequestCode.CONTROLLER_GET_REPLICA_INFO: "_get_replica_info",
        RequestCode.CONTROLLER_GET_METADATA_INFO: "_get_metadata",
        RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: "_get_sync_state_data",
        RequestCode.BROKER_HEARTBEAT: "_heartbeat",
        RequestCode.GET_CONTROLLER_CONFIG: "_get_config",
        RequestCode.UPDATE_CONTROLLER_CONFIG: "_update_config",
        RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: "_get_next_broker_id",
        RequestCode.CONTROLLER_APPLY_BROKER_ID: "_apply_broker_id",
    }

    def __init__(self, manager: ControllerManager) -> None:
        super().__init__(manager)
        self.controller = manager.controller
        self.decisions = manager.controller.decisions

    def _answer(self, channel: Channel, request: RemotingCommand, name: str, decide, is_write: bool) -> None:
        future = self.controller.append_event(name, decide, is_write)
        try:
            result: ControllerResult = future.result(timeout=WAIT_TIMEOUT_S)
        except (CancelledError, TimeoutError) as e:
            controller_log.error("process request: %s error, %s", request.code, type(e).__name__)
            channel.respond(request, ResponseCode.SYSTEM_ERROR, f"java.util.concurrent.{type(e).__name__}")
            return
        self.respond(channel, request, result)

    @staticmethod
    def respond(channel: Channel, request: RemotingCommand, result: ControllerResult) -> None:
        fields = None
        if result.header_name:
            fields = {k: ("true" if v else "false") if isinstance(v, bool) else str(v)
                      for k, v in result.header.items() if v is not None}
        channel.respond(request, result.code, result.remark, fields, result.body or b"")

    # --- scheduled (leader) requests ---------------------------------------------------------------------------
    def _alter_sync_state_set(self, channel: Channel, request: RemotingCommand) -> None:
        h = AlterSyncStateSetRequestHeader.from_fields(request.ext_fields)
        new = SyncStateSet.decode(request.body)
        self._answer(channel, request, "alterSyncStateSet",
                     lambda: self.decisions.alter_sync_state_set(h.brokerName or "", h.masterBrokerId, h.masterEpoch,
                                                                 new), True)

    def _elect_master(self, channel: Channel, request: RemotingCommand) -> None:
        h = ElectMasterRequestHeader.from_fields(request.ext_fields)
        future = self.controller.append_event(
            "electMaster", lambda: self.decisions.elect_master(h.clusterName or "", h.brokerName or "", h.brokerId,
                                                               bool(h.designateElect)), True)
        try:
            result: ControllerResult = future.result(timeout=WAIT_TIMEOUT_S)
        except (CancelledError, TimeoutError) as e:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, f"java.util.concurrent.{type(e).__name__}")
            return
        if result.code == ResponseCode.SUCCESS:
            self.ctx.notify_role_changed(result)
        self.respond(channel, request, result)

    def _register_broker(self, channel: Channel, request: RemotingCommand) -> None:
        h = RegisterBrokerToControllerRequestHeader.from_fields(request.ext_fields)
        self._answer(channel, request, "registerSuccess",
                     lambda: self.decisions.register_broker(h.clusterName or "", h.brokerName or "", h.brokerId,
                                                            h.brokerAddress or ""), True)

    def _get_replica_info(self, channel: Channel, request: RemotingCommand) -> None:
        h = GetReplicaInfoRequestHeader.from_fields(request.ext_fields)
        self._answer(channel, request, "getReplicaInfo", lambda: self.decisions.get_replica_info(h.brokerName or ""),
                     False)

    def _get_sync_state_data(self, channel: Channel, request: RemotingCommand) -> None:
        names = fastjson.loads(request.body) if request.body else None
        if not names:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, NOT_SET)
            return
        self._answer(channel, request, "getSyncStateData", lambda: self.decisions.get_sync_state_data(names), False)

    def _get_next_broker_id(self, channel: Channel, request: RemotingCommand) -> None:
        h = GetNextBrokerIdRequestHeader.from_fields(request.ext_fields)
        self._answer(channel, request, "getNextBrokerId",
                     lambda: self.decisions.get_next_broker_id(h.clusterName or "", h.brokerName or ""), False)

    def _apply_broker_id(self, channel: Channel, request: RemotingCommand) -> None:
        h = ApplyBrokerIdRequestHeader.from_fields(request.ext_fields)
        self._answer(channel, request, "applyBrokerId",
                     lambda: self.decisions.apply_broker_id(h.clusterName or "", h.brokerName or "",
                                                            int(h.appliedBrokerId or 0), h.registerCheckCode or ""),
                     True)

    # --- any controller -----------------------------------------------------------------------------------------
    def _get_metadata(self, channel: Channel, request: RemotingCommand) -> None:
        result = ControllerResult(header_name="GetMetaDataResponseHeader", header=self.controller.metadata())
        self.respond(channel, request, result)

    def _heartbeat(self, channel: Channel, request: RemotingCommand) -> None:
        h = BrokerHeartbeatRequestHeader.from_fields(request.ext_fields)
        if h.brokerId is None:
            channel.respond(request, ResponseCode.CONTROLLER_INVALID_REQUEST, "Heart beat with empty brokerId")
            return
        self.ctx.heartbeats.on_heartbeat(h.clusterName or "", h.brokerName or "", h.brokerAddr or "", h.brokerId,
                                         h.heartbeatTimeoutMills, channel, h.epoch, h.maxOffset,
                                         h.confirmOffset, h.electionPriority)
        channel.respond(request, ResponseCode.SUCCESS, "Heart beat success")

    def _get_config(self, channel: Channel, request: RemotingCommand) -> None:
        channel.respond(request, ResponseCode.SUCCESS, None, None, self.ctx.config.format_all().encode())

    def _update_config(self, channel: Channel, request: RemotingCommand) -> None:
        changes = parse_properties(request.body.decode("utf-8")) if request.body else {}
        black = set(self.ctx.config.values["configBlackList"].split(";")) | {"configStorePath", "rocketmqHome"}
        if black & set(changes):
            channel.respond(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            return
        self.ctx.config.values.update(changes)
        channel.respond(request, ResponseCode.SUCCESS)
