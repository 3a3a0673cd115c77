"""The remoting frame codec: `int32 length | int32 serializeType<<24 | headerLength | header | body`, with the header in
JSON (fastjson's bean layout) or RocketMQ's binary layout (ROCKETMQ-FACTS C.1, C.2). Frames larger than 16 MiB, as
Netty's `LengthFieldBasedFrameDecoder(FRAME_MAX_LENGTH...)` counts them, are refused before their bytes are read."""
from __future__ import annotations

import json
import struct

try:
    import orjson
except ImportError:  # the emulator's Docker image carries only the standard library: `json` does it all there
    orjson = None

from remoting.codes import LanguageCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemotingCommandException

FRAME_MAX_LENGTH = 16 * 1024 * 1024
"""`com.rocketmq.remoting.frameMaxLength`: the whole frame, its 4-byte length field included."""

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_TWO_INTS = struct.Struct(">ii")
_BIN_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_JSON_KEYS = frozenset(("code", "extFields", "flag", "language", "opaque", "remark", "serializeTypeCurrentRPC",
                        "version"))
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_JSON_DECODER = json.JSONDecoder()
_STR_ONLY = frozenset((str,))
_SERIALIZE_NAMES = {t: t.name for t in SerializeType} | {t.value: t.name for t in SerializeType}
_LANGUAGES = {lang.value: lang.name for lang in LanguageCode}


def encode(cmd: RemotingCommand) -> bytes:
    """The whole frame of `cmd`, length field included."""
    header = encode_header(cmd)
    total = 4 + len(header) + len(cmd.body)
    if total + 4 > FRAME_MAX_LENGTH:
        raise RemotingCommandException(f"frame of {total + 4} bytes exceeds the {FRAME_MAX_LENGTH} byte limit")
    return _TWO_INTS.pack(total, (int(cmd.serialize_type) << 24) | len(header)) + header + cmd.body


