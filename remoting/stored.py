"""The stored message format: what the broker writes to its commitlog and what a PULL response body carries
(`MessageDecoder.encode/decode`, ROCKETMQ-FACTS C.9). Big-endian: TOTALSIZE, MAGICCODE (V1 with a 1-byte topic
length, V2 with 2 bytes), BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST
(IPv4 or IPv6 + port), STORETIMESTAMP, STOREHOST, RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET, body, topic,
properties. `encode_stored_message` is what the emulator writes; `decode_stored_messages` is what the consumer reads."""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from remoting.errors import RemotingCommandException
from remoting.message import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    STOREHOSTADDRESS_V6_FLAG,
    PropertyReaders,
    properties_to_string,
    string_to_properties,
)
from remoting.message_id import format_host, host_bytes

MESSAGE_MAGIC_CODE = -626843481  # V1, 0xDAA320A7
MESSAGE_MAGIC_CODE_V2 = -626843477  # 5.x, 2-byte topic length
BLANK_MAGIC_CODE = -875286124  # end-of-file padding in a commitlog file
_HEAD = struct.Struct(">iiiiiqqiq")  # size, magic, crc, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTs
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")


@dataclass(slots=True)
class MessageExt(PropertyReaders):
    """A stored message as decoded (`MessageExt`/`MessageClientExt`). Hosts are `ip:port` strings."""

    topic: str
    queue_id: int
    queue_offset: int
    commitlog_offset: int
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_timestamp: int = 0
    store_host: str = ""
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int = 0
    store_size: int = 0
    magic_code: int = MESSAGE_MAGIC_CODE
    msg_id: str = ""
    """The offset msg id (store host + commitlog offset), as Java's `MessageExt.getMsgId()` after decoding."""

    @property
    def offset_msg_id(self) -> str:
        return self.msg_id


def body_crc(body: bytes) -> int:
    """`UtilAll.crc32`: CRC32 with the sign bit cleared."""
    return zlib.crc32(body) & 0x7FFFFFFF


def compress_body(body: bytes, level: int = 5) -> bytes:
    """`UtilAll.compress` (zlib stream, Deflater level 5 by default)."""
    return zlib.compress(body, level)


def uncompress_body(body: bytes, sys_flag: int) -> bytes:
    """Uncompress a body whose sys flag has COMPRESSED set; the 5.x compression type bits pick zlib (0, 3), LZ4 (1)
    or ZSTD (2)."""
    kind = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    try:
        if kind in (0, 3):
            return zlib.decompress(body)
        if kind == 1:
            import lz4.frame  # optional

            return lz4.frame.decompress(body)
        if kind == 2:
            import zstandard  # optional

            return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    except ImportError as e:
        raise RemotingCommandException(f"body compressed with type {kind} needs the {e.name} package") from None
    except Exception as e:  # zlib.error, lz4/zstd errors
        raise RemotingCommandException(f"compressed body does not decompress: {e}") from None
    raise RemotingCommandException(f"unknown compression type {kind} in sys flag {sys_flag:#x}")


def encode_stored_message(
    *,
    topic: str,
    queue_id: int,
    body: bytes,
    properties: str | dict[str, str] | None,
    queue_offset: int,
    commitlog_offset: int,
    born_timestamp: int,
    born_host: str | tuple[str, int],
    store_timestamp: int,
    store_host: str | tuple[str, int],
    flag: int = 0,
    sys_flag: int = 0,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    crc: int | None = None,
    magic_code: int = MESSAGE_MAGIC_CODE,
) -> bytes:
    """One stored message, as `CommitLog.DefaultAppendMessageCallback` writes it. `body` is stored as given (already
    compressed when `sys_flag` says so); the IPv6 bits of `sys_flag` are set from the hosts' address families.
    `properties` is the wire properties string, or a dict written in Java HashMap order."""
    born = host_bytes(born_host)
    store = host_bytes(store_host)
    if len(born) == 20:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store) == 20:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    props = properties if isinstance(properties, str) else properties_to_string(properties)
    props_b = props.encode("utf-8")
    topic_b = topic.encode("utf-8")
    if magic_code == MESSAGE_MAGIC_CODE:
        if len(topic_b) > 127:
            raise ValueError(f"topic of {len(topic_b)} bytes needs MESSAGE_MAGIC_CODE_V2 (V1 allows 127)")
        topic_len = bytes([len(topic_b)])
    elif magic_code == MESSAGE_MAGIC_CODE_V2:
        topic_len = _SHORT.pack(len(topic_b))
    else:
        raise ValueError(f"magic code {magic_code} is neither V1 nor V2")
    if len(props_b) > 32767:
        raise ValueError(f"properties of {len(props_b)} bytes exceed 32767")
    size = (_HEAD.size + len(born) + 8 + len(store) + 4 + 8 + 4 + len(body) + len(topic_len) + len(topic_b)
            + 2 + len(props_b))
    crc = body_crc(body) if crc is None else crc
    return b"".join((
        _HEAD.pack(size, magic_code, crc, queue_id, flag, queue_offset, commitlog_offset, sys_flag, born_timestamp),
        born,
        _LONG.pack(store_timestamp),
        store,
        struct.pack(">iqi", reconsume_times, prepared_transaction_offset, len(body)),
        body,
        topic_len,
        topic_b,
        _SHORT.pack(len(props_b)),
        props_b,
    ))


