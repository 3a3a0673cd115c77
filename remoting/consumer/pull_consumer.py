"""`PullConsumer`: PULL_MESSAGE without a registered consumer, for reading messages back from a master or a slave
(ROCKETMQ-FACTS C.8): SUBSCRIPTION flag with subscription `*` (TAG), no suspend, no offset commit, so the broker
needs no heartbeat and auto-creates the group. Responses map as `MQClientAPIImpl.processPullResponse`: 0 FOUND,
19 NO_NEW_MSG, 20 NO_MATCHED_MSG, 21 OFFSET_ILLEGAL, anything else `MQBrokerException`. Bodies are decoded with
`remoting.stored`; a FOUND body that does not decode raises `RemotingCommandException` naming broker, queue and
offset. A slave answers only when `slaveReadEnable=true` or, in 4.9.1, whenever it has the messages
(its PULL_RETRY_IMMEDIATELY is overwritten by FOUND): check `suggest_which_broker_id`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from remoting.broker_caller import BrokerCaller
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import MQBrokerException, MQClientException, RemotingCommandException
from remoting.headers import (
    PULL_FLAG_SUBSCRIPTION,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from remoting.profiles import ClientProfile
from remoting.stored import MessageExt, decode_stored_messages

PULL_STATUS_BY_CODE = {
    ResponseCode.SUCCESS: "FOUND",
    ResponseCode.PULL_NOT_FOUND: "NO_NEW_MSG",
    ResponseCode.PULL_RETRY_IMMEDIATELY: "NO_MATCHED_MSG",
    ResponseCode.PULL_OFFSET_MOVED: "OFFSET_ILLEGAL",
}
PULL_TIMEOUT_MS = 10_000  # DefaultMQPullConsumer.consumerPullTimeoutMillis
BROKER_SUSPEND_MAX_TIME_MS = 20_000  # brokerSuspendMaxTimeMillis, sent although SUSPEND is not set (as recorded)
DEFAULT_GROUP = "rmq_chaos_readback"
STALL_LIMIT = 16
"""`iter_queue` gives up after this many answers in a row that do not move the offset on."""


@dataclass(slots=True)
class PullResult:
    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    messages: list[MessageExt] = field(default_factory=list)
    response_code: int = 0
    remark: str | None = None
    """The broker's GetMessageStatus name (`FOUND`, `NO_MESSAGE_IN_QUEUE`, `OFFSET_OVERFLOW_ONE`, ...)."""


def pull_result_of(response: RemotingCommand, addr: str,
                   decode: Callable[[bytes], list[MessageExt]] = decode_stored_messages) -> PullResult:
    """`processPullResponse`: the status by response code (anything unmapped raises `MQBrokerException`), the
    response header's offsets and suggested broker id, and for FOUND the messages `decode` reads from the body."""
    status = PULL_STATUS_BY_CODE.get(response.code)
    if status is None:
        raise MQBrokerException(response.code, response.remark, addr)
    rh = PullMessageResponseHeader.from_fields(response.ext_fields)
    messages = decode(response.body) if status == "FOUND" and response.body else []
    return PullResult(status, rh.nextBeginOffset or 0, rh.minOffset or 0, rh.maxOffset or 0,
                      rh.suggestWhichBrokerId or 0, messages, response.code, response.remark)


class PullConsumer(BrokerCaller):
    """Stateless pulls by broker address. `client` may be shared with a producer or admin."""

    def __init__(self, group: str = DEFAULT_GROUP, client: RemotingClient | None = None, *,
                 profile: str | ClientProfile = "java-4.9.1", timeout_ms: float = PULL_TIMEOUT_MS) -> None:
        super().__init__(client, profile, timeout_ms)
        self.group = group

    def pull(self, addr: str, topic: str, queue_id: int, offset: int, max_nums: int = 32, *,
             subscription: str = "*", timeout_ms: float | None = None) -> PullResult:
        """One PULL_MESSAGE from `offset`, at most `max_nums` messages."""
        header = PullMessageRequestHeader(
            consumerGroup=self.group, topic=topic, queueId=queue_id, queueOffset=offset, maxMsgNums=max_nums,
            sysFlag=PULL_FLAG_SUBSCRIPTION, commitOffset=0, suspendTimeoutMillis=BROKER_SUSPEND_MAX_TIME_MS,
            subscription=subscription, subVersion=0, expressionType="TAG")
        response = self.invoke(addr, RequestCode.PULL_MESSAGE, header.to_fields(), timeout_ms=timeout_ms)
        return pull_result_of(response, addr, lambda body: self._decode(body, addr, topic, queue_id, offset))

    @staticmethod
    def _decode(body: bytes | None, addr: str, topic: str, queue_id: int, offset: int) -> list[MessageExt]:
        """The stored messages of a FOUND body; a body that does not decode raises `RemotingCommandException`
        naming the broker, the queue and the offset pulled (the stored-format error as its cause)."""
        if not body:
            return []
        try:
            return decode_stored_messages(body)
        except RemotingCommandException as err:
            raise RemotingCommandException(
                f"PULL_MESSAGE from {addr} {topic}:{queue_id} at offset {offset}: the FOUND body of {len(body)} "
                f"bytes does not decode as stored messages: {err}") from err

    def iter_queue(self, addr: str, topic: str, queue_id: int, start_offset: int | None = None,
                   batch: int = 32) -> Iterator[MessageExt]:
        """Every message of one queue on one broker, from `start_offset` (default: the queue's min offset) to the
        end, page by page. Raises what `pull` raises (`MQBrokerException` for a code it does not map, e.g. 1
        SYSTEM_ERROR; `RemotingCommandException` for a body that does not decode; timeouts, refused connections) after
        yielding the messages of the pages before, and `MQClientException` when the broker keeps answering without
        moving on."""
        offset = self.get_min_offset(addr, topic, queue_id) if start_offset is None else start_offset
        stalls = 0
        while True:
            result = self.pull(addr, topic, queue_id, offset, batch)
            if result.status == "NO_NEW_MSG":
                return
            if result.status == "FOUND":
                yield from result.messages
            elif result.status == "OFFSET_ILLEGAL" and result.next_begin_offset <= offset:
                return  # past the end (OFFSET_OVERFLOW_BADLY) or nothing stored
            if result.next_begin_offset > offset:
                offset = result.next_begin_offset
                stalls = 0
                continue
            stalls += 1
            if stalls >= STALL_LIMIT:
                raise MQClientException.wrapping(
                    f"pull from {addr} {topic}:{queue_id} stays at offset {offset}: {result.status} "
                    f"({result.remark}), min {result.min_offset}, max {result.max_offset}", None)
