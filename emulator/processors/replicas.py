"""`AdminBrokerProcessor`'s 5.x replica codes: NOTIFY_BROKER_ROLE_CHANGED (1008, the controller leader's oneway
news of a new master: the replicas manager changes the role on this admin thread), GET_BROKER_EPOCH_CACHE (1007,
`mqadmin getBrokerEpoch`: the epoch file and max offset; SYSTEM_ERROR "this request only for controllerMode " outside
controller mode) and GET_BROKER_HA_STATUS (907, `mqadmin haStatus`)."""
from __future__ import annotations

import json

from emulator.logs import broker_log
from emulator.processors.context import BrokerContext
from emulator.server import Channel, CodeTableProcessor
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.controller_bodies import EpochEntryCache, SyncStateSet
from remoting.controller_headers import NotifyBrokerRoleChangedRequestHeader


class ReplicasProcessor(CodeTableProcessor[BrokerContext]):
    HANDLERS = {
        RequestCode.NOTIFY_BROKER_ROLE_CHANGED: "_role_changed",
        RequestCode.GET_BROKER_EPOCH_CACHE: "_epoch_cache",
        RequestCode.GET_BROKER_HA_STATUS: "_ha_status",
    }

    def _role_changed(self, channel: Channel, request: RemotingCommand) -> None:
        h = NotifyBrokerRoleChangedRequestHeader.from_fields(request.ext_fields)
        sync = SyncStateSet.decode(request.body)
        broker_log.info("Receive notifyBrokerRoleChanged request, try to change brokerRole, request:"
                        "NotifyBrokerRoleChangedRequestHeader{masterAddress='%s', masterEpoch=%s, syncStateSetEpoch=%s, "
                        "masterBrokerId=%s}", h.masterAddress, h.masterEpoch, h.syncStateSetEpoch, h.masterBrokerId)
        replicas = self.ctx.replicas
        if replicas is not None:
            replicas.change_broker_role(h.masterBrokerId, h.masterAddress, h.masterEpoch,  # type: ignore[attr-defined]
                                        h.syncStateSetEpoch, sync.sync_state_set)
        channel.respond(request, ResponseCode.SUCCESS)

    def _epoch_cache(self, channel: Channel, request: RemotingCommand) -> None:
        config, store = self.ctx.config, self.ctx.store
        if not config.controller_mode:
            channel.respond(request, ResponseCode.SYSTEM_ERROR, "this request only for controllerMode ")
            return
        cache = EpochEntryCache(config.get("brokerClusterName") or "", config.get("brokerName") or "",
                                config.get_int("brokerId"), store.ha.epoch_cache.all_entries(),  # type: ignore[attr-defined]
                                store.max_phy_offset())
        channel.respond(request, ResponseCode.SUCCESS, None, None, cache.encode())

    def _ha_status(self, channel: Channel, request: RemotingCommand) -> None:
        ha = self.ctx.store.ha
        info = ha.runtime_info() if hasattr(ha, "runtime_info") else _default_runtime_info(self.ctx)
        channel.respond(request, ResponseCode.SUCCESS, None, None, json.dumps(info, separators=(",", ":")).encode())


def _default_runtime_info(ctx: BrokerContext) -> dict:
    """`DefaultHAService.getRuntimeInfo` (5.x master/slave mode): a connection is in sync while its gap is under
    `haMaxGapNotInSync`."""
    store, ha = ctx.store, ctx.store.ha
    master_max = store.max_phy_offset()
    if ha.client is not None:
        return {"haClientRuntimeInfo": {"lastReadTimestamp": 0, "lastWriteTimestamp": 0,
                                        "masterAddr": ha.client.master_address or "", "masterFlushOffset": 0,
                                        "maxOffset": master_max, "transferredByteInSecond": 0},
                "haConnectionInfo": [], "inSyncSlaveNums": 0, "master": False, "masterCommitLogMaxOffset": 0}
    gap = ctx.config.get_int("haMaxGapNotInSync") if ctx.profile.is_5x else 256 * 1024 * 1024
    conns = [{"addr": c.client_addr[1:], "diff": master_max - c.slave_ack_offset,
              "inSync": master_max - c.slave_ack_offset < gap, "slaveAckOffset": c.slave_ack_offset,
              "transferFromWhere": -1, "transferredByteInSecond": 0} for c in ha.connections()]
    return {"haClientRuntimeInfo": {"lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0,
                                    "maxOffset": 0, "transferredByteInSecond": 0},
            "haConnectionInfo": conns, "inSyncSlaveNums": sum(1 for c in conns if c["inSync"]), "master": True,
            "masterCommitLogMaxOffset": master_max}
