"""A message as the producer sends it: topic, body, flag and the properties map (`MessageConst` keys such as KEYS,
TAGS, WAIT, UNIQ_KEY), and the properties string the wire and the commitlog carry (`name\\x01value\\x02...`, in
Java HashMap order, trailing separator dropped as 4.9.1 does; parsed like `MessageDecoder.string2messageProperties`).
The stored (commitlog) format is in `remoting.stored`, message ids in `remoting.message_id` (import them from there:
this module imports neither, so `remoting.stored` can build on it)."""
from __future__ import annotations

from remoting.hashmap import java_hashmap_order

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
KEY_SEPARATOR = " "

# MessageConst property names
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MSG_REGION = "MSG_REGION"
PROPERTY_TRACE_SWITCH = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_CLUSTER = "CLUSTER"

# MessageSysFlag bits
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x1 << 1
TRANSACTION_PREPARED_TYPE = 0x1 << 2
TRANSACTION_COMMIT_TYPE = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE = 0x3 << 2
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOSTADDRESS_V6_FLAG = 0x1 << 5
COMPRESSION_LZ4_TYPE = 0x1 << 8
COMPRESSION_ZSTD_TYPE = 0x2 << 8
COMPRESSION_ZLIB_TYPE = 0x3 << 8
COMPRESSION_TYPE_MASK = 0x7 << 8


class PropertyReaders:
    """The property getters a sent message (`Message`) and a stored one (`remoting.stored.MessageExt`) share; the
    class using it has a `properties` dict."""

    __slots__ = ()
    properties: dict[str, str]

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(PROPERTY_KEYS)

    @property
    def uniq_key(self) -> str | None:
        """The client message id (`MessageClientIDSetter.getUniqID`), set at the first send attempt."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)


class Message(PropertyReaders):
    """`org.apache.rocketmq.common.message.Message`. Properties are kept in insertion order (the constructor puts
    TAGS, KEYS, WAIT like Java's); the wire order is decided when they are written (`properties_to_string`)."""

    __slots__ = ("topic", "body", "flag", "properties")

    def __init__(
        self,
        topic: str,
        body: bytes | str,
        tags: str | None = None,
        keys: str | list[str] | tuple[str, ...] | None = None,
        flag: int = 0,
        wait_store_msg_ok: bool = True,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.topic = topic
        self.body = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        self.flag = flag
        self.properties: dict[str, str] = {}
        if tags:
            self.properties[PROPERTY_TAGS] = tags
        if keys:
            self.properties[PROPERTY_KEYS] = keys if isinstance(keys, str) else KEY_SEPARATOR.join(keys)
        self.properties[PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait_store_msg_ok else "false"
        for name, value in (properties or {}).items():
            self.properties[name] = value

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        self.properties[name] = value

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(PROPERTY_WAIT_STORE_MSG_OK, "true") != "false"

    def __repr__(self) -> str:
        return f"Message(topic={self.topic!r}, flag={self.flag}, properties={self.properties!r}, body={len(self.body)}B)"


def properties_to_string(properties: dict[str, str | None] | None) -> str:
    """`MessageDecoder.messageProperties2String`: entries in Java HashMap order, None values skipped, no trailing
    separator."""
    if not properties:
        return ""
    return PROPERTY_SEPARATOR.join([
        f"{name}{NAME_VALUE_SEPARATOR}{value}"
        for name in java_hashmap_order(properties)
        if (value := properties[name]) is not None
    ])


def string_to_properties(text: str | None) -> dict[str, str]:
    """`MessageDecoder.string2messageProperties`: split on \\x02, then on the first \\x01; segments shorter than 3
    characters or without a name or value are skipped, as Java skips them."""
    out: dict[str, str] = {}
    if not text:
        return out
    length = len(text)
    index = 0
    while index < length:
        end = text.find(PROPERTY_SEPARATOR, index)
        if end < 0:
            end = length
        if end - index >= 3:
            sep = text.find(NAME_VALUE_SEPARATOR, index)
            if index < sep < end - 1:
                out[text[index:sep]] = text[sep + 1 : end]
        index = end + 1
    return out

