"""`AutoSwitchHAClient` (rocketmq-all-5.3.0): the slave's side of the epoch protocol (frames in
`ha_connection`). READY: cut any half-received message, then connect to the master's HA address (learned from the
name server's answer to REGISTER_BROKER). HANDSHAKE: send this broker's id, read the master's epoch file and
truncate this log to the consistent point (the newest epoch both files start at the same offset, up to the smaller
end: bytes an old master wrote that the new one never had are cut here), then report the offset. TRANSFER: append
the master's bytes, record a new epoch when a frame carries one, take the confirm offset, report each advance and
every `haSendHeartbeatInterval`. A frame that does not start at this log's end, or a master silent for
`haHousekeepingInterval`, closes the connection (READY again, 5 s later)."""
from __future__ import annotations

import socket
import threading
import time

from emulator.autoswitch.epoch_cache import EpochFileCache
from emulator.autoswitch.ha_protocol import (
    EPOCH_ENTRY,
    HANDSHAKE,
    MASTER_HANDSHAKE,
    MASTER_TRANSFER,
    READY,
    SHUTDOWN,
    SLAVE_HANDSHAKE,
    SLAVE_TRANSFER,
    STATE_NAMES,
    TRANSFER,
)
from emulator.ha.connection import connect
from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.server import close_socket
from remoting.controller_bodies import EpochEntry

SELECT_S = 1.0
CLOSE_WAIT_S = 5.0
JOIN_TIMEOUT_S = 90.0
"""`ServiceThread.getJoinTime()`"""


