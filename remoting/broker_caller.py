"""`BrokerCaller`: what every client that calls brokers by address shares (`BrokerAdmin`, `PullConsumer`, the push
consumer's client instance): a client profile, a `RemotingClient` handed in or its own (`close()` shuts only its
own), requests as the profile sends them, a default timeout, and the two answers every caller reads the same way:
SUCCESS or `MQBrokerException(code, remark, addr)`, and the offset of GET_MAX_OFFSET / GET_MIN_OFFSET."""
from __future__ import annotations

from typing import Self

from remoting.acl import AclCredentials
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import MQBrokerException
from remoting.headers import CommandHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader
from remoting.profiles import ClientProfile, resolve_profile


class BrokerCaller:
    """`client`: share a connection pool (None: a client of its own, for `namesrv_addr` when given, signing with
    `acl` when given)."""

    def __init__(self, client: RemotingClient | None, profile: str | ClientProfile, timeout_ms: float, *,
                 namesrv_addr: str | list[str] | None = None, acl: AclCredentials | None = None) -> None:
        self.profile = resolve_profile(profile)
        self.client = client or RemotingClient(namesrv_addr, rules=self.profile.rules(), rpc_hook=acl)
        self._owns_client = client is None
        self.timeout_ms = timeout_ms

    def close(self) -> None:
        if self._owns_client:
            self.client.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def invoke(self, addr: str, code: int, fields: dict[str, str] | None = None, body: bytes = b"",
               timeout_ms: float | None = None) -> RemotingCommand:
        """One request to `addr`, answered within `timeout_ms` (default: this caller's)."""
        request = self.profile.request(code, fields, body)
        return self.client.invoke_sync(addr, request, self.timeout_ms if timeout_ms is None else timeout_ms)

    @staticmethod
    def ok(response: RemotingCommand, addr: str) -> RemotingCommand:
        """The response when it is SUCCESS, else `MQBrokerException(code, remark, addr)`."""
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        return response

    def query_offset(self, addr: str, code: int, header: CommandHeader, timeout_ms: float | None = None) -> int:
        """GET_MAX_OFFSET / GET_MIN_OFFSET (`header` names the topic and queue): the answer's offset."""
        response = self.ok(self.invoke(addr, code, header.to_fields(), timeout_ms=timeout_ms), addr)
        return int(OffsetResponseHeader.from_fields(response.ext_fields).offset or 0)

    def get_max_offset(self, addr: str, topic: str, queue_id: int, timeout_ms: float | None = None) -> int:
        """GET_MAX_OFFSET: the consume queue's max offset (one past the last message)."""
        return self.query_offset(addr, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, queue_id),
                                 timeout_ms)

    def get_min_offset(self, addr: str, topic: str, queue_id: int, timeout_ms: float | None = None) -> int:
        """GET_MIN_OFFSET."""
        return self.query_offset(addr, RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic, queue_id),
                                 timeout_ms)
