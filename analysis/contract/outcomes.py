"""The outcome words every record and report uses, and their Jepsen class (architecture §5)."""
from __future__ import annotations

SEND_OK = "SEND_OK"
FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
MQ_BROKER_EXCEPTION = "MQBrokerException"
REMOTING_TOO_MUCH_REQUEST = "RemotingTooMuchRequestException"
REMOTING_TIMEOUT = "RemotingTimeoutException"
REMOTING_CONNECT = "RemotingConnectException"
REMOTING_SEND_REQUEST = "RemotingSendRequestException"
MQ_CLIENT_EXCEPTION = "MQClientException"

OK, FAIL, INFO = "ok", "fail", "info"
JEPSEN_CLASSES = (OK, FAIL, INFO)

OUTCOME_CLASS: dict[str, str] = {
    SEND_OK: OK,
    FLUSH_DISK_TIMEOUT: OK,
    FLUSH_SLAVE_TIMEOUT: OK,
    SLAVE_NOT_AVAILABLE: OK,
    MQ_BROKER_EXCEPTION: FAIL,
    REMOTING_TOO_MUCH_REQUEST: INFO,
    REMOTING_TIMEOUT: INFO,
    REMOTING_CONNECT: INFO,
    REMOTING_SEND_REQUEST: INFO,
    MQ_CLIENT_EXCEPTION: INFO,
}
"""ok: the master stored it; fail: a definite broker rejection; info: indeterminate (may be stored)."""

OUTCOMES: tuple[str, ...] = tuple(OUTCOME_CLASS)
SEND_STATUSES: tuple[str, ...] = (SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE)


def outcome_class(outcome: str) -> str:
    """Jepsen class of an outcome word; a word we do not know is indeterminate (`info`)."""
    return OUTCOME_CLASS.get(outcome, INFO)
