"""Messages: the properties string, UNIQ_KEY and offset ids, the stored format (encode and decode), Java HashMap order
and typed headers, checked against what the real 4.9.1 client and broker put on the wire."""
from __future__ import annotations

import json
import re
import time

import pytest

from remoting.errors import RemotingCommandException
from remoting.hashmap import java_hashmap_order, java_string_hash, table_size
from remoting.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from remoting.message import (
    COMPRESSED_FLAG,
    Message,
    properties_to_string,
    string_to_properties,
)
from remoting.message_id import UniqIdGenerator, create_offset_msg_id, create_uniq_id, decode_offset_msg_id
from remoting.stored import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    compress_body,
    decode_stored_messages,
    encode_stored_message,
)


def frames(wire_dir, name):
    return json.loads((wire_dir / name).read_text())


def test_java_string_hash_matches_known_values():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-2147483648) & 0xFFFFFFFF
    assert java_string_hash("é") == 233  # one UTF-16 unit
    assert java_string_hash("😀") == (0xD83D * 31 + 0xDE00)  # surrogate pair, as Java counts it


def test_table_size_follows_load_factor():
    assert table_size(12) == 16
    assert table_size(13) == 32
    assert table_size(48) == 64
    assert table_size(49) == 128


@pytest.mark.parametrize("name", ["310_SEND_MESSAGE_V2_SEND_OK.json", "11_PULL_MESSAGE.json",
                                  "17_UPDATE_AND_CREATE_TOPIC.json", "103_REGISTER_BROKER.json",
                                  "35_UNREGISTER_CLIENT.json", "28_GET_BROKER_RUNTIME_INFO.json"])
def test_hashmap_order_matches_every_recorded_ext_fields_and_table(wire_dir, name):
    for frame in frames(wire_dir, name):
        header = json.loads(frame["header_json"])
        ext = header.get("extFields") or {}
        assert_hashmap_order(list(ext))
        if (frame.get("body_text") or "").startswith('{"table"'):
            assert_hashmap_order(list(json.loads(frame["body_text"])["table"]))


def assert_hashmap_order(recorded: list[str]) -> None:
    """Buckets ascend in the recorded order (which insertion order Java used inside a bucket is not recorded)."""
    mask = table_size(len(recorded)) - 1
    buckets = [(java_string_hash(k) ^ (java_string_hash(k) >> 16)) & mask for k in recorded]
    assert buckets == sorted(buckets)
    assert java_hashmap_order(recorded) == recorded


def test_properties_string_matches_recorded_send(wire_dir):
    request = json.loads(frames(wire_dir, "310_SEND_MESSAGE_V2_SEND_OK.json")[0]["header_json"])
    recorded = request["extFields"]["i"]
    parsed = string_to_properties(recorded)
    assert parsed == {"userProp": "v0", "KEYS": "KEY0", "UNIQ_KEY": "7F00000157515FFD2B2767F3C7550000",
                      "WAIT": "true", "TAGS": "TagA"}
    msg = Message("WireTopic", b"hello wire 0", tags="TagA", keys="KEY0", properties={"userProp": "v0"})
    msg.put_property("UNIQ_KEY", parsed["UNIQ_KEY"])
    assert properties_to_string(msg.properties) == recorded


def test_properties_parser_skips_what_java_skips():
    assert string_to_properties("") == {}
    assert string_to_properties("a\x01b\x02\x02x\x02k\x01") == {"a": "b"}
    assert string_to_properties("k\x01v\x02") == {"k": "v"}
    assert string_to_properties("\x01vv\x02kk\x01v=\x01x") == {"kk": "v=\x01x"}
    assert properties_to_string({"a": None, "b": "1"}) == "b\x011"


def test_message_keys_and_defaults():
    msg = Message("T", "body", keys=["k1", "k2"])
    assert msg.body == b"body" and msg.keys == "k1 k2" and msg.tags is None
    assert msg.wait_store_msg_ok and msg.uniq_key is None
    assert not Message("T", b"x", wait_store_msg_ok=False).wait_store_msg_ok


def test_uniq_key_layout_like_message_client_id_setter():
    gen = UniqIdGenerator(ip=bytes([127, 0, 0, 1]), pid=0x5751, loader_hash=0x5FFD2B27)
    a, b = gen.create(), gen.create()
    assert a.startswith("7F00000157515FFD2B27") and len(a) == 32 and re.fullmatch(r"[0-9A-F]{32}", a)
    assert int(b[-4:], 16) == int(a[-4:], 16) + 1
    ms_in_month = int(a[20:28], 16)
    assert 0 <= ms_in_month <= 31 * 86400 * 1000
    assert len(create_uniq_id()) == 32 and create_uniq_id() != create_uniq_id()


def test_uniq_key_time_is_the_millisecond_of_its_creation_as_the_clock_moves():
    """The time part is reused within a millisecond: ids made across many milliseconds each carry their own."""
    gen = UniqIdGenerator(ip=bytes([127, 0, 0, 1]), pid=1, loader_hash=2)
    month_start = gen._start
    seen = set()
    while len(seen) < 20:
        before = time.time_ns() // 1_000_000
        ms = int(gen.create()[20:28], 16)
        after = time.time_ns() // 1_000_000
        assert before - month_start <= ms <= after - month_start
        seen.add(ms)


