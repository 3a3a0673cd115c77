"""`HAService` of a master (and the holder of a slave's HA client): it accepts slave connections on haListenPort,
counts them, keeps the highest offset any slave acknowledged (`push2SlaveMaxOffset`), answers `isSlaveOK`
(`connectionCount > 0 && masterPutWhere - push2SlaveMaxOffset < haSlaveFallbehindMax`) and owns the group-transfer
service. It also measures how long the count stays at zero each time it drops there (a slave that reconnects at once
leaves a gap between the old connection's count-down and the new one's count-up, during which `isSlaveOK` is false).

The accept thread counts a connection as soon as `accept` returns, before its log line and the socket options:
the JVM's store log is asynchronous and its constructor takes microseconds, so the count-up follows the accept
at once; a synchronous Python log write would hand the GIL over first and widen the gap. On a loaded machine the
accept thread can still wait milliseconds for the GIL behind request threads (the JVM's would not), so `isSlaveOK` also
counts a connection the kernel has completed and the accept thread has not taken yet.

The other half of that gap is the slave's: a JVM's HAClient closes and connects again within a fraction of a
millisecond; ours, on a busy machine and at the replication cliff (when 64 producers get their last acknowledgements
and send again at once), took up to ~10 ms, and the puts of that burst met a zero count. The recorded 4.9.1 cluster
never answered SLAVE_NOT_AVAILABLE in that loop. So when the peer closed a connection (EOF or a socket error, not the
housekeeping expiry) and the count fell to zero, `isSlaveOK` keeps counting it for `RECONNECT_GRACE_S`, or until a
new connection is counted. A slave that is really gone (killed, link cut) is thus reported SLAVE_NOT_AVAILABLE that
much later than by a JVM."""
from __future__ import annotations

import select
import socket
import threading
import time

from emulator.config.broker_config import bind_address
from emulator.ha.group_transfer import GroupTransferService
from emulator.logs import store_log
from emulator.store.flush import GroupCommitRequest

RECONNECT_GRACE_S = 0.05
"""how long a slave connection closed by its peer still counts for `isSlaveOK` when it was the last one"""


class HAService:
    def __init__(self, store) -> None:
        from emulator.ha.client import HAClient

        self.store = store
        self.config = store.config
        self.connection_count = 0
        self._connections: list = []
        self._lock = threading.Lock()
        self.push2slave_max_offset = 0
        self.group_transfer = GroupTransferService(self)
        self.data_available = threading.Condition()
        self.client = HAClient(self) if self.config.is_slave else None
        self._listener: socket.socket | None = None
        self._stopped = False
        self._zero_since_ns = 0
        self._grace_until_ns = 0
        self.zero_periods = 0
        """times the count came back from zero after a connection had been counted out"""
        self.zero_last_ns = 0
        self.zero_max_ns = 0

    @property
    def stopped(self) -> bool:
        return self._stopped

    def start(self) -> None:
        port = self.config.get_int("haListenPort")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind_address(), port))
        sock.listen(64)
        self._listener = sock
        threading.Thread(target=self._accept, name="AcceptSocketService", daemon=True).start()
        self.group_transfer.start()
        if self.client is not None:
            self.client.start()

    def shutdown(self) -> None:
        self._stopped = True
        if self.client is not None:
            self.client.shutdown()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        for conn in self.connections():
            conn.shutdown()
        self.group_transfer.shutdown()

    def _accept(self) -> None:
        from emulator.ha.connection import HAConnection

        store_log.info("AcceptSocketService service started")
        while not self._stopped:
            try:
                sock, remote = self._listener.accept()  # type: ignore[union-attr]
            except OSError:
                return
            self._count_up()
            store_log.info("HAService receive new connection, /%s:%d", remote[0], remote[1])
            try:
                conn = HAConnection(self, sock, remote)
            except OSError as e:  # the peer went away before the socket options were set
                store_log.error("AcceptSocketService: new HAConnection failed, %s", e)
                sock.close()
                self.remove_connection(None, count_down=True)
                continue
            with self._lock:
                self._connections.append(conn)
            conn.start()

    def _count_up(self) -> None:
        """connectionCount + 1, closing a zero period (and its reconnect grace) if one is open."""
        with self._lock:
            self.connection_count += 1
            self._grace_until_ns = 0
            if self.connection_count == 1 and self._zero_since_ns:
                gap = time.perf_counter_ns() - self._zero_since_ns
                self._zero_since_ns = 0
                self.zero_periods += 1
                self.zero_last_ns = gap
                self.zero_max_ns = max(self.zero_max_ns, gap)

    def remove_connection(self, conn, count_down: bool, peer_closed: bool = False) -> None:
        """Forget `conn`; with `count_down`, connectionCount - 1. `peer_closed`: the slave closed it (it reconnects
        at once in the read-only loop), which opens the reconnect grace when the count reaches zero."""
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
            if count_down:
                self.connection_count -= 1
                if self.connection_count == 0:
                    self._zero_since_ns = time.perf_counter_ns()
                    self._grace_until_ns = (self._zero_since_ns + int(RECONNECT_GRACE_S * 1e9)) if peer_closed else 0

    def connections(self) -> list:
        with self._lock:
            return list(self._connections)

    def is_slave_ok(self, master_put_where: int) -> bool:
        connected = self.connection_count > 0 or time.perf_counter_ns() < self._grace_until_ns or \
            self._accept_pending()
        return connected and \
            master_put_where - self.push2slave_max_offset < self.config.get_int("haSlaveFallbehindMax")

    def _accept_pending(self) -> bool:
        """A slave connection the kernel has completed but the accept thread has not counted yet. The JVM's accept
        thread runs in parallel and counts it within microseconds; ours needs the interpreter lock first, which a busy
        request thread can hold for milliseconds on a loaded machine. Asked only when the count is zero."""
        listener = self._listener
        if listener is None or self._stopped:
            return False
        try:
            return bool(select.select([listener], [], [], 0)[0])
        except (OSError, ValueError):  # closed by shutdown meanwhile
            return False

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
        with self.data_available:
            self.data_available.notify_all()

    def wait_for_data(self, timeout_s: float) -> None:
        with self.data_available:
            self.data_available.wait(timeout_s)

    def slave_ack_offset(self) -> int:
        conns = self.connections()
        return max((c.slave_ack_offset for c in conns), default=-1)
