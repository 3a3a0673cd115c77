"""Typed custom headers (`CommandCustomHeader`): the fields a request or response carries in `extFields`.
Fields are declared in the Java class's order (that is the insertion order of `makeCustomHeaderToNet`, which decides
collisions in the HashMap order); `to_fields()` gives the wire dict (None left out, booleans `true`/`false`, Java
HashMap order) and `from_fields()` parses one back like `decodeCommandCustomHeader` (a missing `@CFNotNull` field
raises `RemotingCommandException("the custom field <x> is null")`). Field names are the Java ones."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from remoting.errors import RemotingCommandException
from remoting.hashmap import java_ordered

H = TypeVar("H", bound="CommandHeader")

# PullSysFlag bits
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8
PULL_FLAG_LITE_PULL = 0x10

# PermName bits
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
MASTER_ID = 0


def _kind(annotation: str) -> type:
    if "bool" in annotation:
        return bool
    if "int" in annotation:
        return int
    return str


class CommandHeader:
    """Base of the typed headers. `REQUIRED` lists the `@CFNotNull` fields."""

    __slots__ = ()
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    _spec: ClassVar[tuple[tuple[str, type], ...]]

    @classmethod
    def spec(cls) -> tuple[tuple[str, type], ...]:
        spec = cls.__dict__.get("_spec")
        if spec is None:
            spec = tuple((f.name, _kind(str(f.type))) for f in dataclasses.fields(cls))  # type: ignore[arg-type]
            cls._spec = spec
        return spec

    def to_fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, _ in self.spec():
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return java_ordered(out)

    @classmethod
    def from_fields(cls: type[H], ext: dict[str, str] | None) -> H:
        ext = ext or {}
        values: dict[str, Any] = {}
        for name, kind in cls.spec():
            raw = ext.get(name)
            if raw is None:
                if name in cls.REQUIRED:
                    raise RemotingCommandException(f"the custom field <{name}> is null")
                continue
            if kind is bool:
                values[name] = raw.lower() == "true"
            elif kind is int:
                try:
                    values[name] = int(raw)
                except ValueError:
                    raise RemotingCommandException(f"the custom field <{name}> is not a number: {raw!r}") from None
            else:
                values[name] = raw
        try:
            return cls(**values)
        except TypeError as e:
            raise RemotingCommandException(f"{cls.__name__}: {e}") from None


def _required(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass(slots=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE: the V1 fields under single letters (ROCKETMQ-FACTS C.4)."""

    REQUIRED = _required("a", "b", "c", "d", "e", "f", "g", "h")
    a: str | None = None  # producerGroup
    b: str | None = None  # topic
    c: str | None = None  # defaultTopic
    d: int | None = None  # defaultTopicQueueNums
    e: int | None = None  # queueId
    f: int | None = None  # sysFlag
    g: int | None = None  # bornTimestamp
    h: int | None = None  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = False  # unitMode (primitive boolean in 4.9.1: always sent)
    l: int | None = None  # noqa: E741  maxReconsumeTimes / consumeRetryTimes
    m: bool | None = False  # batch (primitive boolean in 4.9.1: always sent)
    n: str | None = None  # brokerName (4.9.5+, 5.1.0+ only)

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producerGroup=self.a, topic=self.b, defaultTopic=self.c, defaultTopicQueueNums=self.d, queueId=self.e,
            sysFlag=self.f, bornTimestamp=self.g, flag=self.h, properties=self.i, reconsumeTimes=self.j,
            unitMode=self.k, batch=self.m, maxReconsumeTimes=self.l, brokerName=self.n)