class AutoSwitchHAClient(threading.Thread):
    def __init__(self, ha, broker_id: int) -> None:
        super().__init__(name="AutoSwitchHAClient", daemon=True)
        self.ha, self.store, self.config = ha, ha.store, ha.config
        self.epoch_cache: EpochFileCache = ha.epoch_cache
        self.broker_id = broker_id
        self.master_address: str | None = None
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.state = READY
        self.received_epoch = -1
        self.reported = 0
        self.last_read_ms = time.time() * 1000
        self.last_write_ms = time.time() * 1000
        self._stopping = threading.Event()
        self._wake = threading.Event()

    @property
    def is_connected(self) -> bool:
        return self.sock is not None

    def update_master_address(self, addr: str | None) -> None:
        if addr != self.master_address:
            store_log.info("update master ha address, OLD: %s NEW: %s", self.master_address, addr)
            self.master_address = addr
            self._wake.set()

    def shutdown(self) -> None:
        """`ServiceThread.shutdown` (joins the thread, 90 s at most), then `closeMaster`: the round under way ends
        first, so frames already read are appended before the caller goes on (a new master's `changeToMaster` cuts
        a half-received message only when it comes after them)."""
        self._change_state(SHUTDOWN)
        self._stopping.set()
        self._wake.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(JOIN_TIMEOUT_S)
        self._close()

    def _change_state(self, state: int) -> None:
        store_log.info("change state to %s", STATE_NAMES[state])
        self.state = state

    def _wait(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def run(self) -> None:
        store_log.info("AutoSwitchHAClient service started")
        while not self._stopping.is_set():
            VM_STATE.poll()
            try:
                if self.state == READY:
                    offset = self.ha.truncate_invalid_msg()
                    if offset >= 0:
                        self.epoch_cache.truncate_suffix_by_offset(offset)
                    if not self._connect():
                        store_log.warning("AutoSwitchHAClient connect to master %s failed", self.master_address)
                        self._wait(CLOSE_WAIT_S)
                    continue
                if self.state == HANDSHAKE:
                    if not self._read_once(self._on_handshake):
                        self._close_and_wait()
                    continue
                if self.state != TRANSFER:
                    self._wait(CLOSE_WAIT_S)
                    continue
                if self._time_to_report() and not self._report(self.reported, "Slave report current offset %d"):
                    self._close_and_wait()
                    continue
                if not self._read_once(self._on_transfer) or not self._report_max():
                    self._close_and_wait()
                    continue
                if time.time() * 1000 - self.last_read_ms > self.config.get_int("haHousekeepingInterval"):
                    store_log.warning("AutoSwitchHAClient, housekeeping, found this connection[%s] expired, %d",
                                      self.master_address, time.time() * 1000 - self.last_read_ms)
                    self._close()
                    store_log.warning("AutoSwitchHAClient, master not response some time, so close connection")
            except (OSError, ValueError) as e:
                store_log.warning("AutoSwitchHAClient service has exception. %s", e)
                self._close_and_wait()
        store_log.info("AutoSwitchHAClient service end")

    # --- connection -------------------------------------------------------------------------------------------
    def _connect(self) -> bool:
        if self.sock is None and self.master_address:
            host, port = self.master_address.rsplit(":", 1)
            try:
                sock = connect(host, int(port), self.store.profile.ha_socket_buffer, 3)
            except OSError:
                sock = None
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(SELECT_S)
                self.sock, self.buf = sock, bytearray()
                store_log.info("AutoSwitchHAClient connect to master %s", self.master_address)
                self._change_state(HANDSHAKE)
                flags = (1 if self.config.get_bool("syncFromLastFile") else 0,
                         1 if self.config.get_bool("asyncLearner") else 0)
                sock.sendall(SLAVE_HANDSHAKE.pack(HANDSHAKE, *flags, self.broker_id))
                self.last_write_ms = time.time() * 1000
            self.reported = self.store.max_phy_offset()
            self.last_read_ms = time.time() * 1000
        return self.sock is not None

    def _close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            close_socket(sock)
            store_log.info("AutoSwitchHAClient close connection with master %s", self.master_address)
            if self.state != SHUTDOWN:
                self._change_state(READY)
            self.last_read_ms = 0
            self.buf = bytearray()

    def _close_and_wait(self) -> None:
        self._close()
        self._wait(CLOSE_WAIT_S)

    def _read_once(self, on_frames) -> bool:
        sock = self.sock
        if sock is None:
            return False
        try:
            data = sock.recv(4 * 1024 * 1024)
        except TimeoutError:
            return True
        if not data:
            store_log.info("Read socket < 0")
            return False
        self.last_read_ms = time.time() * 1000
        self.buf += data
        return on_frames()

    def _time_to_report(self) -> bool:
        return time.time() * 1000 - self.last_write_ms > self.config.get_int("haSendHeartbeatInterval")

    def _report(self, offset: int, line: str | None = None) -> bool:
        if line:
            store_log.info(line, offset)
        try:
            self.sock.sendall(SLAVE_TRANSFER.pack(TRANSFER, offset))  # type: ignore[union-attr]
        except (OSError, AttributeError):
            return False
        self.last_write_ms = time.time() * 1000
        return True

    def _report_max(self) -> bool:
        current = self.store.max_phy_offset()
        if current > self.reported:
            self.reported = current
            return self._report(current)
        return True

    # --- frames -----------------------------------------------------------------------------------------------
    def _on_handshake(self) -> bool:
        buf = self.buf
        if len(buf) < MASTER_HANDSHAKE.size:
            return True
        state, size, master_offset, _epoch = MASTER_HANDSHAKE.unpack_from(buf)
        if state != HANDSHAKE:
            store_log.error("State not matched, masterState:%s, slaveState:%s", STATE_NAMES[state],
                            STATE_NAMES[self.state])
            return False
        if len(buf) < MASTER_HANDSHAKE.size + size:
            return True
        body = bytes(buf[MASTER_HANDSHAKE.size:MASTER_HANDSHAKE.size + size])
        del buf[:MASTER_HANDSHAKE.size + size]
        entries = [EpochEntry(*EPOCH_ENTRY.unpack_from(body, i)) for i in range(0, size, EPOCH_ENTRY.size)]
        store_log.info("Receive handshake, masterMaxPosition %d, masterEpochEntries:[%s], try truncate log",
                       master_offset, ", ".join(str(e) for e in entries))
        if not self._truncate(entries, master_offset):
            store_log.error("AutoSwitchHAClient truncate log failed in handshake state")
            time.sleep(2)
            return False
        return self._on_transfer() if buf else True

    def _truncate(self, master_entries: list[EpochEntry], master_end: int) -> bool:
        store = self.store
        if not self.epoch_cache.entries:
            store_log.info("Slave local epochCache is empty, skip truncate log")
            self._change_state(TRANSFER)
            self.reported = 0
        else:
            master_cache = EpochFileCache.of(master_entries, master_end)
            local = self.epoch_cache.all_entries()
            local_cache = EpochFileCache.of(local, store.max_phy_offset())
            store_log.info("master epoch entries is [%s]", ", ".join(str(e) for e in master_cache.all_entries()))
            store_log.info("local epoch entries is [%s]", ", ".join(str(e) for e in local))
            offset = local_cache.find_consistent_point(master_cache)
            store_log.info("truncateOffset is %d", offset)
            if offset < 0:
                store_log.error("Failed to find a consistent point between masterEpoch:[%s] and slaveEpoch:[%s]",
                                ", ".join(str(e) for e in master_cache.all_entries()),
                                ", ".join(str(e) for e in local_cache.all_entries()))
                return False
            if not store.truncate_files(offset):
                store_log.error("Failed to truncate slave log to %d", offset)
                return False
            self.epoch_cache.truncate_suffix_by_offset(offset)
            store_log.info("Truncate slave log to %d success, change to transfer state", offset)
            self._change_state(TRANSFER)
            self.reported = offset
        return self._report_max()

    def _on_transfer(self) -> bool:
        buf = self.buf
        while len(buf) >= MASTER_TRANSFER.size:
            state, size, master_offset, epoch, epoch_start, confirm = MASTER_TRANSFER.unpack_from(buf)
            if state != self.state:
                store_log.error("State not matched, masterState:%s, slaveState:%s, bodySize:%d, offset:%d, "
                                "masterEpoch:%d", STATE_NAMES[state], STATE_NAMES[self.state], size, master_offset,
                                epoch)
                return False
            if len(buf) < MASTER_TRANSFER.size + size:
                break
            body = bytes(buf[MASTER_TRANSFER.size:MASTER_TRANSFER.size + size])
            del buf[:MASTER_TRANSFER.size + size]
            slave_offset = self.store.max_phy_offset()
            if slave_offset != 0 and slave_offset != master_offset:
                store_log.error("master pushed offset not equal the max phy offset in slave, SLAVE: %d MASTER: %d",
                                slave_offset, master_offset)
                return False
            if epoch != self.received_epoch:
                self.received_epoch = epoch
                self.epoch_cache.append(EpochEntry(epoch, epoch_start))
            if size > 0:
                self.store.append_to_commitlog(master_offset, body)
            self.store.confirm_offset = min(confirm, self.store.max_phy_offset())
            if not self._report_max():
                store_log.error("AutoSwitchHAClient report max offset to master failed")
                return False
        return True
