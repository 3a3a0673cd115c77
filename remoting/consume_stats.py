"""GET_CONSUME_STATS (208) to one broker, as `mqadmin consumerProgress` asks it (`MQClientAPIImpl.getConsumeStats`):
header `GetConsumeStatsRequestHeader` (consumerGroup, topic: omitted for every topic the group has offsets of), body
`ConsumeStats` in fastjson's form, whose `offsetTable` map is keyed by `MessageQueue` objects written as JSON
objects (`{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":3,...}}`), which `json` refuses:
`parse_consume_stats` reads that form with `remoting.fastjson`. A non-SUCCESS answer raises
`MQBrokerException(code, remark, addr)`.

Figures as 4.9.1's `AdminBrokerProcessor.getConsumeStats` gives them per queue: `brokerOffset` the queue's max
offset, `consumerOffset` the committed offset (0 when none), `lastTimestamp` the store time of the message before the
committed offset (0 when the offset is 0); `consumeTps` the group's pull TPS over the topics (the real 4.9.1 answered
`0.0` when nothing pulled). `ConsumeStats.diff()` is `computeTotalDiff` (the "Diff Total" of consumerProgress)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import make_request
from remoting.errors import MQBrokerException, RemotingCommandException
from remoting.route import MessageQueue


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
        doc = fastjson.loads(text)
        table = (doc.get("offsetTable") or {}) if isinstance(doc, dict) else {}
        queues = {key: _message_queue_key(key) for key in table}
    except (ValueError, RecursionError) as e:
        raise RemotingCommandException(f"ConsumeStats body does not parse: {e}: {text[:200]!r}") from e
    if not isinstance(doc, dict):
        raise RemotingCommandException(f"ConsumeStats body is not an object: {text[:200]!r}")
    offsets: dict[MessageQueue, OffsetWrapper] = {}
    for key, value in table.items():
        mq = queues[key]
        offsets[MessageQueue(mq.get("topic", ""), mq.get("brokerName", ""), int(mq.get("queueId", 0)))] = \
            OffsetWrapper(int(value.get("brokerOffset", 0)), int(value.get("consumerOffset", 0)),
                          int(value.get("lastTimestamp", 0)))
    return ConsumeStats(offsets, float(doc.get("consumeTps") or 0.0))


def _message_queue_key(key: str) -> dict:
    """An `offsetTable` key: the MessageQueue object's JSON text (`fastjson.loads` hands object keys back so)."""
    if not key.lstrip().startswith("{"):
        return {}
    mq = fastjson.loads(key)
    return mq if isinstance(mq, dict) else {}


def dump_consume_stats(stats: ConsumeStats) -> bytes:
    """The body fastjson writes for a `ConsumeStats` (fields in name order), in `stats.offsets`' order."""
    entries = ",".join(
        "{" + f'"brokerName":{json.dumps(mq.broker_name)},"queueId":{mq.queue_id},"topic":{json.dumps(mq.topic)}' + "}:"
        + "{" + f'"brokerOffset":{w.broker_offset},"consumerOffset":{w.consumer_offset},'
        f'"lastTimestamp":{w.last_timestamp}' + "}"
        for mq, w in stats.offsets.items())
    return ('{"consumeTps":' + repr(float(stats.consume_tps)) + ',"offsetTable":{' + entries + "}}").encode()

