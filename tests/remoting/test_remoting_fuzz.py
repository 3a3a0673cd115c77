"""Property tests of the decoders: random bytes, truncated and split frames, absurd lengths. Every input ends in a
decoded command or a RemotingCommandException, quickly, and the FrameReader never buffers more than one frame."""
from __future__ import annotations

import json
import struct

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import codec, fastjson
from remoting.codec import FRAME_MAX_LENGTH, FrameReader
from remoting.codes import SerializeType
from remoting.command import RemotingCommand, make_request, make_response
from remoting.errors import RemotingCommandException
from remoting.route import ClusterInfo, TopicRouteData
from remoting.stored import decode_stored_messages, encode_stored_message

FAST = settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.too_slow])


def recorded_frames() -> list[bytes]:
    from pathlib import Path

    wire = Path(__file__).resolve().parents[1] / "fixtures" / "rocketmq-4.9.1" / "wire"
    return [bytes.fromhex(f["hex"]) for f in json.loads((wire / "all_frames_healthy_session.json").read_text())]


FRAMES = recorded_frames()


def decode_or_refuse(data: bytes) -> RemotingCommand | None:
    try:
        return codec.decode_frame(data)
    except RemotingCommandException:
        return None


@FAST
@given(st.binary(max_size=2048))
def test_random_bytes_decode_or_are_refused(data):
    decode_or_refuse(data)


@FAST
@given(st.sampled_from(FRAMES), st.data())
def test_mutated_recorded_frames_decode_or_are_refused(frame, data):
    body = bytearray(frame[4:])
    for _ in range(data.draw(st.integers(1, 8))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    decode_or_refuse(bytes(body))
    decode_or_refuse(bytes(body[: data.draw(st.integers(0, len(body)))]))


@FAST
@given(st.binary(max_size=4096), st.integers(1, 97))
def test_frame_reader_on_random_streams_stays_bounded(data, chunk):
    reader = FrameReader()
    try:
        for i in range(0, len(data), chunk):
            reader.feed(data[i : i + chunk])
            assert reader.pending <= FRAME_MAX_LENGTH
    except RemotingCommandException:
        pass


@FAST
@given(st.lists(st.sampled_from(FRAMES), min_size=1, max_size=6), st.lists(st.integers(1, 300), min_size=1))
def test_frames_split_anywhere_come_out_whole_and_in_order(frames, cuts):
    stream = b"".join(frames)
    reader = FrameReader()
    out: list[RemotingCommand] = []
    pos, i = 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        out += reader.feed(stream[pos : pos + step])
        pos += step
        i += 1
    assert [codec.encode(c) for c in out] == frames and reader.pending == 0


@given(st.integers(-(2**31), 2**31 - 1))
@example(4)  # the 4 bytes fed complete the frame: header length 0, an empty header, refused
@settings(max_examples=200, deadline=1000)
def test_absurd_lengths_are_refused_at_once_or_wait_for_a_bounded_frame(length):
    reader = FrameReader()
    try:
        assert reader.feed(struct.pack(">i", length) + b"\0\0\0\0") == []
    except RemotingCommandException:
        assert length <= 4 or length + 4 > FRAME_MAX_LENGTH
        return
    assert 4 < length <= FRAME_MAX_LENGTH - 4 and reader.pending == 8


def test_frame_limit_is_nettys():
    reader = FrameReader()
    assert reader.feed(struct.pack(">i", FRAME_MAX_LENGTH - 4)) == []
    try:
        FrameReader().feed(struct.pack(">i", FRAME_MAX_LENGTH - 3))
        raise AssertionError("a frame over 16 MiB was accepted")
    except RemotingCommandException as e:
        assert "out of range" in str(e)
    big = make_request(10, body=b"x" * FRAME_MAX_LENGTH)
    try:
        codec.encode(big)
        raise AssertionError("encoded a frame over 16 MiB")
    except RemotingCommandException:
        pass


def test_deeply_nested_json_header_is_refused():
    header = b"[" * 100_000
    frame = struct.pack(">i", len(header)) + header
    assert decode_or_refuse(frame) is None


ext_values = st.text(max_size=20)
commands = st.builds(
    lambda code, ext, body, remark, binary: make_response(
        make_request(code, ext, body, serialize_type=SerializeType.ROCKETMQ if binary else SerializeType.JSON),
        code, remark, ext, body, serialize_type=SerializeType.ROCKETMQ if binary else SerializeType.JSON),
    st.integers(0, 32767), st.dictionaries(st.text(min_size=1, max_size=10), ext_values, max_size=6),
    st.binary(max_size=64), st.one_of(st.none(), st.text(min_size=1, max_size=30)), st.booleans())


@FAST
@given(commands)
def test_any_command_round_trips(cmd):
    again = codec.decode_frame(codec.encode(cmd)[4:])
    assert (again.code, again.opaque, again.flag, again.remark, again.body) == (cmd.code, cmd.opaque, cmd.flag,
                                                                                 cmd.remark, cmd.body)
    assert (again.ext_fields or {}) == (cmd.ext_fields or {})


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=12))
json_headers = st.dictionaries(
    st.sampled_from(["code", "extFields", "flag", "language", "opaque", "remark", "serializeTypeCurrentRPC",
                     "version", "other"]),
    st.one_of(json_scalars, st.dictionaries(st.text(max_size=8), json_scalars, max_size=4)), max_size=9)


