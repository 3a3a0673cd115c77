"""Custom headers of the push consumer's requests (field order as the Java classes): QUERY_CONSUMER_OFFSET (14),
UPDATE_CONSUMER_OFFSET (15), CONSUMER_SEND_MSG_BACK (36), GET_CONSUMER_LIST_BY_GROUP (38) and the broker's
NOTIFY_CONSUMER_IDS_CHANGED (40)."""
from __future__ import annotations

from dataclasses import dataclass

from remoting.headers import CommandHeader


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    REQUIRED = frozenset({"consumerGroup", "topic", "queueId"})
    consumerGroup: str | None = None
    topic: str | None = None
    queueId: int | None = None


@dataclass(slots=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    REQUIRED = frozenset({"offset"})
    offset: int | None = None


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    REQUIRED = frozenset({"consumerGroup", "topic", "queueId", "commitOffset"})
    consumerGroup: str | None = None
    topic: str | None = None
    queueId: int | None = None
    commitOffset: int | None = None


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    REQUIRED = frozenset({"offset", "group", "delayLevel"})
    offset: int | None = None
    group: str | None = None
    delayLevel: int | None = None
    originMsgId: str | None = None
    originTopic: str | None = None
    unitMode: bool | None = False
    maxReconsumeTimes: int | None = None


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    REQUIRED = frozenset({"consumerGroup"})
    consumerGroup: str | None = None


@dataclass(slots=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    REQUIRED = frozenset({"consumerGroup"})
    consumerGroup: str | None = None
