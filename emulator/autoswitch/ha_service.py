"""`AutoSwitchHAService` (rocketmq-all-5.3.0): the HA service of a broker in controller mode, master or slave as the
controller says. It keeps the epoch file, this broker's view of the SyncStateSet (and, while a change is being
reported to the controller, the proposed set: puts and confirm offsets count the union), each slave's last
caught-up time, and the confirm offset (the smallest offset every SyncStateSet member acknowledged: the reput
service dispatches, and consumers see, only up to it). A slave whose last caught-up time is older than
`haMaxTimeSlaveNotCatchup` (15 s) is dropped from the set at the next check, one that disconnects at once, and one
that reaches the confirm offset within the current epoch is added back. With `allAckInSyncStateSet` a put waits
for every member of the set."""
from __future__ import annotations

import socket
import threading
import time

from emulator.autoswitch.epoch_cache import EpochFileCache
from emulator.autoswitch.ha_protocol import now_ms
from emulator.controllermode.javatext import java_set
from emulator.ha.service import HAService
from emulator.logs import store_log
from emulator.store.flush import GroupCommitRequest
from remoting.controller_bodies import EpochEntry


class AutoSwitchHAService(HAService):
    def __init__(self, store) -> None:
        self.epoch_cache = EpochFileCache(store.config.epoch_file())
        self.sync_state_set: set[int] = set()
        self.remote_sync_state_set: set[int] = set()
        self.synchronizing = False
        self.caught_up_ms: dict[int, float] = {}
        self.local_broker_id: int | None = None
        self.listeners: list = []
        self._sss_lock = threading.RLock()
        super().__init__(store)

    def _initial_client(self):
        return None  # a slave's client is made when the controller makes this broker a slave

    def _new_connection(self, sock: socket.socket, remote: tuple[str, int]):
        from emulator.autoswitch.ha_connection import AutoSwitchHAConnection

        return AutoSwitchHAConnection(self, sock, remote)

    # --- role changes -----------------------------------------------------------------------------------------
    def _stale(self, epoch: int, role: str) -> bool:
        last = self.epoch_cache.last_epoch()
        if epoch < last:
            store_log.warning("newMasterEpoch %d < lastEpoch %d, fail to change to %s", epoch, last, role)
            return True
        return False

    def _append_epoch(self, epoch: int) -> EpochEntry:
        """A new epoch starting at this log's end (an entry for this epoch or a later one is replaced)."""
        entry = EpochEntry(epoch, self.store.max_phy_offset())
        if self.epoch_cache.last_epoch() >= epoch:
            self.epoch_cache.truncate_suffix_by_epoch(epoch)
        self.epoch_cache.append(entry)
        return entry

    def change_to_master(self, epoch: int) -> bool:
        if self._stale(epoch, "master"):
            return False
        self.destroy_connections()
        if self.client is not None:
            self.client.shutdown()
            self.client = None
        truncate_offset = self.truncate_invalid_msg()
        store = self.store
        store.confirm_offset = self.compute_confirm_offset()
        if truncate_offset >= 0:
            self.epoch_cache.truncate_suffix_by_offset(truncate_offset)
        entry = self._append_epoch(epoch)
        while store.reput.behind() > 0 and not self.stopped:  # waiting for the consume queues' dispatch
            time.sleep(0.1)
        store_log.info("TruncateOffset is %d, confirmOffset is %d, maxPhyOffset is %d", truncate_offset,
                       store.get_confirm_offset(), store.max_phy_offset())
        store.recover_topic_queue_table()
        store_log.info("Change ha to master success, newMasterEpoch:%d, startOffset:%d", epoch, entry.start_offset)
        return True

    def change_to_slave(self, master_addr: str, epoch: int, slave_id: int) -> bool:
        from emulator.autoswitch.ha_client import AutoSwitchHAClient

        if self._stale(epoch, "slave"):
            return False
        self.destroy_connections()
        if self.client is not None:
            self.client.shutdown()
        self.client = AutoSwitchHAClient(self, slave_id)
        self.client.master_address = None
        self.client.start()
        store_log.info("Change ha to slave success, newMasterAddress:%s, newMasterEpoch:%d", master_addr, epoch)
        return True

    def change_to_master_when_last_role_is_master(self, epoch: int) -> bool:
        if self._stale(epoch, "master"):
            return False
        entry = self._append_epoch(epoch)
        store_log.info("Change ha to master success, last role is master, newMasterEpoch:%d, startOffset:%d", epoch,
                       entry.start_offset)
        return True

    def destroy_connections(self) -> None:
        for conn in self.connections():
            conn.shutdown()

    # --- SyncStateSet -----------------------------------------------------------------------------------------
    def set_sync_state_set(self, members: set[int]) -> None:
        with self._sss_lock:
            self.synchronizing = False
            self.sync_state_set = set(members)
            self.store.confirm_offset = self.compute_confirm_offset()
        self.group_transfer.notify_transfer_some()

    def get_sync_state_set(self) -> set[int]:
        """The union of the local set and the one being reported, while a report is under way."""
        with self._sss_lock:
            return self.sync_state_set | self.remote_sync_state_set if self.synchronizing else set(self.sync_state_set)

    def _mark_synchronizing(self, members: set[int]) -> None:
        with self._sss_lock:
            self.synchronizing = True
            self.remote_sync_state_set = set(members)

    def in_sync_replicas_nums(self) -> int:
        with self._sss_lock:
            if self.synchronizing:
                return max(len(self.sync_state_set), len(self.remote_sync_state_set))
            return len(self.sync_state_set)

    def notify_sync_state_set_changed(self, members: set[int]) -> None:
        for listener in self.listeners:
            threading.Thread(target=listener, args=(set(members),), name="AutoSwitchHAService_Executor_1",
                             daemon=True).start()
        store_log.info("Notify the syncStateSet has been changed into %s.", java_set(members))

    def maybe_shrink(self) -> set[int]:
        members = set(self.sync_state_set)
        changed = False
        limit = self.config.get_int("haMaxTimeSlaveNotCatchup")
        for slave_id, caught_up in list(self.caught_up_ms.items()):
            if slave_id in members and now_ms() - caught_up > limit:
                members.discard(slave_id)
                changed = True
        for slave_id in list(members):
            if slave_id != self.local_broker_id and slave_id not in self.caught_up_ms:
                members.discard(slave_id)
                changed = True
        if changed:
            self._mark_synchronizing(members)
        return members

    def maybe_expand(self, slave_id: int, slave_max_offset: int) -> None:
        members = set(self.sync_state_set)
        if slave_id in members:
            return
        confirm = self.store.get_confirm_offset()
        last = self.epoch_cache.last_entry()
        if slave_max_offset >= confirm and last is not None and slave_max_offset >= last.start_offset:
            store_log.info("The slave %d has caught up, slaveMaxOffset: %d, confirmOffset: %d, epoch: %d, leader epoch "
                           "startOffset: %d.", slave_id, slave_max_offset, confirm, last.epoch, last.start_offset)
            members.add(slave_id)
            self._mark_synchronizing(members)
            self.notify_sync_state_set_changed(members)

    def update_caught_up(self, slave_id: int, at_ms: float) -> None:
        self.caught_up_ms[slave_id] = max(self.caught_up_ms.get(slave_id, 0.0), at_ms)

    def remove_connection(self, conn, count_down: bool = True) -> None:
        if not self.store.shutdown_flag and conn in self.connections():
            members = set(self.sync_state_set)
            if conn.slave_id in members:
                members.discard(conn.slave_id)
                self._mark_synchronizing(members)
                self.notify_sync_state_set_changed(members)
        super().remove_connection(conn, count_down)

    # --- confirm offset and acks ------------------------------------------------------------------------------
    def compute_confirm_offset(self) -> int:
        members = self.get_sync_state_set()
        confirm = self.store.max_phy_offset()
        conns = self.connections()
        ids = {c.slave_id for c in conns}
        for member in members:
            if member not in ids and self.local_broker_id is not None and member != self.local_broker_id:
                store_log.warning("Slave %d is still in syncStateSet, but has lost its connection. So new offset can't "
                                  "be compute.", member)
                return self.store.confirm_offset
        for conn in conns:
            if conn.slave_id in members and conn.slave_ack_offset > 0:
                confirm = min(confirm, conn.slave_ack_offset)
        return confirm

    def get_confirm_offset(self) -> int:
        """`CommitLog.getConfirmOffset` in controller mode: a master (not fenced) confirms everything while it is
        alone in the set or without `allAckInSyncStateSet`; otherwise the last computed value."""
        store = self.store
        if not store.config.is_slave and not store.fenced:
            if len(self.sync_state_set) == 1 or not self.config.get_bool("allAckInSyncStateSet"):
                return store.max_phy_offset()
            if store.confirm_offset < 0:
                store.confirm_offset = self.compute_confirm_offset()
                store_log.info("Init the confirmOffset to %d.", store.confirm_offset)
        return store.confirm_offset

    def update_confirm_offset_when_slave_ack(self, slave_id: int) -> None:
        with self._sss_lock:
            if slave_id in self.sync_state_set:
                self.store.confirm_offset = self.compute_confirm_offset()

    def all_acked(self, req: GroupCommitRequest) -> bool:
        """`allAckInSyncStateSet`: every member of the set (the proposed one too, while it is being reported) holds
        the request's offset; a set of the master alone needs nobody."""
        members = self.get_sync_state_set()
        if len(members) <= 1:
            return True
        acks = 1 + sum(1 for c in self.connections()
                       if c.slave_id in members and c.slave_ack_offset >= req.next_offset)
        return acks >= len(members)

    # --- slave: invalid bytes ---------------------------------------------------------------------------------
    def truncate_invalid_msg(self) -> int:
        """Cut bytes after the last whole message the reput service has not dispatched yet (a half-received
        batch); -1 when dispatch is complete."""
        store = self.store
        if store.dispatch_behind_bytes() <= 0:
            store_log.info("Dispatch complete, skip truncate")
            return -1
        offset = store.last_valid_offset_from(store.reput.reput_from)
        store_log.info("Truncate commitLog to %d", offset)
        store.truncate_dirty_files(offset)
        return offset

    def runtime_info(self) -> dict:
        """GET_BROKER_HA_STATUS's HARuntimeInfo."""
        master_max = self.store.max_phy_offset()
        if self.store.config.is_slave:
            client = self.client
            return {"haClientRuntimeInfo": {
                "lastReadTimestamp": int(client.last_read_ms) if client else 0,
                "lastWriteTimestamp": int(client.last_write_ms) if client else 0,
                **({"masterAddr": client.master_address} if client and client.master_address else {}),
                "masterFlushOffset": 0, "maxOffset": master_max, "transferredByteInSecond": 0},
                "haConnectionInfo": [], "inSyncSlaveNums": 0, "master": False, "masterCommitLogMaxOffset": 0}
        members = set(self.sync_state_set)
        conns = [{"addr": c.client_addr[1:], "diff": master_max - c.slave_ack_offset, "inSync": c.slave_id in members,
                  "slaveAckOffset": c.slave_ack_offset, "transferFromWhere": c.transfer_from_where,
                  "transferredByteInSecond": 0} for c in self.connections()]
        return {"haClientRuntimeInfo": {"lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0,
                                        "maxOffset": 0, "transferredByteInSecond": 0},
                "haConnectionInfo": conns, "inSyncSlaveNums": max(len(members) - 1, 0), "master": True,
                "masterCommitLogMaxOffset": master_max}