def decoded_or_error(decode, raw: bytes):
    try:
        cmd = decode(raw)
    except RemotingCommandException as e:
        return ("error", str(e).split(":")[0])
    return (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields, cmd.extra_header)


@FAST
@given(json_headers, st.sampled_from([b"", b" ", b"\xef\xbb\xbf"]))
@example({"code": 0, "extFields": {"a": "x"}, "opaque": 2**65}, b"")
@example({"code": 0, "extFields": {"a": 1.5e300}, "opaque": 1}, b"")
@example({"code": 10, "remark": "\ud800"}, b"")
def test_json_header_fast_path_decodes_as_the_json_module(doc, prefix):
    """orjson's fast path gives the very command the `json` module's path gives, or the same refusal."""
    try:
        raw = prefix + json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except ValueError:
        return
    assert decoded_or_error(codec._decode_json_header, raw) == decoded_or_error(codec._decode_json_header_generic,
                                                                                 raw)


@FAST
@given(st.integers(-2**31, 2**31 - 1), st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=6),
       st.one_of(st.none(), st.text(max_size=30)), st.text(max_size=8))
@example(1, {"i": "KEYS\x01k\x02UNIQ_KEY\x01u"}, "\ud800 lone", "JAVA")
def test_json_header_encodes_as_the_json_module(opaque, ext, remark, language):
    """The orjson encoding is byte for byte the `json` module's (fastjson's compact layout), or falls back to it."""
    cmd = RemotingCommand(code=10, language=language, opaque=opaque, remark=remark, ext_fields=ext or None)
    expected = codec._JSON.encode(codec._json_doc(cmd)).encode("utf-8", "surrogatepass")
    try:
        got = codec._encode_json_header(cmd)
    except UnicodeEncodeError:
        return  # a lone surrogate cannot be written as UTF-8 by either path
    assert got == expected


@FAST
@given(st.binary(max_size=600))
def test_stored_messages_decode_or_are_refused(data):
    try:
        decode_stored_messages(data)
    except RemotingCommandException:
        pass


@FAST
@given(st.integers(0, 200), st.data())
def test_truncated_stored_messages_are_refused(cut, data):
    one = encode_stored_message(topic="T", queue_id=1, body=b"abc" * 30, properties={"KEYS": "k"}, queue_offset=3,
                                commitlog_offset=9, born_timestamp=1, born_host="127.0.0.1:1", store_timestamp=2,
                                store_host="127.0.0.1:2")
    cut = min(cut, len(one) - 1)
    try:
        decode_stored_messages(one[:cut])
        assert cut == 0
    except RemotingCommandException:
        pass


@FAST
@given(st.text(max_size=300))
def test_route_bodies_parse_or_are_refused(text):
    for cls in (TopicRouteData, ClusterInfo):
        try:
            cls.from_json(text)
        except RemotingCommandException:
            pass


@FAST
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.integers() | st.text(max_size=5),
                                                                                inner, max_size=4), max_leaves=20))
def test_fastjson_dumps_loads_round_trip(value):
    def keys_as_text(v):
        if isinstance(v, dict):
            return {str(k): keys_as_text(x) for k, x in v.items()}
        if isinstance(v, list):
            return [keys_as_text(x) for x in v]
        return v

    assert fastjson.loads(fastjson.dumps(value)) == keys_as_text(value)