@dataclass(slots=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10), the long-named V1 header."""

    REQUIRED = _required("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                         "bornTimestamp", "flag")
    producerGroup: str | None = None
    topic: str | None = None
    defaultTopic: str | None = None
    defaultTopicQueueNums: int | None = None
    queueId: int | None = None
    sysFlag: int | None = None
    bornTimestamp: int | None = None
    flag: int | None = None
    properties: str | None = None
    reconsumeTimes: int | None = None
    unitMode: bool | None = False
    batch: bool | None = False
    maxReconsumeTimes: int | None = None
    brokerName: str | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2(
            a=self.producerGroup, b=self.topic, c=self.defaultTopic, d=self.defaultTopicQueueNums, e=self.queueId,
            f=self.sysFlag, g=self.bornTimestamp, h=self.flag, i=self.properties, j=self.reconsumeTimes,
            k=self.unitMode, l=self.maxReconsumeTimes, m=self.batch, n=self.brokerName)


@dataclass(slots=True)
class SendMessageResponseHeader(CommandHeader):
    REQUIRED = _required("msgId", "queueId", "queueOffset")
    msgId: str | None = None
    queueId: int | None = None
    queueOffset: int | None = None
    transactionId: str | None = None

    @classmethod
    def from_fields(cls, ext: dict[str, str] | None) -> SendMessageResponseHeader:
        """The generic decoding, straight for the answer of every send; anything unusual takes the generic path
        (and its errors)."""
        if ext:
            msg_id, queue_id, queue_offset = ext.get("msgId"), ext.get("queueId"), ext.get("queueOffset")
            if msg_id is not None and queue_id is not None and queue_offset is not None:
                try:
                    return cls(msg_id, int(queue_id), int(queue_offset), ext.get("transactionId"))
                except ValueError:
                    pass
        return CommandHeader.from_fields.__func__(cls, ext)


@dataclass(slots=True)
class PullMessageRequestHeader(CommandHeader):
    REQUIRED = _required("consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
                         "suspendTimeoutMillis", "subVersion")
    consumerGroup: str | None = None
    topic: str | None = None
    queueId: int | None = None
    queueOffset: int | None = None
    maxMsgNums: int | None = None
    sysFlag: int | None = None
    commitOffset: int | None = None
    suspendTimeoutMillis: int | None = None
    subscription: str | None = None
    subVersion: int | None = None
    expressionType: str | None = None


@dataclass(slots=True)
class PullMessageResponseHeader(CommandHeader):
    REQUIRED = _required("suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset")
    suggestWhichBrokerId: int | None = None
    nextBeginOffset: int | None = None
    minOffset: int | None = None
    maxOffset: int | None = None


@dataclass(slots=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    REQUIRED = _required("topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType",
                         "order")
    topic: str | None = None
    defaultTopic: str | None = None
    readQueueNums: int | None = None
    writeQueueNums: int | None = None
    perm: int | None = None
    topicFilterType: str | None = None
    topicSysFlag: int | None = None
    order: bool | None = False


@dataclass(slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    REQUIRED = _required("topic")
    topic: str | None = None


@dataclass(slots=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30)."""

    REQUIRED = _required("topic", "queueId")
    topic: str | None = None
    queueId: int | None = None


@dataclass(slots=True)
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31)."""

    REQUIRED = _required("topic", "queueId")
    topic: str | None = None
    queueId: int | None = None


@dataclass(slots=True)
class OffsetResponseHeader(CommandHeader):
    """GetMaxOffsetResponseHeader / GetMinOffsetResponseHeader."""

    REQUIRED = _required("offset")
    offset: int | None = None


@dataclass(slots=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35)."""

    REQUIRED = _required("clientID")
    clientID: str | None = None
    producerGroup: str | None = None
    consumerGroup: str | None = None


@dataclass(slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103), broker to name server."""

    REQUIRED = _required("brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId")
    brokerName: str | None = None
    brokerAddr: str | None = None
    clusterName: str | None = None
    haServerAddr: str | None = None
    brokerId: int | None = None
    compressed: bool | None = False
    bodyCrc32: int | None = 0


@dataclass(slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    haServerAddr: str | None = None
    masterAddr: str | None = None
