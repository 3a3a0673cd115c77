"""The remoting server of the name server and the brokers: a listening socket on the configured port, one reader
thread per connection (network I/O), requests dispatched by code to a processor and its executor exactly as
`NettyRemotingAbstract.processRequestCommand` does: `[REJECTREQUEST]` when the processor rejects, `[OVERLOAD]` when
the executor's queue is full, REQUEST_CODE_NOT_SUPPORTED for unknown codes. Responses are written under a
per-connection lock by whichever thread completes them. A thread that completes several requests in one go (the
flush and group-transfer services waking the requests a flush or an ack covered) gathers their responses
(`responses_gathered`) and writes each connection's share in one `sendall` when it is done, about to wait, or holds
`GATHER_MAX` responses (so the first ones are not held back while the service completes a long batch: the client
reads them on the other core meanwhile), instead of one system call (and one release of the interpreter lock) per
response. Decoding a request and writing a
response poll for a safepoint (`emulator.safepoint`): while one is pending, nothing is dispatched or answered."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from emulator.executor import BoundedExecutor, RejectedExecution, RequestTask
from emulator.logs import broker_log
from emulator.safepoint import VM_STATE
from remoting.codec import FrameReader, encode
from remoting.codes import RPC_TYPE_RESPONSE, VERSION_V4_9_4, VERSION_V5_0_0, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemotingCommandException
from remoting.hashmap import java_ordered

RECV_SIZE = 256 * 1024
BACKLOG = 1024
GATHER_MAX = 8
_GATHER = threading.local()
"""`pending`: {channel: [frames]} of the thread's open `responses_gathered`, None outside one"""
REJECT_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
# the remark of a response made by `RemotingCommand.createResponseCommand` whose handler set only the code
NOT_SET = "not set any response code"


def answer_serialize_type(version: int, request_type: SerializeType) -> SerializeType:
    """The header type of a server's answer. A response command takes the server's `rocketmq.serialize.type`
    (JSON, the default the emulator runs with) whatever the request's; only 4.9.4 to 4.9.x copy the request's type
    into the response (`NettyRemotingAbstract.processRequestCommand`, added in 4.9.4, not in 5.x). Checked on the
    real 4.9.1: a ROCKETMQ-header route request and SEND_MESSAGE_V2 were answered with JSON headers (and the
    recorded `310_SEND_MESSAGE_V2_SEND_OK_ROCKETMQ_BINARY_HEADER` fixture shows the same)."""
    if VERSION_V4_9_4 <= version < VERSION_V5_0_0:
        return request_type
    return SerializeType.JSON


class Channel:
    """One accepted connection. `remote` is `ip:port` of the peer."""

    def __init__(self, sock: socket.socket, remote: tuple[str, int], version: int) -> None:
        self.sock = sock
        self.remote_host, self.remote_port = remote[0], remote[1]
        self.remote = f"{remote[0]}:{remote[1]}"
        self.version = version
        self._lock = threading.Lock()
        self.closed = False
        self.last_io = time.monotonic()
        """when a frame was last read or written (Netty's IdleStateHandler: `emulator.idle_channels`)"""

    def __repr__(self) -> str:
        return f"[R:/{self.remote}]"

    def respond(self, request: RemotingCommand, code: int, remark: str | None = None,
                ext_fields: dict[str, str] | None = None, body: bytes = b"") -> None:
        """Write the response to `request` (ext_fields in Java HashMap order, as the broker's header map), in the
        serialize type `answer_serialize_type` gives."""
        if request.is_oneway:
            return
        cmd = RemotingCommand(code=int(code), version=self.version, opaque=request.opaque, flag=RPC_TYPE_RESPONSE,
                              remark=remark, ext_fields=java_ordered(ext_fields) if ext_fields is not None else None,
                              body=body, serialize_type=answer_serialize_type(self.version, request.serialize_type))
        self.send(cmd)

    def send(self, cmd: RemotingCommand) -> None:
        VM_STATE.poll()  # encoding the response is Java code: it waits out a safepoint operation
        data = encode(cmd)
        pending = getattr(_GATHER, "pending", None)
        if pending is not None:
            frames = pending.setdefault(self, [])
            frames.append(data)
            if len(frames) >= GATHER_MAX:
                del pending[self]
                self.write(b"".join(frames))
            return
        self.write(data)

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.closed:
                return
            try:
                self.sock.sendall(data)
                self.last_io = time.monotonic()
            except OSError:
                self._close_locked()

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if not self.closed:
            self.closed = True
            close_socket(self.sock)


@contextmanager
def responses_gathered() -> Iterator[None]:
    """Within it, this thread's responses are kept and written per connection at its end (or at `flush_gathered`),
    in the order they were made. Nested uses join the outer one."""
    if getattr(_GATHER, "pending", None) is not None:
        yield
        return
    _GATHER.pending = {}
    try:
        yield
    finally:
        flush_gathered()
        _GATHER.pending = None


def flush_gathered() -> None:
    """Write what this thread gathered so far (call before anything that may wait)."""
    pending = getattr(_GATHER, "pending", None)
    if not pending:
        return
    _GATHER.pending = {}
    for channel, frames in pending.items():
        channel.write(frames[0] if len(frames) == 1 else b"".join(frames))


