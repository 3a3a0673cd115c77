"""`HAClient` of a slave: connects to the master's HA address (from `haMasterAddress` or the name server's answer to
REGISTER_BROKER), reports its max offset on connect (after `haSendHeartbeatInterval`), after every applied batch and
as a heartbeat; appends each batch to its commitlog whatever the append returns (4.9.x), and drops the connection
when a batch does not start at its own max offset, then reconnects."""
from __future__ import annotations

import socket
import struct
import threading
import time

from emulator.ha.connection import connect
from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.server import close_socket

READ_MAX_BUFFER_SIZE = 1024 * 1024 * 4
SELECT_S = 1.0
RECONNECT_WAIT_S = 5.0
_HEADER = struct.Struct(">qi")
_LONG = struct.Struct(">q")


class HAClient(threading.Thread):
    def __init__(self, ha) -> None:
        super().__init__(name="HAClient", daemon=True)
        self.ha = ha
        self.store = ha.store
        self.config = ha.config
        self.master_address: str | None = self.config.get("haMasterAddress") or None
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.current_reported = 0
        self.last_write = time.time()
        self._stopped = threading.Event()
        self.connected_once = False

    def update_master_address(self, addr: str) -> None:
        if addr and addr != self.master_address:
            store_log.info("update master address, OLD: %s NEW: %s", self.master_address, addr)
            self.master_address = addr

    def shutdown(self) -> None:
        self._stopped.set()
        self._close_master()

    @property
    def is_connected(self) -> bool:
        return self.sock is not None

    def run(self) -> None:
        store_log.info("HAClient service started")
        while not self._stopped.is_set():
            VM_STATE.poll()
            try:
                if not self._connect_master():
                    self._stopped.wait(RECONNECT_WAIT_S)
                    continue
                if self._time_to_report() and not self._report(self.current_reported):
                    self._close_master()
                    continue
                if not self._process_read():
                    self._close_master()
                if not self._report_plus():
                    continue
                # not only while connected, as 4.9.1: right after a close (last write reset to 0) the interval is
                # the epoch in ms, so the real slave logs this line once for every connection it loses
                interval = (time.time() - self.last_write) * 1000
                if interval > self.config.get_int("haHousekeepingInterval"):
                    store_log.warning("HAClient, housekeeping, found this connection[%s] expired, %d",
                                      self.master_address, interval)
                    self._close_master()
                    store_log.warning("HAClient, master not response some time, so close connection")
            except OSError as e:
                store_log.warning("HAClient service has exception. %s", e)
                self._close_master()
                self._stopped.wait(RECONNECT_WAIT_S)
        store_log.info("HAClient service end")

    def _connect_master(self) -> bool:
        if self.sock is None:
            addr = self.master_address
            if addr:
                host, port = addr.rsplit(":", 1)
                try:
                    sock = connect(host, int(port), self.store.profile.ha_socket_buffer, 3)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.settimeout(SELECT_S)
                    self.sock = sock
                    self.connected_once = True
                    store_log.info("HAClient connect to master %s", addr)
                except OSError as e:
                    store_log.warning("HAClient connect to master %s failed: %s", addr, e)
            self.current_reported = self.store.max_phy_offset()
            self.last_write = time.time()
        return self.sock is not None

    def _close_master(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            close_socket(sock)
            self.last_write = 0
            self.buf = bytearray()

    def _time_to_report(self) -> bool:
        return (time.time() - self.last_write) * 1000 > self.config.get_int("haSendHeartbeatInterval")

    def _report(self, offset: int) -> bool:
        sock = self.sock
        if sock is None:
            return False
        try:
            sock.sendall(_LONG.pack(offset))
        except OSError as e:
            store_log.error("HAClientreportSlaveMaxOffset this.socketChannel.write exception %s", e)
            return False
        self.last_write = time.time()
        return True

    def _report_plus(self) -> bool:
        current = self.store.max_phy_offset()
        if current > self.current_reported:
            self.current_reported = current
            if not self._report(current):
                self._close_master()
                store_log.error("HAClient, reportSlaveMaxOffset error, %d", current)
                return False
        return True

    def _process_read(self) -> bool:
        sock = self.sock
        if sock is None:
            return True
        try:
            data = sock.recv(READ_MAX_BUFFER_SIZE - len(self.buf))
        except TimeoutError:
            return True
        except OSError as e:
            store_log.info("HAClient, processReadEvent read socket exception %s", e)
            return False
        if not data:
            store_log.info("HAClient, processReadEvent read socket < 0")
            return False
        self.buf += data
        if not self._dispatch():
            store_log.error("HAClient, dispatchReadRequest error")
            return False
        return True

    def _dispatch(self) -> bool:
        buf = self.buf
        pos = 0
        ok = True
        while len(buf) - pos >= _HEADER.size:
            master_offset, size = _HEADER.unpack_from(buf, pos)
            slave_offset = self.store.max_phy_offset()
            if slave_offset != 0 and slave_offset != master_offset:
                store_log.error("master pushed offset not equal the max phy offset in slave, SLAVE: %d MASTER: %d",
                                slave_offset, master_offset)
                ok = False
                break
            if len(buf) - pos < _HEADER.size + size:
                break
            body = bytes(buf[pos + _HEADER.size : pos + _HEADER.size + size])
            self.store.append_to_commitlog(master_offset, body)
            pos += _HEADER.size + size
            if not self._report_plus():
                ok = False
                break
        del buf[:pos]
        return ok
