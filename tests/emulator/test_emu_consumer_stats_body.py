"""`remoting.consume_stats` reads the ConsumeStats body exactly as the real 4.9.1 broker wrote it (captured from
GET_CONSUME_STATS; `offsetTable` keyed by MessageQueue objects, which `json` refuses) and writes the same bytes back;
the emulator's offsetTable comes in the real broker's HashMap order."""
from __future__ import annotations

import json

import pytest

from emulator.processors.consumer_manage import hashmap_ordered_queues
from remoting.consume_stats import ConsumeStats, OffsetWrapper, dump_consume_stats, parse_consume_stats
from remoting.errors import RemotingCommandException
from remoting.route import MessageQueue

REAL_4_9_1 = (
    b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"ChaosTopic"}:{"brokerOffset":3,'
    b'"consumerOffset":0,"lastTimestamp":0},{"brokerName":"broker-a","queueId":0,"topic":"ChaosTopic"}:{"brokerOffset"'
    b':3,"consumerOffset":2,"lastTimestamp":1795478716822},{"brokerName":"broker-a","queueId":3,"topic":"ChaosTopic"}:'
    b'{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0},{"brokerName":"broker-a","queueId":2,"topic":'
    b'"ChaosTopic"}:{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0}}}')


def test_the_real_brokers_body_parses_and_round_trips():
    with pytest.raises(json.JSONDecodeError):
        json.loads(REAL_4_9_1)
    stats = parse_consume_stats(REAL_4_9_1)
    assert [mq.queue_id for mq in stats.offsets] == [1, 0, 3, 2]
    assert stats.offsets[MessageQueue("ChaosTopic", "broker-a", 0)] == OffsetWrapper(3, 2, 1795478716822)
    assert stats.consume_tps == 0.0
    assert stats.diff() == 3 + 1 + 2 + 2
    assert dump_consume_stats(stats) == REAL_4_9_1
    assert parse_consume_stats(b'{"consumeTps":0.0,"offsetTable":{}}') == ConsumeStats({}, 0.0)
    with pytest.raises(RemotingCommandException):
        parse_consume_stats(b'{"consumeTps":0.0,"offsetTable":{{"brokerName"')


def test_the_emulators_queue_order_is_the_real_brokers():
    queues = [MessageQueue("ChaosTopic", "broker-a", i) for i in range(4)]
    assert [mq.queue_id for mq in hashmap_ordered_queues(queues)] == [1, 0, 3, 2]
