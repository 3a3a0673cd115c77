"""`outcome_of(result_or_exception) -> (word, response_code, remark)`: the outcome words every record and report
uses (DESIGN: outcomes). The word is the send status of a `SendResult` or the Java exception's class name; the
remark is the broker's remark, or the exception's message without the FAQ tail, followed by its cause for an
`MQClientException` (e.g. `Send [3] times, still failed, ... (cause: RemotingTimeoutException: wait response on
the channel <127.0.0.1:10911> timeout, 2998(ms))`)."""
from __future__ import annotations

from remoting.errors import (
    TIP_STRING_BEGIN,
    MQBrokerException,
    MQClientException,
    RemotingError,
)

SEND_STATUSES = ("SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE")


def _without_tip(text: str) -> str:
    cut = text.find(TIP_STRING_BEGIN)
    if cut < 0:
        cut = text.find("\nFor more information, please visit the url, ")
    return text if cut < 0 else text[:cut]


def short_message(error: BaseException) -> str:
    """One line naming what went wrong, without FAQ links."""
    if isinstance(error, MQBrokerException):
        return f"CODE: {error.response_code}  DESC: {error.remark}"
    if isinstance(error, MQClientException):
        return _without_tip(error.error_message)
    if isinstance(error, RemotingError):
        return _without_tip(error.message)
    return str(error)


def outcome_of(x) -> tuple[str, int | None, str | None]:
    """(outcome word, response code or None, remark or None) of a `SendResult` or an exception from `send`."""
    status = getattr(x, "status", None)
    if status in SEND_STATUSES:
        return status, x.response_code, x.remark
    if isinstance(x, MQBrokerException):
        return "MQBrokerException", x.response_code, x.remark
    if isinstance(x, MQClientException):
        remark = short_message(x)
        cause = x.__cause__
        if cause is not None:
            remark += f" (cause: {type(cause).__name__}: {short_message(cause)})"
        return "MQClientException", x.response_code, remark
    if isinstance(x, BaseException):
        return type(x).__name__, None, short_message(x)
    raise TypeError(f"outcome_of needs a SendResult or an exception, got {type(x).__name__}")