class Processor:
    """A request processor: `process` answers now (returns the response fields) or later (returns None and
    responds through the channel itself)."""

    def reject_request(self) -> bool:
        return False

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        raise NotImplementedError


Handler = Callable[[Channel, RemotingCommand], None]


C = TypeVar("C")


class CodeTableProcessor(Processor, Generic[C]):
    """A processor of several request codes, each with its own handler (Java's `switch (request.getCode())`). A
    subclass declares its table once, `HANDLERS`: request code -> the name of its method that answers it; `ctx` is
    what the handlers work with (the broker's context, the controller's manager); `codes` are the ones to register
    it for, in the table's order."""

    HANDLERS: ClassVar[Mapping[int, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unknown = [name for name in cls.HANDLERS.values() if not callable(getattr(cls, name, None))]
        if unknown:
            raise TypeError(f"{cls.__name__}.HANDLERS names no method of it: {', '.join(unknown)}")

    def __init__(self, ctx: C) -> None:
        self.ctx = ctx
        self._handlers: dict[int, Handler] = {code: getattr(self, name) for code, name in self.HANDLERS.items()}

    @property
    def codes(self) -> tuple[int, ...]:
        return tuple(self._handlers)

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        self._handlers[request.code](channel, request)


@dataclass
class _Route:
    processor: Processor
    executor: BoundedExecutor | None


def listen(host: str, port: int, backlog: int) -> socket.socket:
    """A TCP socket listening on `host:port` (SO_REUSEADDR, as Netty's and the HA service's server sockets)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    return sock


def close_socket(sock: socket.socket) -> None:
    """Shut both directions down first, so that a thread blocked in `accept`, `recv` or `sendall` on `sock` returns
    at once (an error when it was closed already is no matter), then close it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class RemotingServer:
    def __init__(self, host: str, port: int, name: str, version: int) -> None:
        self.host, self.port, self.name, self.version = host, port, name, version
        self._routes: dict[int, _Route] = {}
        self._listener: socket.socket | None = None
        self._channels: set[Channel] = set()
        self._stopped = threading.Event()
        self.on_close: list[Callable[[Channel], None]] = []

    def channels(self) -> list[Channel]:
        return list(self._channels)

    def address(self) -> tuple[str, int]:
        """The address listened on (the port the system chose when it was 0)."""
        return self._listener.getsockname()[:2]  # type: ignore[union-attr]

    def register(self, code: int, processor: Processor, executor: BoundedExecutor | None) -> None:
        self._routes[int(code)] = _Route(processor, executor)

    def start(self) -> None:
        self._listener = listen(self.host, self.port, BACKLOG)
        threading.Thread(target=self._accept, name=f"{self.name}Boss", daemon=True).start()

    def shutdown(self) -> None:
        self._stopped.set()
        if self._listener is not None:
            close_socket(self._listener)
        for ch in list(self._channels):
            ch.close()

    def _accept(self) -> None:
        n = 0
        while not self._stopped.is_set():
            try:
                conn, remote = self._listener.accept()  # type: ignore[union-attr]
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            channel = Channel(conn, remote, self.version)
            self._channels.add(channel)
            n += 1
            threading.Thread(target=self._read, args=(channel,), name=f"{self.name}Worker_{n}", daemon=True).start()

    def _read(self, channel: Channel) -> None:
        reader = FrameReader()
        sock = channel.sock
        try:
            while True:
                data = sock.recv(RECV_SIZE)
                if not data:
                    break
                channel.last_io = time.monotonic()
                for cmd in reader.feed(data):
                    VM_STATE.poll()  # the codec thread decodes and dispatches in Java code
                    if not cmd.is_response:
                        self._dispatch(channel, cmd)
        except (OSError, RemotingCommandException) as e:
            broker_log.info("closeChannel: %s, %s", channel.remote, e)
        finally:
            channel.close()
            self._channels.discard(channel)
            for listener in self.on_close:
                listener(channel)

    def _dispatch(self, channel: Channel, cmd: RemotingCommand) -> None:
        route = self._routes.get(cmd.code)
        if route is None:
            remark = f" request type {cmd.code} not supported"
            channel.respond(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
            broker_log.error("%s%s", channel.remote, remark)
            return
        processor = route.processor
        if processor.reject_request():
            channel.respond(cmd, ResponseCode.SYSTEM_BUSY, REJECT_REMARK)
            return

        def run() -> None:
            try:
                processor.process(channel, cmd)
            except Exception as e:  # the Java server answers SYSTEM_ERROR with the exception's simple description
                broker_log.exception("process request exception")
                channel.respond(cmd, ResponseCode.SYSTEM_ERROR,
                                getattr(e, "java_desc", None) or f"{type(e).__name__}: {e}")

        if route.executor is None:
            run()
            return
        task = RequestTask(run, lambda code, remark: channel.respond(cmd, code, remark))
        try:
            route.executor.submit(task)
        except RejectedExecution:
            channel.respond(cmd, ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
