"""`RemotingClient`: one connection per address shared by all its users, and Java's `NettyRemotingClient.invokeSync`
semantics: the connection is made (or awaited) with its own connect timeout; if the budget is gone by then the call
fails with `invokeSync call timeout` before sending; otherwise it waits the remaining budget; a timeout closes the
connection when `clientCloseSocketIfTimeout` (default true), which fails the other requests in flight on it with
`RemotingSendRequestException`, as the recorded 4.9.1 clients saw (in deadline order: see `remoting.connection`).
Name-server calls pass `addr=None`."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from remoting.command import RemotingCommand
from remoting.connection import Connection, RequestHandler
from remoting.errors import (
    RemotingConnectException,
    RemotingSendRequestException,
    RemotingTimeoutException,
)

CONNECT_TIMEOUT_MS = 3000  # NettyClientConfig.connectTimeoutMillis
LOCK_TIMEOUT_S = 3.0  # NettyRemotingClient.LOCK_TIMEOUT_MILLIS

RpcHook = Callable[[str, RemotingCommand], None]


def now_ms() -> int:
    """Java's `System.currentTimeMillis()` granularity: whole milliseconds (of the monotonic clock), so budget checks
    such as `timeout < cost` compare as the Java client does (a send failed within the millisecond of its deadline
    still gets its next attempt, with 0 ms left)."""
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class TransportRules:
    """How a client version's `invokeSync` behaves where versions differ (see `remoting.profiles`)."""

    pre_send_timeout: str = "invokeSync call timeout"
    """Message of the RemotingTimeoutException when the budget is gone before sending; `{addr}` is filled in
    (4.9.1: `invokeSync call timeout`; 4.9.3 and 5.x: `invokeSync call the addr[{addr}] timeout`)."""
    timeout_when_nothing_left: bool = False
    """4.9.x fails before sending when `timeout < cost`; 5.x when `left <= 0`."""
    close_socket_if_timeout: bool = True
    min_close_left_ms: float | None = None
    """5.x only closes on a timeout when the wait was long enough: `left > 100 || left > timeout / 4`."""
    fail_inflight_on_eof: bool = False
    """5.x closes the channel on `channelInactive` (fails requests in flight at once); 4.9.x lets them time out."""
    connect_timeout_ms: int = CONNECT_TIMEOUT_MS


