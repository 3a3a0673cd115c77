"""The Java client's exceptions. Catch `RemotingError` for all of them; a class's name is the outcome word a
request record carries (DESIGN: outcomes), so names match `org.apache.rocketmq` exactly, and `str(e)` is Java's
`getMessage()` (including the FAQ tails of `FAQUrl.attachDefaultURL` / `suggestTodo`)."""
from __future__ import annotations

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
TIP_STRING_BEGIN = "\nSee "
TIP_STRING_END = " for further details."


def suggest_todo(url: str = FAQ_URL) -> str:
    """`FAQUrl.suggestTodo`."""
    return f"{TIP_STRING_BEGIN}{url}{TIP_STRING_END}"


def attach_default_url(message: str) -> str:
    """`FAQUrl.attachDefaultURL`: append the FAQ link unless the message already has a `suggestTodo` tip."""
    if TIP_STRING_BEGIN in message:
        return message
    return f"{message}\nFor more information, please visit the url, {FAQ_URL}"


class RemotingError(Exception):
    """Base of every error this package raises. The producer fills in `attempts` (list of `Attempt`) and `msg_id`
    (the message's UNIQ_KEY) when a send fails; a connection sets `failed_at`."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.attempts: list = []
        self.msg_id: str | None = None
        self.failed_at: float | None = None
        """When the JVM's client would have seen this failure (time.monotonic): a timeout at its deadline, a failed
        send at the close that failed it, though this thread may run later (see `remoting.connection`)."""

    def __str__(self) -> str:
        return self.message

    @property
    def response_code(self) -> int | None:
        return None

    @property
    def remark(self) -> str:
        return self.message


class RemotingCommandException(RemotingError):
    """A frame, header or body that cannot be decoded (bad length, truncated, not JSON, missing field, ...)."""


class RemotingConnectException(RemotingError):
    """`connect to <addr> failed` (no channel, or the channel was not active)."""

    def __init__(self, addr: str, cause: BaseException | None = None) -> None:
        super().__init__(f"connect to {addr} failed")
        self.addr = addr
        self.__cause__ = cause


class RemotingSendRequestException(RemotingError):
    """`send request to <addr> failed`: the write failed, or the channel was closed while the request waited."""

    def __init__(self, addr: str, cause: BaseException | None = None) -> None:
        super().__init__(f"send request to <{addr}> failed")
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
    """`sendDefaultImpl call timeout`: the send's budget ran out before an attempt could start (also
    `sendKernelImpl call timeout` / `sendMessage call timeout` inside an attempt)."""


class MQClientException(RemotingError):
    """Client-side failure with a response code: -1, a broker code, or a `ClientErrorCode`. Built like Java's
    `MQClientException(int code, String msg)`; `MQClientException.wrapping(msg, cause)` is the `(String, Throwable)`
    constructor (code -1 until `response_code` is set, as `sendDefaultImpl` does)."""

    def __init__(self, response_code: int, error_message: str, cause: BaseException | None = None) -> None:
        super().__init__(attach_default_url(f"CODE: {int(response_code)}  DESC: {error_message}"))
        self._response_code = int(response_code)
        self.error_message = error_message
        self.__cause__ = cause

    @classmethod
    def wrapping(cls, error_message: str, cause: BaseException | None) -> MQClientException:
        exc = cls(-1, error_message, cause)
        exc.message = attach_default_url(error_message)
        exc.args = (exc.message,)
        return exc

    @property
    def response_code(self) -> int:
        return self._response_code

    @response_code.setter
    def response_code(self, code: int) -> None:
        self._response_code = int(code)

    @property
    def remark(self) -> str:
        return self.error_message


class MQBrokerException(RemotingError):
    """A response code the client does not map to a result, with the broker's remark and address."""

    def __init__(self, response_code: int, remark: str | None, broker_addr: str | None = None) -> None:
        where = f" BROKER: {broker_addr}" if broker_addr is not None else ""
        desc = "null" if remark is None else remark
        super().__init__(attach_default_url(f"CODE: {int(response_code)}  DESC: {desc}{where}"))
        self._response_code = int(response_code)
        self._remark = remark
        self.broker_addr = broker_addr

    @property
    def response_code(self) -> int:
        return self._response_code

    @property
    def remark(self) -> str:
        return self._remark or ""
