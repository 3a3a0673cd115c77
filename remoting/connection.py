"""One TCP connection to a name server or broker (Java: a Netty channel) with its table of requests in flight,
matched to responses by opaque. Works with plain threads and under gevent monkey-patching alike: it only uses
`socket`, `threading` and `time`, a reader thread (a greenlet under gevent) per connection, and a lock per request
as its wait handle.

What happens to requests in flight follows `NettyRemotingAbstract` / `NettyRemotingClient`:
- closed by us (`close()`, e.g. after a sync timeout) or failed on a read/decode error: every request in flight
  fails at once with "send failed" (Java's `failFast` → `RemotingSendRequestException`);
- a timeout that closes the connection takes effect at its deadline, as the JVM's close follows the expiry within
  microseconds: a request whose own deadline comes later fails "send failed" even when its thread wakes first (with
  the GIL, threads whose deadlines lie a few milliseconds apart wake in any order, and every one of them would
  otherwise time out on its own: a storm of call timeouts where the Java client sees one timeout and failed sends);
  such a connection leaves the client's table at once (later requests get a new one, as after Java's close) and is
  closed by the thread of the expired request, which still times out;
- closed by the peer (EOF): with `fail_inflight_on_eof` False (4.9.x, whose client handler has no
  `channelInactive`) requests in flight just wait out their timeouts; with True (5.x) they fail at once."""
from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from remoting import codec
from remoting.codes import RPC_TYPE_RESPONSE, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingCommandException, RemotingSendRequestException, RemotingTimeoutException

RequestHandler = Callable[["Connection", RemotingCommand], "RemotingCommand | None"]
"""A processor of server-initiated requests: (connection, request) -> response or None."""
RECV_BYTES = 256 * 1024
WRITE_STALL_TIMEOUT_S = 3.0
"""A single frame write that makes no headway for this long (peer not reading, buffers full) fails the connection;
Netty would queue it instead, but a blocked writer must never hang its caller."""
SOCKET_BUFFER_BYTES = 128 * 1024  # NettyClientConfig clientSocketSndBufSize / clientSocketRcvBufSize


def _gevent_patched() -> bool:
    """Whether gevent has patched `socket` (one thread then runs every greenlet)."""
    try:
        from gevent import monkey
    except ImportError:  # pragma: no cover - gevent comes with locust
        return False
    return monkey.is_module_patched("socket")


def _gevent_yield() -> Callable[[], None] | None:
    """`gevent.sleep(0)` when gevent has patched `socket`, else None (and gevent's hub API bound for
    `GreenResponseFuture`)."""
    global _get_hub, _Waiter, _os_get_ident
    if not _gevent_patched():
        return None
    from gevent import monkey, sleep
    from gevent.hub import Waiter, get_hub

    _get_hub, _Waiter = get_hub, Waiter
    _os_get_ident = monkey.get_original("_thread", "get_ident")
    return lambda: sleep(0)


_get_hub = _Waiter = None
_os_get_ident: Callable[[], int] | None = None
"""The OS thread's id (`threading.get_ident` is the greenlet's once gevent patched `threading`)."""


class _Future:
    """What a request's wait handle holds: completed at most once, by whoever pops it from the connection's
    table (Java `ResponseFuture`); the subclasses differ in how the waiter waits."""

    __slots__ = ("opaque", "deadline", "closes", "response", "send_ok", "cause", "done_at")

    def __init__(self, opaque: int, deadline: float = float("inf"), closes: bool = False) -> None:
        self.opaque = opaque
        self.deadline = deadline
        self.closes = closes
        self.response: RemotingCommand | None = None
        self.send_ok = True
        self.cause: BaseException | None = None
        self.done_at = 0.0

    def _settle(self, response: RemotingCommand | None, send_ok: bool, cause: BaseException | None,
                at: float | None) -> None:
        self.response = response
        self.send_ok = send_ok
        self.cause = cause
        self.done_at = time.monotonic() if at is None else at


