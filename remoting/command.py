"""`RemotingCommand`: one request or response of the remoting protocol, as the Java class holds it."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from remoting.codes import RPC_ONEWAY, RPC_TYPE_RESPONSE, VERSION_V4_9_1, LanguageCode, SerializeType
from remoting.hashmap import java_ordered

_opaques = itertools.count(0)


def next_opaque() -> int:
    """A process-wide request id, as `RemotingCommand.requestId` (an AtomicInteger) hands them out."""
    return next(_opaques) & 0x7FFFFFFF


@dataclass(slots=True)
class RemotingCommand:
    """A frame's content. `ext_fields` is None when the sender had none (JSON omits the key, binary sends length 0)."""

    code: int
    language: str = LanguageCode.JAVA.name
    version: int = VERSION_V4_9_1
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON
    extra_header: dict = field(default_factory=dict)
    """Header keys a peer sent that RemotingCommand does not know (kept so a decoded frame re-encodes the same)."""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    def field(self, key: str, default: str | None = None) -> str | None:
        """One extFields value (custom headers are flattened into extFields on the wire)."""
        return (self.ext_fields or {}).get(key, default)


def make_request(
    code: int,
    ext_fields: dict[str, object] | None = None,
    body: bytes = b"",
    *,
    language: str = LanguageCode.JAVA.name,
    version: int = VERSION_V4_9_1,
    oneway: bool = False,
    serialize_type: SerializeType = SerializeType.JSON,
) -> RemotingCommand:
    """A request with a fresh opaque; header values become strings and None values are left out, as
    `makeCustomHeaderToNet` does."""
    return RemotingCommand(
        code=int(code),
        language=language,
        version=version,
        opaque=next_opaque(),
        flag=RPC_ONEWAY if oneway else 0,
        ext_fields=header_fields(ext_fields) if ext_fields is not None else None,
        body=body,
        serialize_type=serialize_type,
    )


def make_response(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    ext_fields: dict[str, object] | None = None,
    body: bytes = b"",
    *,
    language: str = LanguageCode.JAVA.name,
    version: int = VERSION_V4_9_1,
    serialize_type: SerializeType = SerializeType.JSON,
) -> RemotingCommand:
    """The response to `request`: same opaque, response flag set, in the server's serialize type."""
    return RemotingCommand(
        code=int(code),
        language=language,
        version=version,
        opaque=request.opaque,
        flag=RPC_TYPE_RESPONSE,
        remark=remark,
        ext_fields=header_fields(ext_fields) if ext_fields is not None else None,
        body=body,
        serialize_type=serialize_type,
    )


def header_fields(values: dict[str, object]) -> dict[str, str]:
    """Custom-header values as the wire carries them: strings, booleans as `true`/`false`, None left out, in the
    iteration order of the Java HashMap they would have been put into (in the order given)."""
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return java_ordered(out)
