"""`HAConnection`: one slave connected to the master. Its read side takes the slave's 8-byte offset reports (the
first one is where the slave asks the transfer to start) and drops the connection after `haHousekeepingInterval`
without a report; its write side sends `offset(8) | size(4) | commitlog bytes` in batches of `haTransferBatchSize`,
and a header-only heartbeat every `haSendHeartbeatInterval`."""
from __future__ import annotations

import socket
import struct
import threading
import time

from emulator.logs import store_log
from emulator.safepoint import VM_STATE
from emulator.server import close_socket
from emulator.wakeup import Wakeup

READ_MAX_BUFFER_SIZE = 1024 * 1024
SELECT_S = 1.0
NO_REQUEST_SLEEP_S = 0.010
NO_DATA_WAIT_S = 0.100
_HEADER = struct.Struct(">qi")
_LONG = struct.Struct(">q")


def set_buffers(sock: socket.socket, size: int | None) -> None:
    """The version's HA socket buffers (`VersionProfile.ha_socket_buffer`); None leaves the kernel's."""
    if size:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)


def connect(host: str, port: int, size: int | None, timeout_s: float) -> socket.socket:
    """The slave's end of the HA link: buffers set before connecting, as RemotingUtil.connect does (the window scale
    is agreed in the handshake)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        set_buffers(sock, size)
        sock.settimeout(timeout_s)
        sock.connect((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class HAConnection:
    def __init__(self, ha, sock: socket.socket, remote: tuple[str, int]) -> None:
        self.ha = ha
        self.sock = sock
        self.client_addr = f"/{remote[0]}:{remote[1]}"
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self._stopped = False
        self.data_wake = Wakeup()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        set_buffers(sock, ha.store.profile.ha_socket_buffer)

    def start(self) -> None:
        threading.Thread(target=self._read, name="ReadSocketService", daemon=True).start()
        threading.Thread(target=self._write, name="WriteSocketService", daemon=True).start()

    def shutdown(self) -> None:
        self._stopped = True
        self._close()

    def _close(self) -> None:
        close_socket(self.sock)

    # --- slave -> master: offset reports ----------------------------------------------------------------------
    EOF_LINE = "read socket[{addr}] < 0"
    READ_ERROR_LINE = "processReadEvent exception %s"

    def _read(self) -> None:
        store_log.info("ReadSocketService service started")
        config = self.ha.config
        buf = bytearray()
        last_read = time.time()
        self.sock.settimeout(SELECT_S)
        try:
            while not self._stopped:
                try:
                    data = self.sock.recv(READ_MAX_BUFFER_SIZE)
                    VM_STATE.poll()
                    if not data:
                        store_log.error(self.EOF_LINE.format(addr=self.client_addr))
                        break
                    last_read = time.time()
                    buf += data
                    self._process_reports(buf)
                except TimeoutError:
                    pass
                interval = (time.time() - last_read) * 1000
                if interval > config.get_int("haHousekeepingInterval"):
                    store_log.warning("ha housekeeping, found this connection[%s] expired, %d", self.client_addr,
                                      interval)
                    break
        except OSError as e:
            store_log.error(self.READ_ERROR_LINE, e)
        finally:
            self._stopped = True
            self._read_ended()
            store_log.info("ReadSocketService service end")

    def _process_reports(self, buf: bytearray) -> None:
        """The slave's 8-byte offset reports (the last whole one counts; the first is where it asks to start)."""
        whole = len(buf) - len(buf) % 8
        if whole >= 8:
            (offset,) = _LONG.unpack_from(buf, whole - 8)
            del buf[:whole]
            self.slave_ack_offset = offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = offset
                store_log.info("slave[%s] request offset %d", self.client_addr, offset)
            self.ha.notify_transfer_some(offset)

    def _read_ended(self) -> None:
        self.ha.remove_connection(self)
        self._close()

    # --- master -> slave: commitlog bytes ------------------------------------------------------------------------
    def _write(self) -> None:
        store_log.info("WriteSocketService service started")
        store, config = self.ha.store, self.ha.config
        commitlog = store.commitlog
        last_write = time.time()
        next_from = -1
        wake = self.data_wake
        self.ha.add_writer(wake)
        try:
            while not self._stopped:
                VM_STATE.poll()
                if self.slave_request_offset == -1:
                    time.sleep(NO_REQUEST_SLEEP_S)
                    continue
                if next_from == -1:
                    if self.slave_request_offset == 0:
                        master = commitlog.max_offset()
                        next_from = max(0, master - master % config.get_int("mappedFileSizeCommitLog"))
                    else:
                        next_from = self.slave_request_offset
                    store_log.info("master transfer data from %d to slave[%s], and slave request %d", next_from,
                                   self.client_addr, self.slave_request_offset)
                if (time.time() - last_write) * 1000 > config.get_int("haSendHeartbeatInterval"):
                    self._send([_HEADER.pack(next_from, 0)])
                    last_write = time.time()
                wake.clear()  # a put from here on raises it again: the wait below cannot miss it
                data = commitlog.get_data(next_from, config.get_int("haTransferBatchSize"))
                if data:
                    self._send([_HEADER.pack(next_from, len(data)), data])
                    next_from += len(data)
                    last_write = time.time()
                else:
                    wake.wait(NO_DATA_WAIT_S)
        except OSError as e:
            if not self._stopped:
                store_log.error("WriteSocketService service has exception. %s", e)
        finally:
            self._stopped = True
            self.ha.remove_writer(wake)
            self.ha.remove_connection(self, count_down=False)
            self._close()
            store_log.info("WriteSocketService service end")


    def _send(self, parts: list[bytes]) -> None:
        """`parts` in gathered writes (no concatenated copy of up to `haTransferBatchSize` bytes), however long the
        slave takes to make room: 4.9.1's WriteSocketService writes a non-blocking channel and tries again, it never
        gives up on a full send buffer (5.x's AutoSwitchHAConnection keeps `lastWriteOver=false` and does the same). A slave that stopped reading (frozen, partitioned) is dropped by the read
        side's housekeeping after `haHousekeepingInterval`, which closes the socket and ends this wait. (The socket's
        1 s timeout is the read side's select; with `sendall` it ended the connection after 1 s of a full buffer.)"""
        views = [memoryview(p) for p in parts]
        while views:
            try:
                sent = self.sock.sendmsg(views)
            except TimeoutError:  # nothing taken within the timeout: the buffer is still full
                if self._stopped:
                    raise
                continue
            while views and sent >= len(views[0]):
                sent -= len(views[0])
                views.pop(0)
            if views:
                views[0] = views[0][sent:]
