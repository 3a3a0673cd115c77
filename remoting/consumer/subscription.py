"""A push consumer's subscriptions: `SubscriptionData` as `FilterAPI.buildSubscriptionData` makes it from a TAG
expression (`*` or `a || b`: tags sorted, their codes Java's `String.hashCode`, subVersion the subscribe time in
ms), the group's retry topic `%RETRY%<group>` (every CLUSTERING consumer subscribes it at start), and the
`ConsumerData` the heartbeat carries (fastjson's property order)."""
from __future__ import annotations

import time

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX


def retry_topic(group: str) -> str:
    """`MixAll.getRetryTopic(group)`."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def build_subscription(topic: str, expression: str = "*") -> dict:
    """`FilterAPI.buildSubscriptionData(topic, subString)` as fastjson writes it."""
    expression = (expression or "*").strip() or "*"
    tags = [] if expression == "*" else sorted({t.strip() for t in expression.split("||") if t.strip()})
    return {"classFilterMode": False, "codeSet": [hash_tag(t) for t in tags], "expressionType": "TAG",
            "subString": expression, "subVersion": int(time.time() * 1000), "tagsSet": tags, "topic": topic}


def consumer_data(group: str, consume_from: str, subscriptions: dict[str, dict]) -> dict:
    """`ConsumerData` as fastjson writes it (properties in name order)."""
    return {"consumeFromWhere": consume_from, "consumeType": "CONSUME_PASSIVELY", "groupName": group,
            "messageModel": "CLUSTERING", "subscriptionDataSet": list(subscriptions.values()), "unitMode": False}


def hash_tag(tag: str) -> int:
    """Java's `String.hashCode` (SubscriptionData.codeSet)."""
    h = 0
    for ch in tag:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h
