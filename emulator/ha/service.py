"""`HAService` of a master (and the holder of a slave's HA client): it accepts slave connections on haListenPort,
counts them, keeps the highest offset any slave acknowledged (`push2SlaveMaxOffset`), answers `isSlaveOK`
(`connectionCount > 0 && masterPutWhere - push2SlaveMaxOffset < haSlaveFallbehindMax`) and owns the group-transfer
service. It also measures how long the count stays at zero each time it drops there (a slave that reconnects at once
leaves a gap between the old connection's count-down and the new one's count-up, during which `isSlaveOK` is false).

The accept thread counts a connection as soon as `accept` returns, before its log line and the socket options, as
the JVM's constructor does. When the read-only slave reconnects, the old connection is counted out when its EOF is
read and the new one counted in when it is accepted; whichever comes first, the count can stand at zero for a moment,
and a put that meets it then is answered SLAVE_NOT_AVAILABLE. The real 4.9.1 master did exactly that at the first
reconnect of the loop, while the flood still put at full speed (0, 1, 0 and 4 such answers in four runs of
scenarios/slave-readonly-default.yaml, 62 in another; docs/fidelity.md). Python makes the moment longer (milliseconds
instead of microseconds under a busy interpreter); the emulator does not hide it: `haConnectionZero*` in the runtime
info show how long each one lasted."""
from __future__ import annotations

import socket
import threading
import time

from emulator.config.broker_config import bind_address
from emulator.durations import Durations
from emulator.ha.group_transfer import GroupTransferService
from emulator.logs import store_log
from emulator.server import close_socket, listen
from emulator.store.flush import GroupCommitRequest

HA_BACKLOG = 64


class HAService:
    def __init__(self, store) -> None:
        self.store = store
        self.config = store.config
        self.connection_count = 0
        self._connections: list = []
        self._lock = threading.Lock()
        self.push2slave_max_offset = 0
        self.group_transfer = GroupTransferService(self)
        self._writer_wakes: tuple = ()
        """the `Wakeup` of every connection's write side (a put raises each; no lock on the put path)"""
        self.client = self._initial_client()
        self._listener: socket.socket | None = None
        self._stopped = False
        self._zero_since_ns = 0
        self.zero_periods = Durations()
        """the times the count came back from zero after a connection had been counted out"""

    def _initial_client(self):
        from emulator.ha.client import HAClient

        return HAClient(self) if self.config.is_slave else None

    def _new_connection(self, sock: socket.socket, remote: tuple[str, int]):
        from emulator.ha.connection import HAConnection

        return HAConnection(self, sock, remote)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def start(self) -> None:
        self._listener = listen(bind_address(), self.config.get_int("haListenPort"), HA_BACKLOG)
        threading.Thread(target=self._accept, name="AcceptSocketService", daemon=True).start()
        self.group_transfer.start()
        if self.client is not None:
            self.client.start()

    def shutdown(self) -> None:
        self._stopped = True
        if self.client is not None:
            self.client.shutdown()
        if self._listener is not None:
            close_socket(self._listener)
        for conn in self.connections():
            conn.shutdown()
        self.group_transfer.shutdown()

    def _accept(self) -> None:
        store_log.info("AcceptSocketService service started")
        while not self._stopped:
            try:
                sock, remote = self._listener.accept()  # type: ignore[union-attr]
            except OSError:
                return
            self._count_up()
            store_log.info("HAService receive new connection, /%s:%d", remote[0], remote[1])
            try:
                conn = self._new_connection(sock, remote)
            except OSError as e:  # the peer went away before the socket options were set
                store_log.error("AcceptSocketService: new HAConnection failed, %s", e)
                sock.close()
                self.remove_connection(None)
                continue
            with self._lock:
                self._connections.append(conn)
            conn.start()

    def _count_up(self) -> None:
        """connectionCount + 1, closing a zero period if one is open."""
        with self._lock:
            self.connection_count += 1
            if self.connection_count == 1 and self._zero_since_ns:
                self.zero_periods.record(time.perf_counter_ns() - self._zero_since_ns)
                self._zero_since_ns = 0

    def remove_connection(self, conn, count_down: bool = True) -> None:
        """Forget `conn`; with `count_down`, connectionCount - 1 (the read side ending, as in Java)."""
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
            if count_down:
                self.connection_count -= 1
                if self.connection_count == 0:
                    self._zero_since_ns = time.perf_counter_ns()

    def connections(self) -> list:
        with self._lock:
            return list(self._connections)

    def is_slave_ok(self, master_put_where: int) -> bool:
        return self.connection_count > 0 and \
            master_put_where - self.push2slave_max_offset < self.config.get_int("haSlaveFallbehindMax")

    def notify_transfer_some(self, offset: int) -> None:
        with self._lock:
            if offset <= self.push2slave_max_offset:
                return
            self.push2slave_max_offset = offset
        self.group_transfer.notify_transfer_some()

    def put_request(self, request: GroupCommitRequest) -> None:
        self.group_transfer.put_request(request)
        self.wakeup_writers()

    def wakeup_writers(self) -> None:
        for wake in self._writer_wakes:
            wake.set()

    def add_writer(self, wake) -> None:
        with self._lock:
            self._writer_wakes = (*self._writer_wakes, wake)

    def remove_writer(self, wake) -> None:
        with self._lock:
            self._writer_wakes = tuple(w for w in self._writer_wakes if w is not wake)

    def slave_ack_offset(self) -> int:
        conns = self.connections()
        return max((c.slave_ack_offset for c in conns), default=-1)
