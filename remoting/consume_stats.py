"""GET_CONSUME_STATS (208) to one broker, as `mqadmin consumerProgress` asks it (`MQClientAPIImpl.getConsumeStats`):
header `GetConsumeStatsRequestHeader` (consumerGroup, topic: omitted for every topic the group has offsets of), body
`ConsumeStats` in fastjson's form, whose `offsetTable` map is keyed by `MessageQueue` objects written as JSON
objects (`{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":3,...}}`), which `json` refuses:
`parse_consume_stats` reads that form. A non-SUCCESS answer raises `MQBrokerException(code, remark, addr)`.

Figures as 4.9.1's `AdminBrokerProcessor.getConsumeStats` gives them per queue: `brokerOffset` the queue's max
offset, `consumerOffset` the committed offset (0 when none), `lastTimestamp` the store time of the message before the
committed offset (0 when the offset is 0); `consumeTps` the group's pull TPS over the topics (the real 4.9.1 answered
`0.0` when nothing pulled). `ConsumeStats.diff()` is `computeTotalDiff` (the "Diff Total" of consumerProgress)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import make_request
from remoting.errors import MQBrokerException, RemotingCommandException
from remoting.route import MessageQueue

_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class OffsetWrapper:
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def lag(self) -> int:
        """brokerOffset - consumerOffset (consumerProgress's per-queue "Diff")."""
        return self.broker_offset - self.consumer_offset


@dataclass(slots=True)
class ConsumeStats:
    offsets: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def diff(self) -> int:
        """`computeTotalDiff`: the sum of brokerOffset - consumerOffset over the queues."""
        return sum(w.lag for w in self.offsets.values())

    def merge(self, other: ConsumeStats) -> ConsumeStats:
        """Two brokers' answers together, as consumerProgress adds them up (queues joined, TPS summed)."""
        return ConsumeStats({**self.offsets, **other.offsets}, self.consume_tps + other.consume_tps)


def get_consume_stats(client: RemotingClient, addr: str, group: str, topic: str | None = None,
                      timeout_ms: float = 3000) -> ConsumeStats:
    """GET_CONSUME_STATS of `group` (and `topic`, or every topic the group has offsets of) on the broker `addr`."""
    fields = {"consumerGroup": group}
    if topic is not None:
        fields["topic"] = topic
    response = client.invoke_sync(addr, make_request(RequestCode.GET_CONSUME_STATS, fields), timeout_ms)
    if response.code != ResponseCode.SUCCESS:
        raise MQBrokerException(response.code, response.remark, addr)
    return parse_consume_stats(response.body or b"")


def parse_consume_stats(body: bytes | str) -> ConsumeStats:
    """A `ConsumeStats` body as fastjson writes it (object-keyed `offsetTable`)."""
    text = body.decode("utf-8") if isinstance(body, bytes | bytearray) else body
    try:
        doc, end = _value(text, _skip(text, 0))
    except (ValueError, IndexError) as e:
        raise RemotingCommandException(f"ConsumeStats body does not parse: {e}: {text[:200]!r}") from e
    if not isinstance(doc, dict):
        raise RemotingCommandException(f"ConsumeStats body is not an object: {text[:200]!r}")
    offsets: dict[MessageQueue, OffsetWrapper] = {}
    for key, value in (doc.get("offsetTable") or {}).items():
        mq = dict(key) if isinstance(key, tuple) else {}
        offsets[MessageQueue(mq.get("topic", ""), mq.get("brokerName", ""), int(mq.get("queueId", 0)))] = \
            OffsetWrapper(int(value.get("brokerOffset", 0)), int(value.get("consumerOffset", 0)),
                          int(value.get("lastTimestamp", 0)))
    return ConsumeStats(offsets, float(doc.get("consumeTps") or 0.0))


def dump_consume_stats(stats: ConsumeStats) -> bytes:
    """The body fastjson writes for a `ConsumeStats` (fields in name order), in `stats.offsets`' order."""
    entries = ",".join(
        "{" + f'"brokerName":{json.dumps(mq.broker_name)},"queueId":{mq.queue_id},"topic":{json.dumps(mq.topic)}' + "}:"
        + "{" + f'"brokerOffset":{w.broker_offset},"consumerOffset":{w.consumer_offset},'
        f'"lastTimestamp":{w.last_timestamp}' + "}"
        for mq, w in stats.offsets.items())
    return ('{"consumeTps":' + repr(float(stats.consume_tps)) + ',"offsetTable":{' + entries + "}}").encode()


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _value(text: str, i: int) -> tuple[Any, int]:
    """One JSON value at `i` whose object keys may be objects, numbers or bare words (fastjson's map keys)."""
    ch = text[i]
    if ch == "{":
        out: dict[Any, Any] = {}
        i = _skip(text, i + 1)
        if text[i] == "}":
            return out, i + 1
        while True:
            if text[i] in '{["-0123456789':
                key, i = _value(text, i)
                key = _hashable(key)
            else:
                j = i
                while text[j] not in ":" + _WS:
                    j += 1
                key, i = text[i:j], j
            i = _skip(text, i)
            if text[i] != ":":
                raise ValueError(f"':' expected at {i}")
            value, i = _value(text, _skip(text, i + 1))
            out[key] = value
            i = _skip(text, i)
            if text[i] == "}":
                return out, i + 1
            if text[i] != ",":
                raise ValueError(f"',' or '}}' expected at {i}")
            i = _skip(text, i + 1)
    if ch == "[":
        items: list[Any] = []
        i = _skip(text, i + 1)
        if text[i] == "]":
            return items, i + 1
        while True:
            value, i = _value(text, i)
            items.append(value)
            i = _skip(text, i)
            if text[i] == "]":
                return items, i + 1
            if text[i] != ",":
                raise ValueError(f"',' or ']' expected at {i}")
            i = _skip(text, i + 1)
    return _DECODER.raw_decode(text, i)