class RemotingClient:
    """Connections by address, `invoke_sync`, `invoke_oneway`. Thread-safe, gevent-safe."""

    def __init__(
        self,
        namesrv_addr: str | list[str] | None = None,
        rules: TransportRules | None = None,
        rpc_hook: RpcHook | None = None,
    ) -> None:
        if isinstance(namesrv_addr, str):
            namesrv_addr = [a.strip() for a in namesrv_addr.split(";") if a.strip()]
        self.namesrv_addrs: list[str] = list(namesrv_addr or [])
        self.rules = rules or TransportRules()
        self.rpc_hook = rpc_hook
        self._table: dict[str, Connection] = {}
        self._table_lock = threading.Lock()
        self._namesrv_chosen: str | None = None
        self._namesrv_index = 0
        self._namesrv_lock = threading.Lock()
        self._processors: dict[int, RequestHandler] = {}

    def register_processor(self, request_code: int, handler: RequestHandler) -> None:
        """`registerProcessor`: answer requests with this code that a server sends on any of this client's
        connections (present and future) with `handler(connection, request) -> response | None`, run on the
        connection's reader thread."""
        self._processors[int(request_code)] = handler

    # -- calls --------------------------------------------------------------------------------------------------

    def invoke_sync(self, addr: str | None, request: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send `request` to `addr` (None: a name server) and wait for its response, at most `timeout_ms` in all
        (plus the connect time, as in Java). Raises RemotingConnectException, RemotingSendRequestException,
        RemotingTimeoutException."""
        begin = now_ms()
        addr, conn = self._channel(addr)
        if conn is None or not conn.active:
            self._unusable(addr, conn)
        rules = self.rules
        left = timeout_ms
        try:
            if self.rpc_hook is not None:
                self.rpc_hook(addr, request)
            cost = now_ms() - begin
            left = timeout_ms - cost
            if left < 0 or (left == 0 and rules.timeout_when_nothing_left):
                raise RemotingTimeoutException(rules.pre_send_timeout.format(addr=addr), addr)
            closes = rules.close_socket_if_timeout and self._should_close(left, timeout_ms)
            return conn.invoke(request, left, shown_timeout_ms=round(left), closes_on_timeout=closes)
        except RemotingSendRequestException:
            self.close_channel(addr, conn)
            raise
        except RemotingTimeoutException:
            if rules.close_socket_if_timeout and self._should_close(left, timeout_ms):
                self.close_channel(addr, conn)
            raise

    def invoke_oneway(self, addr: str | None, request: RemotingCommand, timeout_ms: float = 3000) -> None:
        """Send a one-way request (flag RPC_ONEWAY set here) and wait for nothing."""
        addr, conn = self._channel(addr)
        if conn is None or not conn.active:
            self._unusable(addr, conn)
        request.flag |= 0x2
        if self.rpc_hook is not None:
            self.rpc_hook(addr, request)
        try:
            conn.send_oneway(request, timeout_ms)
        except RemotingSendRequestException:
            self.close_channel(addr, conn)
            raise

    def _unusable(self, addr: str, conn: Connection | None) -> None:
        """No usable connection: RemotingConnectException, or, for a connection that was made while this thread waited
        for it and closed before this thread ran (a JVM thread would have sent on it in between, and been failed by
        that close), RemotingSendRequestException at the close's time."""
        self.close_channel(addr, conn)
        if conn is not None and conn.closed_at is not None and conn.sock is not None:
            error: RemotingSendRequestException | RemotingConnectException = RemotingSendRequestException(addr, None)
            error.failed_at = conn.closed_at
            raise error
        raise RemotingConnectException(addr)

    def _should_close(self, left: float, timeout_ms: float) -> bool:
        limit = self.rules.min_close_left_ms
        return limit is None or left > limit or left > timeout_ms / 4

    # -- channels -----------------------------------------------------------------------------------------------

    def connection(self, addr: str) -> Connection | None:
        """The current connection to `addr`, if any (for tests and diagnostics)."""
        return self._table.get(addr)

    def _channel(self, addr: str | None) -> tuple[str, Connection | None]:
        if addr is None:
            return self._namesrv_channel()
        return addr, self._get_or_create(addr)

    def _get_or_create(self, addr: str) -> Connection | None:
        conn = self._table.get(addr)
        if conn is not None and conn.active:
            return conn
        return self._create(addr)

    def _create(self, addr: str) -> Connection | None:
        """`createChannel`: one connect per address at a time; others wait for it up to the connect timeout."""
        connect_s = self.rules.connect_timeout_ms / 1000.0
        mine = False
        if not self._table_lock.acquire(timeout=LOCK_TIMEOUT_S):
            return None
        try:
            conn = self._table.get(addr)
            if conn is not None and conn.active:
                return conn
            if conn is None or conn.connected.is_set():
                conn = Connection(addr, fail_inflight_on_eof=self.rules.fail_inflight_on_eof,
                                  request_handlers=self._processors)
                self._table[addr] = conn
                mine = True
        finally:
            self._table_lock.release()
        if mine:
            conn.connect(connect_s)
        elif not conn.connected.wait(connect_s):
            return None
        return conn  # possibly closed already: see `_unusable`

    def _namesrv_channel(self) -> tuple[str, Connection | None]:
        """`getAndCreateNameserverChannel`: keep the chosen name server while it works, else try the next ones."""
        chosen = self._namesrv_chosen
        if chosen is not None:
            conn = self._table.get(chosen)
            if conn is not None and conn.active:
                return chosen, conn
        addrs = self.namesrv_addrs
        if not addrs:
            raise RemotingConnectException("[]")
        with self._namesrv_lock:
            for _ in range(len(addrs)):
                self._namesrv_index += 1
                addr = addrs[self._namesrv_index % len(addrs)]
                self._namesrv_chosen = addr
                conn = self._get_or_create(addr)
                if conn is not None and conn.active:
                    return addr, conn
        raise RemotingConnectException("[" + ", ".join(addrs) + "]")

    def close_channel(self, addr: str, conn: Connection | None) -> None:
        """`closeChannel(addr, channel)`: drop it from the table if it is still the current one, and close it (unless
        a request whose timeout closes it has expired and its thread is still to see that: that thread closes it)."""
        if conn is None:
            return
        with self._table_lock:
            if self._table.get(addr) is conn:
                del self._table[addr]
        if not conn.expired_closer_pending():
            conn.close()

    def shutdown(self) -> None:
        """Close every connection."""
        with self._table_lock:
            conns = list(self._table.items())
            self._table.clear()
        for _, conn in conns:
            conn.close()
