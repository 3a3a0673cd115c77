"""A scripted name server + broker on one port, for the load tests and benchmarks: real sockets, real remoting
frames (`remoting.codec`). It answers GET_ROUTEINFO_BY_TOPIC with a route to itself, SEND_MESSAGE(_V2) with
SEND_OK (or a chosen response code) at once, HEART_BEAT/UNREGISTER_CLIENT with SUCCESS, and anything else with
REQUEST_CODE_NOT_SUPPORTED. `stall(seconds)` holds every send response from now until the stall ends (as a broker in
a long pause would), and it records the harness key and arrival time of every send it got.

In a test: `with ScriptedBroker() as broker: ... broker.addr ...` (it runs its asyncio loop in a thread).
As a program (benchmarks): `python tests/loads/scripted_broker.py [--port N] [--no-record]` prints
`LISTENING <addr>` and serves until SIGTERM/SIGINT, then prints `SENDS <count>`.
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, when run as a program

from remoting import fastjson  # noqa: E402
from remoting.codec import FrameReader, encode  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.command import RemotingCommand, make_response  # noqa: E402
from remoting.message import string_to_properties  # noqa: E402
from remoting.message_id import create_offset_msg_id  # noqa: E402

BROKER_NAME = "broker-a"
CLUSTER = "DefaultCluster"
QUEUES = 4
SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2)
NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Received:
    key: str | None
    uniq_key: str | None
    queue_id: int
    recv_ns: int


class ScriptedBroker:
    """Serve on `host:port` (0 = any free port) from a background thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, record: bool = True,
                 send_code: int = ResponseCode.SUCCESS, send_remark: str | None = None) -> None:
        self.host, self.port = host, port
        self.record = record
        self.send_code, self.send_remark = send_code, send_remark
        self.received: list[Received] = []
        self.sends = 0
        self.other_requests: dict[int, int] = {}
        self.stalls: list[tuple[int, int]] = []  # (start_ns, end_ns) as scheduled
        self._stall_from_ns = self._stall_until_ns = 0
        self._offsets = [0] * QUEUES
        self._commitlog = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> ScriptedBroker:
        self._thread = threading.Thread(target=self._run, name="scripted-broker", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted broker did not start listening within 10 s")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = loop.run_until_complete(loop.create_server(lambda: _Protocol(self), self.host, self.port))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> ScriptedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting --------------------------------------------------------------------------------------------

    def stall(self, seconds: float) -> tuple[int, int]:
        """Hold every send response from now for `seconds`; returns the stall's (start_ns, end_ns)."""
        start = time.time_ns()
        end = start + int(seconds * NS_PER_S)
        self._stall_from_ns, self._stall_until_ns = start, end
        self.stalls.append((start, end))
        return start, end

    def keys(self) -> list[str]:
        return [r.key for r in self.received if r.key is not None]

    # --- answering --------------------------------------------------------------------------------------------

    def answer(self, cmd: RemotingCommand, now_ns: int) -> RemotingCommand | None:
        if cmd.is_response:
            return None
        if cmd.code in SEND_CODES:
            return self._send(cmd, now_ns)
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return make_response(cmd, ResponseCode.SUCCESS, body=self._route())
        self.other_requests[cmd.code] = self.other_requests.get(cmd.code, 0) + 1
        if cmd.code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT):
            return make_response(cmd, ResponseCode.SUCCESS)
        return make_response(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")

    def _route(self) -> bytes:
        return fastjson.dumps({
            "brokerDatas": [{"brokerAddrs": {0: self.addr}, "brokerName": BROKER_NAME, "cluster": CLUSTER}],
            "filterServerTable": {},
            "queueDatas": [{"brokerName": BROKER_NAME, "perm": 6, "readQueueNums": QUEUES, "topicSysFlag": 0,
                            "writeQueueNums": QUEUES}],
        }).encode()

    def _send(self, cmd: RemotingCommand, now_ns: int) -> RemotingCommand:
        ext = cmd.ext_fields or {}
        v2 = cmd.code == RequestCode.SEND_MESSAGE_V2
        queue_id = int(ext.get("e" if v2 else "queueId", "0")) % QUEUES
        self.sends += 1
        if self.record:
            props = string_to_properties(ext.get("i" if v2 else "properties"))
            keys = props.get("KEYS")
            self.received.append(Received(keys.split(" ")[0] if keys else None, props.get("UNIQ_KEY"), queue_id,
                                          now_ns))
        if self.send_code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT,
                                  ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE):
            return make_response(cmd, self.send_code, self.send_remark)
        offset = self._offsets[queue_id]
        self._offsets[queue_id] += 1
        msg_id = create_offset_msg_id(("127.0.0.1", self.port), self._commitlog)
        self._commitlog += 200 + len(cmd.body)
        fields = {"queueId": queue_id, "TRACE_ON": "true", "MSG_REGION": "DefaultRegion", "msgId": msg_id,
                  "queueOffset": offset}
        return make_response(cmd, self.send_code, self.send_remark, fields)

    def hold_until(self, now_ns: int) -> int:
        """When a send arriving at `now_ns` may be answered (now, or the end of a stall it arrived in). A send that
        arrived before the stall began is answered even when its answer is written after: its user sends again, and
        that send is the one held (a test counting the sends received since the stall's start sees every user)."""
        return self._stall_until_ns if self._stall_from_ns <= now_ns < self._stall_until_ns else now_ns


class _Protocol(asyncio.Protocol):
    def __init__(self, broker: ScriptedBroker) -> None:
        self.broker = broker
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        out: list[bytes] = []
        held: list[bytes] = []
        release_ns = 0
        for cmd in self.reader.feed(data):
            response = self.broker.answer(cmd, now)
            if response is None:
                continue
            frame = encode(response)
            when = self.broker.hold_until(now) if cmd.code in SEND_CODES else now
            if when > now:
                held.append(frame)
                release_ns = max(release_ns, when)
            else:
                out.append(frame)
        if out:
            self.transport.write(b"".join(out))
        if held:
            self._release(b"".join(held), release_ns)

    def _release(self, frames: bytes, release_ns: int) -> None:
        """Write `frames` once the wall clock has passed `release_ns` (never a moment early)."""
        left = release_ns - time.time_ns()
        if left >= 0:
            asyncio.get_running_loop().call_later(left / NS_PER_S + 0.0005, self._release, frames, release_ns)
        elif self.transport is not None and not self.transport.is_closing():
            self.transport.write(frames)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-record", action="store_true", help="count sends only")
    args = parser.parse_args()
    broker = ScriptedBroker(args.host, args.port, record=not args.no_record).start()
    print(f"LISTENING {broker.addr}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    broker.stop()
    print(f"SENDS {broker.sends}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
