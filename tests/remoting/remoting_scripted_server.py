"""A tiny remoting server for tests, built on `remoting.codec`: listens on 127.0.0.1, records every request, and
answers each one as a handler decides: a `Reply` (code, remark, extFields, body, after a delay), `SILENT` (never),
or `CLOSE` (drop the connection). Helpers make a name server that serves routes and a broker that acks sends."""
from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from remoting import codec
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand, make_response
from remoting.errors import RemotingCommandException
from remoting.headers import GetRouteInfoRequestHeader, SendMessageRequestHeaderV2
from remoting.message_id import create_offset_msg_id
from remoting.route import BrokerData, QueueData, TopicRouteData

SILENT = "silent"
CLOSE = "close"


@dataclass
class Reply:
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    ext: dict | None = None
    body: bytes = b""
    delay_s: float = 0.0
    raw: RemotingCommand | None = None
    """A ready response (e.g. a recorded one): sent as is, with the request's opaque."""


Handler = Callable[[RemotingCommand], "Reply | str | None"]


@dataclass
class ScriptedServer:
    handler: Handler
    requests: list[RemotingCommand] = field(default_factory=list)
    responses: list[RemotingCommand] = field(default_factory=list)
    connections_accepted: int = 0

    def __post_init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port = self._listener.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self._closed = False
        self._start(self._accept_loop)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._conns.append(conn)
                self.connections_accepted += 1
            self._start(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        reader = codec.FrameReader()
        send_lock = threading.Lock()
        while not self._closed:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                commands = reader.feed(data)
            except RemotingCommandException:
                conn.close()
                return
            for cmd in commands:
                if cmd.is_response:
                    with self._lock:
                        self.responses.append(cmd)
                    continue
                with self._lock:
                    self.requests.append(cmd)
                action = self.handler(cmd)
                if action == CLOSE:
                    self._drop(conn)
                    return
                if action is None or action == SILENT or cmd.is_oneway:
                    continue
                if action.raw is not None:
                    frame = codec.encode(dataclasses.replace(action.raw, opaque=cmd.opaque))
                else:
                    frame = codec.encode(make_response(cmd, action.code, action.remark, action.ext, action.body))
                if action.delay_s > 0:
                    timer = threading.Timer(action.delay_s, self._send, (conn, send_lock, frame))
                    timer.daemon = True
                    self._timers.append(timer)
                    timer.start()
                else:
                    self._send(conn, send_lock, frame)

    @staticmethod
    def _send(conn: socket.socket, lock: threading.Lock, frame: bytes) -> None:
        with lock:
            try:
                conn.sendall(frame)
            except OSError:
                pass

    @staticmethod
    def _drop(conn: socket.socket) -> None:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()

    def send_raw(self, data: bytes) -> None:
        """Write raw bytes to every open connection (garbage, server-side requests)."""
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.sendall(data)
            except OSError:
                pass

    def requests_with(self, code: int) -> list[RemotingCommand]:
        with self._lock:
            return [r for r in self.requests if r.code == code]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._conns)
        for timer in self._timers:
            timer.cancel()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self._listener.close()
        for conn in conns:
            self._drop(conn)
        for t in self._threads:
            t.join(timeout=5)


def route_for(brokers: dict[str, str], queues: int = 4, cluster: str = "DefaultCluster",
              perm: int = 6) -> TopicRouteData:
    """A route with one master per broker name: {broker name: master address}."""
    return TopicRouteData(
        queue_datas=[QueueData(name, queues, queues, perm) for name in brokers],
        broker_datas=[BrokerData(cluster, name, {0: addr}) for name, addr in brokers.items()],
    )


def namesrv_handler(routes: dict[str, TopicRouteData]) -> Handler:
    """Answers GET_ROUTEINFO_BY_TOPIC from `routes` (code 17 with the real remark for others)."""

    def handle(cmd: RemotingCommand):
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            topic = GetRouteInfoRequestHeader.from_fields(cmd.ext_fields).topic
            route = routes.get(topic)
            if route is None:
                return Reply(ResponseCode.TOPIC_NOT_EXIST,
                             f"No topic route info in name server for the topic: {topic}\n"
                             "See http://rocketmq.apache.org/docs/faq/ for further details.")
            return Reply(body=route.to_json())
        return Reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")

    return handle


def send_ok_reply(cmd: RemotingCommand, port: int, offset: int = 0, code: int = ResponseCode.SUCCESS,
                  delay_s: float = 0.0) -> Reply:
    """What a 4.9.1 broker answers to a stored send (extFields as recorded)."""
    header = SendMessageRequestHeaderV2.from_fields(cmd.ext_fields)
    ext = {"msgId": create_offset_msg_id(("127.0.0.1", port), offset), "queueId": header.e,
           "queueOffset": offset, "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    return Reply(code, None, ext, delay_s=delay_s)


def broker_handler(script: Callable[[RemotingCommand, int], Reply | str | None] | None = None) -> Handler:
    """A broker: sends go to `script(cmd, n)` (n counts sends from 0; default: SEND_OK at once); every other request
    gets SUCCESS."""
    counter = {"n": 0}
    lock = threading.Lock()
    holder: dict = {}

    def handle(cmd: RemotingCommand):
        if cmd.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE):
            with lock:
                n = counter["n"]
                counter["n"] += 1
            if script is None:
                return send_ok_reply(cmd, holder.get("port", 0), n)
            return script(cmd, n)
        return Reply()

    handle.holder = holder  # type: ignore[attr-defined]
    return handle


def free_port() -> int:
    """A 127.0.0.1 port free at this moment, for a server the test starts on it next. For an address that must
    refuse connections, use `RefusingAddress`: a port let go can be taken meanwhile by a parallel test, or chosen by
    the kernel as the very source port of the connect to it (a TCP self-connect, which succeeds)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RefusingAddress:
    """`host:port` on 127.0.0.1 that refuses every connection while the object lives: the port stays bound without
    listening, so neither another test nor the kernel's choice of a source port can take it."""

    def __init__(self):
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self._sock.getsockname()[1]}"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> str:
        return self.addr

    def __exit__(self, *exc) -> None:
        self.close()
