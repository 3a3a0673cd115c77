"""`AutoSwitchHAConnection` (rocketmq-all-5.3.0): a slave connected to a controller-mode master, speaking the epoch
protocol. The slave opens with a HANDSHAKE (`state 1 | flags: isSyncFromLastFile, isAsyncLearner (2+2) | slave
broker id (8)`); the master answers with its epoch file (`state | body size | max offset (8) | last epoch (4)`, then
`epoch (4) | start offset (8)` per entry) and waits for the slave's TRANSFER report (`state 2 | max offset (8)`),
sent after the slave truncated its log to the point both agree on. Then it transfers commitlog bytes in frames of
`state | size | offset (8) | epoch (4) | epoch start offset (8) | confirm offset (8)` + bytes, never across an
epoch's end, and heartbeats with empty frames every `haSendHeartbeatInterval`. Each report moves the slave's ack,
its caught-up time (when it reached what the master had when it last sent), the SyncStateSet (expansion) and the
confirm offset."""
from __future__ import annotations

import socket
import struct
import threading
import time

from emulator.autoswitch.ha_protocol import (
    EPOCH_ENTRY,
    HANDSHAKE,
    MASTER_HANDSHAKE,
    MASTER_TRANSFER,
    SHUTDOWN,
    SLAVE_HANDSHAKE,
    SLAVE_TRANSFER,
    STATE_NAMES,
    TRANSFER,
    now_ms,
)
from emulator.ha.connection import HAConnection
from emulator.logs import store_log
from emulator.safepoint import VM_STATE

SELECT_S = 1.0
WAIT_S = 0.010
IDLE_WAIT_S = 0.100


