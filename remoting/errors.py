"""The Java client's exceptions. Catch `RemotingError` for all of them; a class's name is the outcome word a
request record carries (DESIGN: outcomes), so names match `org.apache.rocketmq` exactly."""
from __future__ import annotations

from remoting.codes import response_code_name

FAQ_SEND_MSG_FAILED = "http://rocketmq.apache.org/docs/faq/"


class RemotingError(Exception):
    """Base of every error this package raises. `attempts` is filled in by the producer when a send fails."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.attempts: list = []

    @property
    def response_code(self) -> int | None:
        return None

    @property
    def remark(self) -> str:
        return self.message


class RemotingCommandException(RemotingError):
    """A frame or header that cannot be decoded (bad length, truncated, not JSON, ...)."""


class RemotingConnectException(RemotingError):
    def __init__(self, addr: str, cause: BaseException | None = None) -> None:
        super().__init__(f"connect to {addr} failed")
        self.addr = addr
        self.__cause__ = cause


class RemotingSendRequestException(RemotingError):
    def __init__(self, addr: str, cause: BaseException | None = None) -> None:
        super().__init__(f"send request to {addr} failed")
        self.addr = addr
        self.__cause__ = cause


class RemotingTimeoutException(RemotingError):
    """`wait response on the channel <addr> timeout, N(ms)`, or `invokeSync call timeout` before sending."""

    def __init__(self, message: str, addr: str | None = None) -> None:
        super().__init__(message)
        self.addr = addr

    @classmethod
    def waiting(cls, addr: str, timeout_ms: int) -> RemotingTimeoutException:
        return cls(f"wait response on the channel <{addr}> timeout, {timeout_ms}(ms)", addr)


class RemotingTooMuchRequestException(RemotingError):
    """Raised by the producer as `sendDefaultImpl call timeout` when the send budget ran out between attempts."""


class MQClientException(RemotingError):
    """Client-side failure with a response code: -1, a broker code, or a `ClientErrorCode`."""

    def __init__(self, response_code: int, error_message: str, cause: BaseException | None = None) -> None:
        super().__init__(error_message)
        self._response_code = response_code
        self.error_message = error_message
        self.__cause__ = cause

    @property
    def response_code(self) -> int:
        return self._response_code

    @response_code.setter
    def response_code(self, code: int) -> None:
        self._response_code = code

    def __str__(self) -> str:
        return f"CODE: {self._response_code}  DESC: {self.error_message}"


class MQBrokerException(RemotingError):
    """A response code the client does not map to a send status, with the broker's remark."""

    def __init__(self, response_code: int, remark: str | None, broker_addr: str | None = None) -> None:
        super().__init__(remark or "")
        self._response_code = response_code
        self._remark = remark or ""
        self.broker_addr = broker_addr

    @property
    def response_code(self) -> int:
        return self._response_code

    @property
    def remark(self) -> str:
        return self._remark

    def __str__(self) -> str:
        name = response_code_name(self._response_code)
        where = f" BROKER: {self.broker_addr}" if self.broker_addr else ""
        return f"CODE: {self._response_code} ({name})  DESC: {self._remark}{where}"
