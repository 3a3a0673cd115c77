"""`remoting.fastjson.loads` reads the two map-key forms of fastjson that `json` refuses, from bodies the real 4.9.1
wrote: bare Long keys (the recorded GET_ROUTEINFO_BY_TOPIC response) and `MessageQueue` objects as keys (the
GET_CONSUME_STATS body captured from the real broker, the one `tests/emulator/test_emu_consumer_stats_body.py`
round-trips); `remoting.consume_stats` reads the latter through it."""
from __future__ import annotations

import json

import pytest

from remoting import fastjson
from remoting.consume_stats import OffsetWrapper, parse_consume_stats
from remoting.errors import RemotingCommandException
from remoting.route import MessageQueue

REAL_CONSUME_STATS_4_9_1 = (
    b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"ChaosTopic"}:{"brokerOffset":3,'
    b'"consumerOffset":0,"lastTimestamp":0},{"brokerName":"broker-a","queueId":0,"topic":"ChaosTopic"}:{"brokerOffset"'
    b':3,"consumerOffset":2,"lastTimestamp":1795478716822},{"brokerName":"broker-a","queueId":3,"topic":"ChaosTopic"}:'
    b'{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0},{"brokerName":"broker-a","queueId":2,"topic":'
    b'"ChaosTopic"}:{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0}}}')


def test_bare_long_keys_of_the_recorded_route(wire_dir):
    frames = json.loads((wire_dir / "105_GET_ROUTEINFO_BY_TOPIC.json").read_text())
    body = next(f["body_text"] for f in frames if f["direction"] == "response" and f.get("body_text"))
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    route = fastjson.loads(body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911", "1": "127.0.0.1:11911"}


def test_object_keys_of_the_real_consume_stats_body_come_back_as_their_json_text():
    with pytest.raises(json.JSONDecodeError):
        json.loads(REAL_CONSUME_STATS_4_9_1)
    doc = fastjson.loads(REAL_CONSUME_STATS_4_9_1)
    assert doc["consumeTps"] == 0.0
    keys = list(doc["offsetTable"])
    assert keys[0] == '{"brokerName":"broker-a","queueId":1,"topic":"ChaosTopic"}'
    assert [fastjson.loads(k)["queueId"] for k in keys] == [1, 0, 3, 2], "the body's order kept"
    assert doc["offsetTable"][keys[1]] == {"brokerOffset": 3, "consumerOffset": 2, "lastTimestamp": 1795478716822}


def test_object_keys_with_brackets_and_quotes_inside_strings_and_nested_values():
    text = '{ {"a":"}{\\"]","b":[1,{"c":2}]} : {"v":[{1:"x"}]}, 7:"n", {}:[] }'
    doc = fastjson.loads(text)
    assert list(doc) == ['{"a":"}{\\"]","b":[1,{"c":2}]}', "7", "{}"]
    assert fastjson.loads(next(iter(doc))) == {"a": '}{"]', "b": [1, {"c": 2}]}
    assert doc['{"a":"}{\\"]","b":[1,{"c":2}]}'] == {"v": [{"1": "x"}]}
    assert doc["{}"] == []


def test_consume_stats_parse_through_fastjson():
    stats = parse_consume_stats(REAL_CONSUME_STATS_4_9_1)
    assert list(stats.offsets) == [MessageQueue("ChaosTopic", "broker-a", q) for q in (1, 0, 3, 2)]
    assert stats.offsets[MessageQueue("ChaosTopic", "broker-a", 0)] == OffsetWrapper(3, 2, 1795478716822)
    for broken in (b'{"consumeTps":0.0,"offsetTable":{{"brokerName"', b'{"offsetTable":{{"queueId":1:{}}}', b"[1"):
        with pytest.raises(RemotingCommandException, match="does not parse"):
            parse_consume_stats(broken)
    with pytest.raises(RemotingCommandException, match="not an object"):
        parse_consume_stats(b"[1]")
