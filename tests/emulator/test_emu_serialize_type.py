"""The header type of the emulator's answers, as the real broker's: 4.9.1 (and 4.9.3, 5.x) answer every request with
a JSON header, a ROCKETMQ-header one too (checked on the real 4.9.1, and in the recorded 4.9.1 frames); only 4.9.4
to 4.9.x answer in the request's type. Over a real socket, through the server's dispatch and an unsupported request
code's answer."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from emulator.server import RemotingServer, answer_serialize_type
from remoting.codec import FrameReader, encode
from remoting.codes import (
    VERSION_V4_9_1,
    VERSION_V4_9_3,
    VERSION_V4_9_4,
    VERSION_V5_3_0,
    ResponseCode,
    SerializeType,
)
from remoting.command import RemotingCommand

UNSUPPORTED_CODE = 9_999
WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-4.9.1" / "wire"


@pytest.fixture
def serve():
    servers = []

    def start(version: int) -> int:
        srv = RemotingServer("127.0.0.1", 0, "Test", version)
        srv.start()
        servers.append(srv)
        return srv._listener.getsockname()[1]

    yield start
    for srv in servers:
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


@pytest.mark.parametrize("version", [VERSION_V4_9_1, VERSION_V4_9_3, VERSION_V5_3_0])
@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_the_answer_has_a_json_header_whatever_the_request(serve, version, serialize_type) -> None:
    wire_type, answer = _ask(serve(version), serialize_type)
    assert wire_type == int(SerializeType.JSON)
    assert answer.serialize_type == SerializeType.JSON
    assert answer.opaque == 7 and answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == f" request type {UNSUPPORTED_CODE} not supported"


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_from_4_9_4_the_answer_comes_in_the_requests_type(serve, serialize_type) -> None:
    wire_type, answer = _ask(serve(VERSION_V4_9_4), serialize_type)
    assert wire_type == int(serialize_type)
    assert answer.serialize_type == serialize_type


def test_the_recorded_4_9_1_broker_answered_a_binary_header_send_with_json() -> None:
    frames = json.loads((WIRE / "310_SEND_MESSAGE_V2_SEND_OK_ROCKETMQ_BINARY_HEADER.json").read_text())
    request = next(f for f in frames if f["kind"] == "request")
    response = next(f for f in frames if f["kind"] == "response")
    assert (request["serialize_type"], response["serialize_type"]) == (int(SerializeType.ROCKETMQ),
                                                                        int(SerializeType.JSON))
    assert answer_serialize_type(VERSION_V4_9_1, SerializeType.ROCKETMQ) == response["serialize_type"]
