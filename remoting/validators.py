"""`Validators.checkMessage`: the checks a Java producer makes before sending, with Java's messages."""
from __future__ import annotations

import re

from remoting.codes import ResponseCode
from remoting.errors import MQClientException
from remoting.message import Message

VALID_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")
VALID_PATTERN_STR = "^[%|a-zA-Z0-9_-]+$"
TOPIC_MAX_LENGTH = 127
NOT_ALLOWED_SEND_TOPICS = frozenset({"SCHEDULE_TOPIC_XXXX"})
_VALID_SEEN: set[str] = set()
"""Topics that passed `check_topic` (a pure check of the name), so a load's every send does not run it again."""
_VALID_SEEN_MAX = 4096


def check_topic(topic: str | None) -> None:
    if topic in _VALID_SEEN:
        return
    _check_topic(topic)
    if type(topic) is str:
        if len(_VALID_SEEN) >= _VALID_SEEN_MAX:
            _VALID_SEEN.clear()
        _VALID_SEEN.add(topic)


def _check_topic(topic: str | None) -> None:
    if topic is None or not topic.strip():
        raise MQClientException.wrapping("The specified topic is blank", None)
    if not VALID_TOPIC.match(topic):
        raise MQClientException.wrapping(
            f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN_STR}", None)
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MQClientException.wrapping(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.",
                                         None)


def check_message(msg: Message | None, max_message_size: int) -> None:
    if msg is None:
        raise MQClientException(ResponseCode.MESSAGE_ILLEGAL, "the message is null")
    check_topic(msg.topic)
    if msg.topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientException.wrapping(f"Sending message to topic[{msg.topic}] is forbidden.", None)
    if msg.body is None:
        raise MQClientException(ResponseCode.MESSAGE_ILLEGAL, "the message body is null")
    if len(msg.body) == 0:
        raise MQClientException(ResponseCode.MESSAGE_ILLEGAL, "the message body length is zero")
    if len(msg.body) > max_message_size:
        raise MQClientException(ResponseCode.MESSAGE_ILLEGAL,
                                f"the message body size over max value, MAX: {max_message_size}")