class AutoSwitchHAConnection(HAConnection):
    def __init__(self, ha, sock: socket.socket, remote: tuple[str, int]) -> None:
        """`ha`: the master's `AutoSwitchHAService` (which makes this connection for each slave that connects)."""
        super().__init__(ha, sock, remote)
        self.ha = ha
        self.state = HANDSHAKE
        self.slave_id = -1
        self.slave_sent_handshake = threading.Event()
        self.sync_from_last_file = False
        self.async_learner = False
        self.transfer_from_where = -1
        self.last_master_max_offset = -1
        self.last_transfer_ms = 0.0
        self._epoch = -1
        self._epoch_end = 0
        self._lock = threading.Lock()

    def _change_state(self, state: int) -> None:
        store_log.info("change state to %s", STATE_NAMES[state])
        self.state = state

    # --- slave -> master ----------------------------------------------------------------------------------------
    EOF_LINE = "processReadEvent error"
    READ_ERROR_LINE = "ReadSocketService service has exception. %s"

    def _read_ended(self) -> None:
        self.state = SHUTDOWN
        super()._read_ended()

    def _process_reports(self, buf: bytearray) -> None:
        while len(buf) >= SLAVE_TRANSFER.size:
            (state,) = struct.unpack_from(">i", buf)
            if state == HANDSHAKE:
                if len(buf) < SLAVE_HANDSHAKE.size:
                    return
                _, last_file, learner, slave_id = SLAVE_HANDSHAKE.unpack_from(buf)
                del buf[:SLAVE_HANDSHAKE.size]
                self.slave_id, self.sync_from_last_file, self.async_learner = slave_id, last_file == 1, learner == 1
                store_log.info("Receive slave handshake, slaveBrokerId:%d, isSyncFromLastFile:%s, isAsyncLearner:%s",
                               slave_id, _jbool(self.sync_from_last_file), _jbool(self.async_learner))
                self.slave_sent_handshake.set()
            elif state == TRANSFER:
                _, offset = SLAVE_TRANSFER.unpack_from(buf)
                del buf[:SLAVE_TRANSFER.size]
                self.slave_ack_offset = offset
                if self.slave_request_offset < 0:
                    self.slave_request_offset = offset
                self._maybe_expand(offset)
                self.ha.update_confirm_offset_when_slave_ack(self.slave_id)
                self.ha.notify_transfer_some(offset)
            else:
                store_log.error("Current state illegal %s", STATE_NAMES[self.state])
                raise OSError("illegal slave state")
            if state != self.state:
                store_log.warning("Master change state from %s to %s", STATE_NAMES[self.state], STATE_NAMES[state])
                self._change_state(state)

    def _maybe_expand(self, slave_max: int) -> None:
        with self._lock:
            if self.async_learner or slave_max < self.last_master_max_offset:
                return
            at = now_ms() if self.ha.store.max_phy_offset() == slave_max else self.last_transfer_ms
            self.ha.update_caught_up(self.slave_id, at)
            self.ha.maybe_expand(self.slave_id, slave_max)

    # --- master -> slave ----------------------------------------------------------------------------------------
    def _write(self) -> None:
        store_log.info("WriteSocketService service started")
        wake = self.data_wake
        self.ha.add_writer(wake)
        self.last_write = time.time()
        try:
            while not self._stopped:
                VM_STATE.poll()
                if self.state == HANDSHAKE:
                    if not self.slave_sent_handshake.wait(WAIT_S):
                        continue
                    self.slave_sent_handshake.clear()
                    self._send([self._handshake_frame()])
                elif self.state == TRANSFER:
                    if self.slave_request_offset == -1:
                        time.sleep(WAIT_S)
                        continue
                    if self.transfer_from_where == -1 and not self._start_transfer():
                        continue
                    self._transfer(wake)
                else:
                    break
        except OSError as e:
            if not self._stopped:
                store_log.error("WriteSocketService service has exception. %s", e)
        finally:
            self._stopped = True
            self.state = SHUTDOWN
            self.ha.remove_writer(wake)
            self.ha.remove_connection(self, count_down=False)
            self._close()
            store_log.info("WriteSocketService service end")

    def _handshake_frame(self) -> bytes:
        cache = self.ha.epoch_cache
        entries = cache.all_entries()
        max_offset = self.ha.store.max_phy_offset()
        store_log.info("Master build handshake header: maxEpoch:%d, maxOffset:%d, epochEntries:[%s]",
                       cache.last_epoch(), max_offset, ", ".join(str(e) for e in entries))
        body = b"".join(EPOCH_ENTRY.pack(e.epoch, e.start_offset) for e in entries)
        self.last_write = time.time()
        return MASTER_HANDSHAKE.pack(HANDSHAKE, len(body), max_offset, cache.last_epoch()) + body

    def _start_transfer(self) -> bool:
        store, config = self.ha.store, self.ha.config
        if self.slave_request_offset == 0:
            if self.sync_from_last_file:
                size = config.get_int("mappedFileSizeCommitLog")
                start = max(store.commitlog.max_offset() // size * size, 0)
            else:
                start = store.commitlog.min_offset()
        else:
            start = self.slave_request_offset
        if start == -1:  # an empty store: heartbeats only
            self._heartbeat_if_due(-1)
            time.sleep(0.5)
            return False
        entry = self.ha.epoch_cache.find_by_offset(start)
        if entry is None:
            store_log.error("Failed to find an epochEntry to match nextTransferFromWhere %d", start)
            self._heartbeat_if_due(start)
            time.sleep(0.5)
            return False
        self.transfer_from_where = start
        self._set_epoch(entry)
        store_log.info("Master transfer data to slave %s, from offset:%d, currentEpoch:%s", self.client_addr, start,
                       entry)
        return True

    def _set_epoch(self, entry) -> None:
        self._epoch = entry.epoch
        self._epoch_end = -1 if entry.epoch == self.ha.epoch_cache.last_epoch() else entry.end_offset

    def _frame(self, offset: int, size: int) -> bytes | None:
        cache = self.ha.epoch_cache
        entry = cache.get(self._epoch)
        if entry is None:
            if offset != -1 or self._epoch != -1 or size > 0:
                store_log.error("Failed to find epochEntry with epoch %d when build msg header", self._epoch)
            if size > 0:
                return None
            entry = cache.first_entry()
            if entry is None:
                return None
        confirm = self.ha.store.get_confirm_offset()
        return MASTER_TRANSFER.pack(TRANSFER, size, offset, entry.epoch, entry.start_offset, confirm)

    def _heartbeat_if_due(self, offset: int) -> None:
        if (time.time() - self.last_write) * 1000 > self.ha.config.get_int("haSendHeartbeatInterval"):
            frame = self._frame(offset, 0)
            if frame is not None:
                self._send([frame])
            self.last_write = time.time()

    def _transfer(self, wake) -> None:
        config = self.ha.config
        self._heartbeat_if_due(self.transfer_from_where)
        wake.clear()
        data = self.ha.store.commitlog.get_data(self.transfer_from_where, config.get_int("haTransferBatchSize"))
        if not data:
            self.ha.update_caught_up(self.slave_id, now_ms())
            wake.wait(IDLE_WAIT_S)
            return
        size = len(data)
        if self._epoch_end != -1 and self.transfer_from_where + size > self._epoch_end:
            nxt = self.ha.epoch_cache.next_entry(self._epoch)
            if nxt is None:
                store_log.error("Can't find a bigger epochEntry than epoch %d", self._epoch)
                time.sleep(0.1)
                return
            size = self._epoch_end - self.transfer_from_where
            self._set_epoch(nxt)
        offset = self.transfer_from_where
        frame = self._frame(offset, size)
        if frame is None:
            return
        self.transfer_from_where += size
        with self._lock:
            self.last_master_max_offset = self.ha.store.max_phy_offset()
            self.last_transfer_ms = now_ms()
        self._send([frame, data[:size]])
        self.last_write = time.time()


def _jbool(value: bool) -> str:
    return "true" if value else "false"
