"""`CommitLog.checkMessageAndReturnSize`: what recovery and the reput service take from the commitlog, read field by
field as the broker reads its ByteBuffer. A blank record ends a file (size 0); an unknown magic code, a read past the
buffer's end or a length that does not fit the record is nothing readable (-1); a body whose CRC differs (when asked)
is -1; a record whose fields add up to another total than its size field is a torn one (its size, not a success).
A topic is read back as its bytes say, NUL included: nothing here refuses a topic the broker would take."""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from emulator.logs import store_log
from remoting.hashmap import java_string_hash
from remoting.message import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG, string_to_properties
from remoting.stored import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_BYTE = struct.Struct(">b")
_FIXED = struct.Struct(">iiiqqiq")  # bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp


@dataclass(frozen=True, slots=True)
class DispatchRequest:
    msg_size: int
    """> 0: a message of this size (a torn one when not `success`); 0: the end of a file; -1: nothing readable."""
    success: bool
    topic: str = ""
    queue_id: int = 0
    queue_offset: int = 0
    commitlog_offset: int = 0
    tags_code: int = 0
    underflow: bool = False
    """Not readable because the buffer ended inside the record (more bytes may come: a chunk cut short)."""
    read_to: int = 0
    """Where the reading stopped in the buffer (the ByteBuffer's position: recovery's `pos=` after a crash)."""


class _Underflow(Exception):
    """Java's BufferUnderflowException: a read past the buffer's limit (at `at`, where the position stays)."""

    def __init__(self, at: int) -> None:
        super().__init__(at)
        self.at = at


def message_length(sys_flag: int, body_len: int, topic_len: int, props_len: int, v2: bool) -> int:
    """`calMsgLength`: the size a record with these field lengths has."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    return (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4 + max(body_len, 0)
            + (2 if v2 else 1) + topic_len + 2 + max(props_len, 0))


def check_message(buf, pos: int, limit: int, *, check_crc: bool, read_body: bool = True, accept_v2: bool = False,
                  quiet: bool = False) -> DispatchRequest:
    """The record at `buf[pos:]`, reading no further than `limit` (the end of the file, or of the readable bytes).
    `accept_v2`: the release reads MESSAGE_MAGIC_CODE_V2 records (5.1+); `quiet`: log nothing (a caller that asks
    again about the same bytes, as the reput service does every millisecond, has logged it once)."""
    try:
        return _check(buf, pos, limit, check_crc, read_body, accept_v2, store_log if not quiet else _SILENT)
    except _Underflow as e:
        return DispatchRequest(-1, False, underflow=True, read_to=e.at)


def _take(pos: int, n: int, limit: int) -> int:
    if n < 0 or pos + n > limit:
        raise _Underflow(pos)
    return pos + n


def _unreadable(at: int) -> DispatchRequest:
    return DispatchRequest(-1, False, read_to=at)


class _Silent:
    def warning(self, *_args) -> None:
        pass

    error = warning


_SILENT = _Silent()


def _check(buf, pos: int, limit: int, check_crc: bool, read_body: bool, accept_v2: bool, log) -> DispatchRequest:
    p = _take(pos, 8, limit)
    total, magic = struct.unpack_from(">ii", buf, pos)
    if magic == BLANK_MAGIC_CODE:
        return DispatchRequest(0, True, read_to=p)
    if magic != MESSAGE_MAGIC_CODE and not (accept_v2 and magic == MESSAGE_MAGIC_CODE_V2):
        log.warning("found a illegal magic code 0x%x", magic & 0xFFFFFFFF)
        return _unreadable(p)
    if total < 0:  # new byte[totalSize]: NegativeArraySizeException, caught
        return _unreadable(p)
    body_crc_field, queue_id, _flag, queue_offset, phy, sys_flag, _born = _FIXED.unpack_from(buf, _at(p, 40, limit))
    p += 40
    born_len = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store_len = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    if born_len > total or store_len > total:  # copied into a byte[totalSize]: IndexOutOfBounds, caught
        _take(p, born_len, limit)
        return _unreadable(p)
    p = _take(p, born_len + 8 + store_len + 4 + 8, limit)
    (body_len,) = _INT.unpack_from(buf, _at(p, 4, limit))
    p += 4
    if body_len > 0:
        if read_body:
            if body_len > total:
                return _unreadable(p)
            body_at, p = p, _take(p, body_len, limit)
            if check_crc:
                crc = zlib.crc32(buf[body_at:p]) & 0x7FFFFFFF
                if crc != body_crc_field:
                    log.warning("CRC check failed. bodyCRC=%d, currentCRC=%d", crc, body_crc_field)
                    return _unreadable(p)
        else:
            p = _take(p, body_len, limit)
    v2 = magic == MESSAGE_MAGIC_CODE_V2
    if v2:
        (topic_len,) = _SHORT.unpack_from(buf, _at(p, 2, limit))
        p += 2
    else:
        (topic_len,) = _BYTE.unpack_from(buf, _at(p, 1, limit))
        p += 1
    if topic_len < 0 or topic_len > total:
        return _unreadable(p)
    topic = bytes(buf[p:_take(p, topic_len, limit)]).decode("utf-8", "replace")
    p += topic_len
    (props_len,) = _SHORT.unpack_from(buf, _at(p, 2, limit))
    p += 2
    tags_code = 0
    if props_len > 0:
        if props_len > total:
            return _unreadable(p)
        props = bytes(buf[p:_take(p, props_len, limit)]).decode("utf-8", "replace")
        p += props_len
        tags = string_to_properties(props).get("TAGS") if "TAGS" in props else None
        if tags:
            h = java_string_hash(tags)
            tags_code = h - (1 << 32) if h & 0x80000000 else h
    read_length = message_length(sys_flag, body_len, topic_len, props_len, v2)
    if total != read_length:
        log.error("[BUG]read total count not equals msg total size. totalSize=%d, readTotalCount=%d, bodyLen=%d, "
                        "topicLen=%d, propertiesLength=%d", total, read_length, body_len, topic_len, props_len)
        return DispatchRequest(total, False, read_to=p) if total > 0 else _unreadable(p)
    return DispatchRequest(total, True, topic, queue_id, queue_offset, phy, tags_code, read_to=p)


def _at(p: int, n: int, limit: int) -> int:
    _take(p, n, limit)
    return p
