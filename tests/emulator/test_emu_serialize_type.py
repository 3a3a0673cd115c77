"""The emulator's remoting server answers a request in the request's serialize type, as the real broker does since
4.8 (a client started with `-Drocketmq.serialize.type=ROCKETMQ` gets binary-header answers, one with JSON gets
JSON): over a real socket, through the server's dispatch and an unsupported request code's answer."""
from __future__ import annotations

import socket

import pytest

from emulator.server import RemotingServer
from remoting.codec import FrameReader, encode
from remoting.codes import ResponseCode, SerializeType
from remoting.command import RemotingCommand

UNSUPPORTED_CODE = 9_999


@pytest.fixture
def server():
    srv = RemotingServer("127.0.0.1", 0, "Test", 395)
    srv.start()
    yield srv
    srv.shutdown()


def _ask(port: int, serialize_type: SerializeType) -> tuple[int, RemotingCommand]:
    request = RemotingCommand(code=UNSUPPORTED_CODE, opaque=7, ext_fields={"a": "b"}, serialize_type=serialize_type)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode(request))
        reader, frames, raw = FrameReader(), [], b""
        while not frames:
            data = sock.recv(65536)
            assert data, "the server closed the connection without an answer"
            raw += data
            frames = reader.feed(data)
    return raw[4], frames[0]  # the byte of the serialize type on the wire, the decoded answer


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_the_answer_comes_in_the_requests_serialize_type(server, serialize_type) -> None:
    port = server._listener.getsockname()[1]
    wire_type, answer = _ask(port, serialize_type)
    assert wire_type == int(serialize_type)
    assert answer.serialize_type == serialize_type
    assert answer.opaque == 7 and answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == f" request type {UNSUPPORTED_CODE} not supported"