class ResponseFuture(_Future):
    """The wait handle with plain threads: a lock held until completion."""

    __slots__ = ("_lock",)

    def __init__(self, opaque: int, deadline: float = float("inf"), closes: bool = False) -> None:
        super().__init__(opaque, deadline, closes)
        self._lock = threading.Lock()
        self._lock.acquire()

    def complete(self, response: RemotingCommand | None, send_ok: bool = True,
                 cause: BaseException | None = None, at: float | None = None) -> None:
        self._settle(response, send_ok, cause, at)
        self._lock.release()

    def wait_until(self, deadline: float) -> bool:
        """Wait until completed or `deadline` (time.monotonic) passed; never returns early."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._lock.acquire(blocking=False)
            if self._lock.acquire(timeout=left):
                return True


class GreenResponseFuture(_Future):
    """The wait handle under gevent: the waiting greenlet parks on a `Waiter` with a libev timer at its deadline and
    `complete` schedules its wake-up on the hub; no lock and no `gevent.Timeout` per request (the lock's timed
    acquire cost a tenth of a send). Completed and waited on in the hub's thread (every greenlet's, when patched);
    a completion from another OS thread is handed to the hub thread-safely."""

    __slots__ = ("done", "_waiter")

    def __init__(self, opaque: int, deadline: float = float("inf"), closes: bool = False) -> None:
        super().__init__(opaque, deadline, closes)
        self.done = False
        self._waiter = None

    def complete(self, response: RemotingCommand | None, send_ok: bool = True,
                 cause: BaseException | None = None, at: float | None = None) -> None:
        self._settle(response, send_ok, cause, at)
        self.done = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            hub = waiter.hub
            if hub.thread_ident == _os_get_ident():  # bound by _gevent_yield, as this class is only used then
                hub.loop.run_callback(waiter.switch, None)
            else:
                hub.loop.run_callback_threadsafe(waiter.switch, None)

    def wait_until(self, deadline: float) -> bool:
        """Wait until completed or `deadline` (time.monotonic) passed; never returns early (libev's timer counts
        from the loop's cached time, so a wake-up before the deadline waits again)."""
        while not self.done:
            left = deadline - time.monotonic()
            if left <= 0:
                return self.done
            hub = _get_hub()
            waiter = self._waiter = _Waiter(hub)
            timer = hub.loop.timer(left)
            timer.start(waiter.switch, None)
            try:
                waiter.get()
            finally:
                timer.close()
                self._waiter = None
        return True


class Connection:
    """A client connection. `connect()` opens it; `invoke(request, timeout_ms)` sends and waits."""

    def __init__(self, addr: str, *, fail_inflight_on_eof: bool = False,
                 request_handlers: dict[int, RequestHandler] | None = None) -> None:
        self.addr = addr
        self.fail_inflight_on_eof = fail_inflight_on_eof
        self.request_handlers = request_handlers
        """Processors of requests the server sends on this connection, by request code (Java's
        `NettyRemotingClient.registerProcessor`); None or a missing code: answered REQUEST_CODE_NOT_SUPPORTED."""
        self.sock: socket.socket | None = None
        self.active = False
        self.closed = False
        self.connected = threading.Event()
        self._pending: dict[int, ResponseFuture] = {}
        self._write_lock = threading.Lock()
        self._outbox: deque[bytes] = deque()
        self._yield = _gevent_yield()
        self._future = GreenResponseFuture if self._yield is not None else ResponseFuture
        self._flush_due = False
        """Under gevent: a writer has queued a frame and yields once before flushing, so the frames the greenlets
        woken with it queue meanwhile go out in the same write (as Netty's flush of a busy channel writes many)."""
        self._reader_done = False
        self._close_lock = threading.Lock()
        self._timeout_lock = threading.Lock()
        self.closing_deadline = float("inf")
        """The earliest deadline (time.monotonic) of a request whose timeout closes this connection."""
        self.closed_at: float | None = None
        """When it was closed (at `closing_deadline` when a timeout closed it)."""

    def __repr__(self) -> str:
        state = "active" if self.active else ("closed" if self.closed else "connecting")
        return f"Connection({self.addr}, {state}, {len(self._pending)} in flight)"

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def connect(self, timeout_s: float) -> bool:
        """Open the socket (Java's `bootstrap.connect` with `connectTimeoutMillis`); False when it failed."""
        host, _, port = self.addr.rpartition(":")
        try:
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER_BYTES)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)
            sock.settimeout(WRITE_STALL_TIMEOUT_S)
        except (OSError, ValueError):
            self.closed = True
            self.connected.set()
            return False
        self.sock = sock
        self.active = True
        threading.Thread(target=self._read_loop, name=f"rmq-reader-{self.addr}", daemon=True).start()
        self.connected.set()
        return True

    def invoke(self, request: RemotingCommand, timeout_ms: float, shown_timeout_ms: int | None = None,
               closes_on_timeout: bool = False) -> RemotingCommand:
        """`invokeSyncImpl`: send and wait up to `timeout_ms` for the response. `closes_on_timeout`: the caller
        closes this connection when the wait times out (`clientCloseSocketIfTimeout`)."""
        opaque = request.opaque
        deadline = time.monotonic() + timeout_ms / 1000.0
        future = self._future(opaque, deadline, closes_on_timeout)
        self._pending[opaque] = future
        try:
            self._write(codec.encode(request), deadline, future)
            if not future.wait_until(deadline):
                closed_at = self._closed_before(future)
                if closed_at is not None:
                    error: RemotingSendRequestException | RemotingTimeoutException = \
                        RemotingSendRequestException(self.addr, None)
                    error.failed_at = closed_at
                    raise error
                shown = int(timeout_ms) if shown_timeout_ms is None else shown_timeout_ms
                error = RemotingTimeoutException.waiting(self.addr, shown)
                error.failed_at = deadline + 0.001  # the JVM's waiter reads the clock past the deadline's millisecond
                # (the recorded 4.9.1 clients' sends that timed out always ended in `sendDefaultImpl call timeout`)
                raise error
            if future.response is None:
                error = RemotingSendRequestException(self.addr, future.cause)
                error.failed_at = future.done_at
                raise error
            return future.response
        finally:
            self._pending.pop(opaque, None)

    def _closed_before(self, future: ResponseFuture) -> float | None:
        """When a request whose timeout closes the connection expired before `future` did (the JVM would have failed
        `future` then), else None; records `future`'s own expiry when it closes the connection."""
        with self._timeout_lock:
            earliest = self.closing_deadline
            for other in list(self._pending.values()):
                if other is not future and other.closes and other.deadline < earliest:
                    earliest = other.deadline
            if earliest < future.deadline:
                return earliest
            if future.closes:
                self.closing_deadline = min(self.closing_deadline, future.deadline)
            return None

    def expired_closer_pending(self) -> bool:
        """Whether a request whose timeout closes this connection has expired but its thread has not yet seen it:
        that thread times out (or fails, if an earlier one expired) and closes the connection then."""
        now = time.monotonic()
        return any(f.closes and f.deadline <= now for f in list(self._pending.values()))

    def send_oneway(self, request: RemotingCommand, timeout_ms: float) -> None:
        """`invokeOnewayImpl`: write the request, wait for nothing."""
        self._write(codec.encode(request), time.monotonic() + timeout_ms / 1000.0, None)

    def _write(self, frame: bytes, deadline: float, future: ResponseFuture | None) -> None:
        """Queue `frame` and flush the queue: whoever holds the write lock writes every queued frame in one
        `sendall` (writes coalesce under load). A caller that cannot get the lock in time leaves its frame queued
        for the next writer, as a Netty write stays queued; it then times out waiting for the answer.

        Under gevent a request's frame that finds another writer's flush due just joins the queue: that writer
        flushes it within this turn of the event loop (its failure closes the connection, which fails every request
        in flight). Otherwise the writer yields once first, so one system call carries the frames of every greenlet
        that runs meanwhile."""
        self._outbox.append(frame)
        if self._yield is not None and future is not None:
            if self._flush_due:
                return
            self._flush_due = True
            try:
                self._yield()
            finally:
                self._flush_due = False
        if not self._write_lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            return
        try:
            outbox = self._outbox
            while outbox:
                batch = []
                try:
                    while True:
                        batch.append(outbox.popleft())
                except IndexError:
                    pass
                sock = self.sock
                if sock is None or self.closed:
                    raise OSError("connection closed")
                sock.sendall(batch[0] if len(batch) == 1 else b"".join(batch))
        except OSError as e:
            if future is not None and self._pending.pop(future.opaque, None) is not None:
                future.complete(None, send_ok=False, cause=e)
            self.close(cause=e)
            if future is None:
                raise RemotingSendRequestException(self.addr, e) from None
        finally:
            self._write_lock.release()

    def close(self, cause: BaseException | None = None) -> None:
        """Close the socket and fail every request in flight (Java's close → `failFast`)."""
        with self._close_lock:
            first = not self.closed
            self.closed = True
            self.active = False
            sock = self.sock
            if self.closed_at is None:
                self.closed_at = min(time.monotonic(), self.closing_deadline)
        if first and sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the reader and any blocked writer; the fd stays valid
            except OSError:
                pass
            if self._reader_done:
                sock.close()  # else the reader closes it on its way out, so no thread can write to a reused fd
        self._outbox.clear()
        self._fail_all(cause)
        self.connected.set()

    def _fail_all(self, cause: BaseException | None) -> None:
        at = self.closed_at  # a close by a timeout happened, for the JVM, at its deadline
        for opaque in list(self._pending):
            future = self._pending.pop(opaque, None)
            if future is not None:
                future.complete(None, send_ok=False, cause=cause, at=at)

    def _read_loop(self) -> None:
        sock = self.sock
        assert sock is not None
        try:
            self._read_frames(sock)
        finally:
            self._reader_done = True
            if self.closed or not self.active:
                sock.close()

    def _read_frames(self, sock: socket.socket) -> None:
        reader = codec.FrameReader()
        while not self.closed:
            try:
                data = sock.recv(RECV_BYTES)
            except TimeoutError:
                continue
            except OSError as e:
                self.close(cause=e)  # exceptionCaught → closeChannel → failFast
                return
            if not data:
                self._peer_closed()
                return
            try:
                commands = reader.feed(data)
            except RemotingCommandException as e:
                self.close(cause=e)  # NettyDecoder: decode error closes the channel
                return
            for cmd in commands:
                if cmd.flag & RPC_TYPE_RESPONSE:
                    future = self._pending.pop(cmd.opaque, None)
                    if future is not None:
                        now = time.monotonic()
                        if future.deadline < now:
                            pass  # came after its deadline: the JVM's waiter had timed out (its thread will too)
                        elif self.closing_deadline < now:  # closed by a timeout before it came
                            future.complete(None, send_ok=False, at=self.closing_deadline)
                        else:
                            future.complete(cmd, at=now)
                elif self.request_handlers is not None and cmd.code in self.request_handlers:
                    self._process_request(self.request_handlers[cmd.code], cmd)
                elif not cmd.is_oneway:
                    self._answer_unsupported(cmd)

    def _peer_closed(self) -> None:
        if self.fail_inflight_on_eof:
            self.close(cause=ConnectionResetError("closed by peer"))
            return
        with self._close_lock:
            self.active = False  # channel inactive: no longer handed out; requests in flight wait out their time

    def _process_request(self, handler: RequestHandler, request: RemotingCommand) -> None:
        """Run a registered processor on the reader thread (it must be quick: hand long work to another thread) and
        write its response unless the request was one-way or it returned None; a processor that raises is answered
        SYSTEM_ERROR, as `processRequestCommand` does."""
        try:
            response = handler(self, request)
        except Exception as e:  # noqa: BLE001 - a processor's failure must not end the reader
            response = RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark=f"{type(e).__name__}: {e}")
        if response is None or request.is_oneway:
            return
        response.opaque = request.opaque
        response.flag |= RPC_TYPE_RESPONSE
        try:
            self._write(codec.encode(response), time.monotonic() + WRITE_STALL_TIMEOUT_S, None)
        except RemotingSendRequestException:
            pass

    def _answer_unsupported(self, request: RemotingCommand) -> None:
        """A request from the server this client has no processor for (NettyRemotingAbstract.processRequestCommand)."""
        response = RemotingCommand(code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED, opaque=request.opaque,
                                   flag=RPC_TYPE_RESPONSE, version=request.version,
                                   remark=f" request type {request.code} not supported")
        try:
            self._write(codec.encode(response), time.monotonic() + WRITE_STALL_TIMEOUT_S, None)
        except RemotingSendRequestException:
            pass