def test_offset_msg_id_round_trip(wire_dir):
    response = json.loads(frames(wire_dir, "310_SEND_MESSAGE_V2_SEND_OK.json")[1]["header_json"])
    assert create_offset_msg_id("127.0.0.1:10911", 0x172) == response["extFields"]["msgId"]
    assert decode_offset_msg_id(response["extFields"]["msgId"]) == ("127.0.0.1:10911", 0x172)
    v6 = create_offset_msg_id("[::1]:10911", 5)
    assert len(v6) == 56 and decode_offset_msg_id(v6) == ("[::1]:10911", 5)
    with pytest.raises(ValueError):
        decode_offset_msg_id("00")


def test_recorded_pull_body_decodes_and_re_encodes_byte_for_byte(wire_dir):
    body = bytes.fromhex(frames(wire_dir, "11_PULL_MESSAGE.json")[1]["body_hex"])
    (msg,) = decode_stored_messages(body)
    assert (msg.topic, msg.queue_id, msg.queue_offset, msg.commitlog_offset) == ("WireTopic", 0, 0, 370)
    assert msg.body == b"hello wire 0" and msg.keys == "KEY0" and msg.tags == "TagA"
    assert msg.uniq_key == "7F00000157515FFD2B2767F3C7550000"
    assert msg.born_host == "127.0.0.1:54142" and msg.store_host == "127.0.0.1:10911"
    assert msg.msg_id == "7F00000100002A9F0000000000000172" and msg.store_size == len(body)
    again = encode_stored_message(
        topic=msg.topic, queue_id=msg.queue_id, body=msg.body, properties=msg.properties,
        queue_offset=msg.queue_offset, commitlog_offset=msg.commitlog_offset, born_timestamp=msg.born_timestamp,
        born_host=msg.born_host, store_timestamp=msg.store_timestamp, store_host=msg.store_host)
    assert again == body


def stored(**over):
    args = dict(topic="T", queue_id=1, body=b"payload", properties={"KEYS": "k"}, queue_offset=7,
                commitlog_offset=1000, born_timestamp=int(time.time() * 1000), born_host="127.0.0.1:5555",
                store_timestamp=int(time.time() * 1000), store_host="127.0.0.1:10911")
    args.update(over)
    return encode_stored_message(**args)


def test_stored_ipv6_v2_magic_and_compressed_bodies():
    raw = b"x" * 10000
    data = (stored(born_host="[::1]:5555", store_host="[fe80::1]:10911")
            + stored(topic="L" * 200, magic_code=MESSAGE_MAGIC_CODE_V2)
            + stored(body=compress_body(raw), sys_flag=COMPRESSED_FLAG))
    a, b, c = decode_stored_messages(data)
    assert a.born_host == "[::1]:5555" and a.store_host == "[fe80::1]:10911" and a.sys_flag & 0x30 == 0x30
    assert len(a.msg_id) == 56
    assert b.topic == "L" * 200 and b.magic_code == MESSAGE_MAGIC_CODE_V2
    assert c.body == raw
    assert decode_stored_messages(data, uncompress=False)[2].body == compress_body(raw)


def test_stored_decoding_stops_at_blank_and_refuses_garbage():
    one = stored()
    blank = (8).to_bytes(4, "big") + BLANK_MAGIC_CODE.to_bytes(4, "big", signed=True)
    assert len(decode_stored_messages(one + blank + b"\0" * 50)) == 1
    for bad in (one[:-1], one[:20], b"\0" * 40, one[:4] + b"\1\2\3\4" + one[8:]):
        with pytest.raises(RemotingCommandException):
            decode_stored_messages(bad)
    with pytest.raises(ValueError):
        stored(topic="L" * 200)


def test_headers_round_trip_and_required_fields(wire_dir):
    request = json.loads(frames(wire_dir, "310_SEND_MESSAGE_V2_SEND_OK.json")[0]["header_json"])
    header = SendMessageRequestHeaderV2.from_fields(request["extFields"])
    assert header.b == "WireTopic" and header.d == 4 and header.k is False and header.l is None
    assert list(header.to_fields().items()) == list(request["extFields"].items())
    assert header.to_v1().to_v2() == header
    pull = json.loads(frames(wire_dir, "11_PULL_MESSAGE.json")[0]["header_json"])["extFields"]
    assert PullMessageRequestHeader.from_fields(pull).to_fields() == pull
    with pytest.raises(RemotingCommandException, match="the custom field <msgId> is null"):
        SendMessageResponseHeader.from_fields({"queueId": "1", "queueOffset": "2"})
    with pytest.raises(RemotingCommandException, match="not a number"):
        SendMessageResponseHeader.from_fields({"msgId": "x", "queueId": "one", "queueOffset": "2"})