def decode_stored_message(buf: bytes | memoryview, pos: int = 0, *, uncompress: bool = True) -> tuple[MessageExt, int]:
    """Decode the message at `pos`; returns it and the position after it. Raises `RemotingCommandException` on a
    truncated or malformed message."""
    view = memoryview(buf)
    try:
        size, magic, crc, queue_id, flag, queue_offset, phy_offset, sys_flag, born_ts = _HEAD.unpack_from(view, pos)
        if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
            raise RemotingCommandException(f"bad magic code {magic:#x} at {pos}")
        if size < _HEAD.size or pos + size > len(view):
            raise RemotingCommandException(f"message size {size} at {pos} exceeds the {len(view)} byte buffer")
        end = pos + size
        p = pos + _HEAD.size
        born_len = 16 if sys_flag & BORNHOST_V6_FLAG else 4
        born_ip = bytes(view[p : p + born_len])
        (born_port,) = _INT.unpack_from(view, p + born_len)
        p += born_len + 4
        (store_ts,) = _LONG.unpack_from(view, p)
        p += 8
        store_len = 16 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 4
        store_ip_port = bytes(view[p : p + store_len + 4])
        (store_port,) = _INT.unpack_from(view, p + store_len)
        p += store_len + 4
        reconsume, prepared, body_len = struct.unpack_from(">iqi", view, p)
        p += 16
        if body_len < 0 or p + body_len > end:
            raise RemotingCommandException(f"body length {body_len} at {pos} exceeds the message")
        body = bytes(view[p : p + body_len])
        p += body_len
        if magic == MESSAGE_MAGIC_CODE:
            topic_len = view[p]
            p += 1
        else:
            (topic_len,) = _SHORT.unpack_from(view, p)
            p += 2
        if topic_len < 0 or p + topic_len > end:
            raise RemotingCommandException(f"topic length {topic_len} at {pos} exceeds the message")
        topic = bytes(view[p : p + topic_len]).decode("utf-8")
        p += topic_len
        (props_len,) = _SHORT.unpack_from(view, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise RemotingCommandException(f"properties length {props_len} at {pos} exceed the message")
        props = string_to_properties(bytes(view[p : p + props_len]).decode("utf-8"))
    except struct.error as e:
        raise RemotingCommandException(f"truncated stored message at {pos}: {e}") from None
    except (UnicodeDecodeError, IndexError) as e:
        raise RemotingCommandException(f"malformed stored message at {pos}: {e}") from None
    if uncompress and sys_flag & COMPRESSED_FLAG:
        body = uncompress_body(body, sys_flag)
    msg = MessageExt(
        topic=topic, queue_id=queue_id, queue_offset=queue_offset, commitlog_offset=phy_offset, body=body,
        properties=props, flag=flag, sys_flag=sys_flag, born_timestamp=born_ts,
        born_host=format_host(born_ip, born_port), store_timestamp=store_ts,
        store_host=format_host(store_ip_port[:store_len], store_port), reconsume_times=reconsume,
        prepared_transaction_offset=prepared, body_crc=crc, store_size=size, magic_code=magic,
        msg_id=(store_ip_port + _LONG.pack(phy_offset)).hex().upper(),
    )
    return msg, end


def decode_stored_messages(buf: bytes | memoryview, *, uncompress: bool = True) -> list[MessageExt]:
    """All messages in `buf` (a PULL body or a stretch of commitlog), stopping at a blank (end-of-file) marker."""
    out: list[MessageExt] = []
    pos, n = 0, len(buf)
    while pos < n:
        if n - pos >= 8 and _INT.unpack_from(buf, pos + 4)[0] == BLANK_MAGIC_CODE:
            break
        msg, pos = decode_stored_message(buf, pos, uncompress=uncompress)
        out.append(msg)
    return out