def encode_header(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return _encode_binary_header(cmd)
    return _encode_json_header(cmd)


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    """fastjson's compact layout, keys in bean order. orjson writes the same bytes as `json` with these options for
    the header's ints and strings (control characters as \\uXXXX, no ASCII escaping); anything it refuses (a lone
    surrogate, a non-string key, an int past 64 bits) and any peer-sent extra key go through `json`."""
    doc = _json_doc(cmd)
    if orjson is not None and not cmd.extra_header:
        try:
            return orjson.dumps(doc)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _JSON.encode(doc).encode("utf-8")


def _json_doc(cmd: RemotingCommand) -> dict:
    doc: dict = {"code": cmd.code}
    if cmd.ext_fields is not None:
        doc["extFields"] = cmd.ext_fields
    doc["flag"] = cmd.flag
    doc["language"] = cmd.language
    doc["opaque"] = cmd.opaque
    if cmd.remark is not None:
        doc["remark"] = cmd.remark
    name = _SERIALIZE_NAMES.get(cmd.serialize_type)
    doc["serializeTypeCurrentRPC"] = name if name is not None else SerializeType(cmd.serialize_type).name
    doc["version"] = cmd.version
    if cmd.extra_header:
        doc.update(cmd.extra_header)
    return doc


_LANGUAGE_CODES = {lang.name: lang.value for lang in LanguageCode}
_PAIR_CACHE: dict[tuple[str, str], bytes] = {}
PAIR_CACHE_MAX = 4096
"""Encoded (key, value) entries kept: a producer's fields are mostly the same from send to send (group, topic,
queue id, flags); the cache is emptied when full, so unique values (timestamps, properties) never grow it."""


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    language = _LANGUAGE_CODES.get(cmd.language, LanguageCode.OTHER.value)
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    if cmd.ext_fields:
        get = _PAIR_CACHE.get
        ext = b"".join([get(item) or _binary_pair(item) for item in cmd.ext_fields.items()])
    else:
        ext = b""
    return b"".join((_BIN_FIXED.pack(cmd.code, language, cmd.version, cmd.opaque, cmd.flag), _INT.pack(len(remark)),
                     remark, _INT.pack(len(ext)), ext))


def _binary_pair(item: tuple[str, str]) -> bytes:
    """One extFields entry, not yet in the cache: short key length, key, int value length, value (UTF-8)."""
    k, v = item[0].encode("utf-8"), item[1].encode("utf-8")
    pair = _SHORT.pack(len(k)) + k + _INT.pack(len(v)) + v
    if len(_PAIR_CACHE) >= PAIR_CACHE_MAX:
        _PAIR_CACHE.clear()
    _PAIR_CACHE[item] = pair
    return pair


def decode_frame(frame: bytes | memoryview) -> RemotingCommand:
    """Decode one frame given without its 4-byte length field."""
    frame = memoryview(frame)
    size = len(frame)
    if size < 4:
        raise RemotingCommandException(f"frame of {size} bytes has no header length")
    (ori,) = _INT.unpack_from(frame, 0)
    serialize = (ori >> 24) & 0xFF
    header_length = ori & 0xFFFFFF
    if header_length > size - 4:
        raise RemotingCommandException(f"header length {header_length} exceeds the frame ({size - 4} bytes)")
    header = frame[4 : 4 + header_length]
    body = bytes(frame[4 + header_length :]) if size > 4 + header_length else b""
    if serialize == 0:  # SerializeType.JSON
        cmd = _decode_json_header(header)
    elif serialize == SerializeType.ROCKETMQ:
        cmd = _decode_binary_header(header)
    else:
        raise RemotingCommandException(f"unknown serialize type {serialize}")
    cmd.body = body
    return cmd


def _decode_json_header(raw: bytes | memoryview) -> RemotingCommand:
    """The fast path (orjson) takes the headers a Java peer writes: only the known keys, integer numbers, string
    extFields values. Anything else, and anything orjson refuses, is decoded by `json` as before (orjson reads ints
    past 64 bits as floats and refuses NaN, a BOM and lone surrogates, where `json` does not)."""
    if orjson is None:
        return _decode_json_header_generic(raw)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    if type(doc) is dict and _JSON_KEYS.issuperset(doc):
        get = doc.get
        code, ext, remark = get("code"), get("extFields"), get("remark")
        language, version, opaque, flag = get("language", "JAVA"), get("version", 0), get("opaque", 0), get("flag", 0)
        if (type(code) is int and type(version) is int and type(opaque) is int and type(flag) is int
                and type(language) is str and (remark is None or type(remark) is str)
                and (ext is None or (type(ext) is dict and _STR_ONLY.issuperset(map(type, ext.values()))))):
            return RemotingCommand(code, language, version, opaque, flag, remark, ext, b"", SerializeType.JSON, {})
    return _decode_json_header_generic(raw)


def _decode_json_header_generic(raw: bytes | memoryview) -> RemotingCommand:
    raw = bytes(raw)
    try:
        if raw[:1] == b"{" and raw[1:2] != b"\x00":  # UTF-8 without a BOM, as json.loads would detect it
            doc = _JSON_DECODER.decode(raw.decode("utf-8", "surrogatepass"))
        else:
            doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RemotingCommandException(f"header is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("code"), int):
        raise RemotingCommandException("JSON header has no integer code")
    get = doc.get
    ext = get("extFields")
    if ext is not None and not isinstance(ext, dict):
        raise RemotingCommandException("JSON header extFields is not an object")
    if ext is not None:
        for value in ext.values():
            if type(value) is not str:  # Java writes strings; anything else is made one
                ext = {str(k): (v if type(v) is str else json.dumps(v) if isinstance(v, dict | list) else str(v))
                       for k, v in ext.items()}
                break
    remark = get("remark")
    extra = None if _JSON_KEYS.issuperset(doc) else doc.keys() - _JSON_KEYS
    language, version, opaque, flag = get("language", "JAVA"), get("version", 0), get("opaque", 0), get("flag", 0)
    try:
        return RemotingCommand(
            code=doc["code"],
            language=language if type(language) is str else str(language),
            version=version if type(version) is int else int(version),
            opaque=opaque if type(opaque) is int else int(opaque),
            flag=flag if type(flag) is int else int(flag),
            remark=remark if remark is None or type(remark) is str else str(remark),
            ext_fields=ext,
            serialize_type=SerializeType.JSON,
            extra_header={k: doc[k] for k in doc if k in extra} if extra else {},
        )
    except (TypeError, ValueError) as e:
        raise RemotingCommandException(f"bad JSON header field: {e}") from None


def _decode_binary_header(h: memoryview) -> RemotingCommand:
    try:
        code, language, version, opaque, flag = _BIN_FIXED.unpack_from(h, 0)
        pos = _BIN_FIXED.size
        remark, pos = _read_string(h, pos, 4)
        (ext_len,) = _INT.unpack_from(h, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > len(h):
            raise RemotingCommandException(f"extFields length {ext_len} exceeds the header")
        ext: dict[str, str] | None = None
        if ext_len > 0:
            ext = _read_ext(bytes(h), pos, pos + ext_len)
    except struct.error as e:
        raise RemotingCommandException(f"truncated binary header: {e}") from None
    return RemotingCommand(
        code=code,
        language=_LANGUAGES.get(language, "OTHER"),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _read_ext(raw: bytes, pos: int, end: int) -> dict[str, str]:
    """The extFields map in `raw[pos:end]`: (short length, key, int length, value)... as `_read_string` reads each
    (lengths are read from the whole header, as there), in one pass."""
    ext: dict[str, str] = {}
    short_at, int_at = _SHORT.unpack_from, _INT.unpack_from
    try:
        while pos < end:
            (length,) = short_at(raw, pos)
            pos += 2
            if length < 0 or pos + length > end:
                raise RemotingCommandException(f"string length {length} exceeds the header")
            key = raw[pos : pos + length].decode("utf-8")
            pos += length
            (length,) = int_at(raw, pos)
            pos += 4
            if length < 0 or pos + length > end:
                raise RemotingCommandException(f"string length {length} exceeds the header")
            ext[key] = raw[pos : pos + length].decode("utf-8")
            pos += length
    except UnicodeDecodeError as e:
        raise RemotingCommandException(f"header string is not UTF-8: {e}") from None
    return ext


def _read_string(h: memoryview, pos: int, width: int, end: int | None = None) -> tuple[str | None, int]:
    end = len(h) if end is None else end
    (length,) = struct.unpack_from(">h" if width == 2 else ">i", h, pos)
    pos += width
    if length < 0 or pos + length > end:
        raise RemotingCommandException(f"string length {length} exceeds the header")
    if length == 0:
        return None, pos
    try:
        return bytes(h[pos : pos + length]).decode("utf-8"), pos + length
    except UnicodeDecodeError as e:
        raise RemotingCommandException(f"header string is not UTF-8: {e}") from None


class FrameReader:
    """Incremental decoder for a byte stream: `feed(data)` returns the complete commands so far. A length that is
    negative, too small or over the limit raises at once, so a bad peer can never make it buffer without bound."""

    def __init__(self, max_frame: int = FRAME_MAX_LENGTH) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> list[RemotingCommand]:
        buf = self._buf
        buf += data
        out: list[RemotingCommand] = []
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (length,) = _INT.unpack_from(buf, pos)
            if length < 4 or length + 4 > self._max:
                raise RemotingCommandException(f"frame length {length} out of range (4..{self._max - 4})")
            if n - pos - 4 < length:
                break
            out.append(decode_frame(memoryview(buf)[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        if pos:
            del buf[:pos]
        return out

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buf)
