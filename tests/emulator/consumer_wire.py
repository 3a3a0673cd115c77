"""A raw remoting connection for the consumer tests: one socket that sends requests, collects their responses by
opaque and keeps the requests the broker sends on its own (NOTIFY_CONSUMER_IDS_CHANGED), as a Java client's channel
does. Also the consumer data a push consumer's heartbeat carries and the pull header it sends."""
from __future__ import annotations

import socket
import threading
import time

from remoting import fastjson
from remoting.codec import FrameReader, encode
from remoting.codes import RequestCode
from remoting.command import RemotingCommand, make_request


def consumer_data(group: str, topics: list[str], model: str = "CLUSTERING") -> dict:
    """`ConsumerData` of a push consumer subscribed to `topics` with `*` (and its `%RETRY%` topic, as Java adds)."""
    subs = [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG", "subString": "*", "subVersion": 1,
             "tagsSet": [], "topic": t} for t in [*topics, f"%RETRY%{group}"]]
    return {"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY", "groupName": group,
            "messageModel": model, "subscriptionDataSet": subs, "unitMode": False}


def heartbeat_body(client_id: str, consumers: list[dict]) -> bytes:
    return fastjson.dumps({"clientID": client_id, "consumerDataSet": consumers, "producerDataSet": []}).encode()


def pull_fields(group: str, topic: str, queue_id: int, offset: int, *, sys_flag: int = 2, commit_offset: int = 0,
                suspend_ms: int = 15000, max_nums: int = 32) -> dict:
    """PullMessageRequestHeader as DefaultMQPushConsumer sends it (suspend flag, no subscription flag)."""
    return {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
            "maxMsgNums": max_nums, "sysFlag": sys_flag, "commitOffset": commit_offset,
            "suspendTimeoutMillis": suspend_ms, "subscription": "*", "subVersion": 1, "expressionType": "TAG"}


class WireConnection:
    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.settimeout(None)
        self.responses: dict[int, RemotingCommand] = {}
        self.server_requests: list[RemotingCommand] = []
        self._cond = threading.Condition()
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        reader = FrameReader()
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                for cmd in reader.feed(data):
                    with self._cond:
                        if cmd.is_response:
                            self.responses[cmd.opaque] = cmd
                        else:
                            self.server_requests.append(cmd)
                        self._cond.notify_all()
        except OSError:
            pass
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def send(self, code: int, fields: dict | None = None, body: bytes = b"") -> int:
        """Send a request; its opaque."""
        request = make_request(code, fields, body)
        self.sock.sendall(encode(request))
        return request.opaque

    def wait(self, opaque: int, timeout_s: float) -> RemotingCommand | None:
        """The response to `opaque`, None if none came within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while opaque not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self._cond.wait(left)
            return self.responses.pop(opaque)

    def call(self, code: int, fields: dict | None = None, body: bytes = b"", timeout_s: float = 5.0) -> RemotingCommand:
        response = self.wait(self.send(code, fields, body), timeout_s)
        assert response is not None, f"no answer to request {code} {fields} within {timeout_s} s"
        return response

    def heartbeat(self, client_id: str, consumers: list[dict]) -> RemotingCommand:
        return self.call(RequestCode.HEART_BEAT, None, heartbeat_body(client_id, consumers))

    def notifies(self, group: str) -> int:
        with self._cond:
            return sum(1 for r in self.server_requests if r.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
                       and (r.ext_fields or {}).get("consumerGroup") == group)

    def wait_notifies(self, group: str, count: int, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.notifies(group) < count and time.monotonic() < deadline and not self.closed:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
        return self.notifies(group)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._reader.join(5)
