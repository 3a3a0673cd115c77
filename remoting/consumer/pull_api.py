"""`PullAPIWrapper` of the push consumer: where the next pull of a queue goes (the broker id the last answer
suggested, `updatePullFromWhichNode`, resolved with `findBrokerAddressInSubscribe`: another id when that one left
the route), the PULL_MESSAGE itself (`pullKernelImpl`: sysFlag COMMIT_OFFSET|SUSPEND, no SUBSCRIPTION flag since
4.9.1's `postSubscriptionWhenPull` is false, so the broker uses the heartbeat's subscription; no COMMIT_OFFSET to a
slave; suspend 15 s, call timeout 30 s) and `processPullResult` (the suggested broker id kept, the client-side tag
filter, MIN_OFFSET / MAX_OFFSET on every message)."""
from __future__ import annotations

from remoting.codes import RequestCode
from remoting.consumer.client_instance import ClientInstance
from remoting.consumer.pull_consumer import PullResult, pull_result_of
from remoting.headers import MASTER_ID, PULL_FLAG_COMMIT_OFFSET, PULL_FLAG_SUSPEND, PullMessageRequestHeader
from remoting.message import PROPERTY_MAX_OFFSET, PROPERTY_MIN_OFFSET
from remoting.route import MessageQueue
from remoting.stored import MessageExt

BROKER_SUSPEND_MAX_TIME_MS = 15_000  # BROKER_SUSPEND_MAX_TIME_MILLIS
CONSUMER_TIMEOUT_WHEN_SUSPEND_MS = 30_000  # CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND


class PullAPIWrapper:
    def __init__(self, instance: ClientInstance, group: str, pull_batch_size: int) -> None:
        self.instance = instance
        self.group = group
        self.pull_batch_size = pull_batch_size
        self._pull_from: dict[MessageQueue, int] = {}

    def find_broker(self, mq: MessageQueue) -> tuple[str, int] | None:
        """The address and broker id of the next pull of `mq` (after one route update when none is known)."""
        found = self.instance.find_broker_addr_in_subscribe(mq.broker_name, self._pull_from.get(mq, MASTER_ID))
        if found is None:
            self.instance.update_route(mq.topic)
            found = self.instance.find_broker_addr_in_subscribe(mq.broker_name, self._pull_from.get(mq, MASTER_ID))
        return found

    def pull_kernel(self, addr: str, broker_id: int, mq: MessageQueue, sub: dict, offset: int,
                    commit_offset: int) -> PullResult:
        """One long-polling PULL_MESSAGE; raises `RemotingError`s (`MQBrokerException` for an unmapped code)."""
        sys_flag = PULL_FLAG_SUSPEND
        if commit_offset > 0 and broker_id == MASTER_ID:  # a slave pull clears the commit flag
            sys_flag |= PULL_FLAG_COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumerGroup=self.group, topic=mq.topic, queueId=mq.queue_id, queueOffset=offset,
            maxMsgNums=self.pull_batch_size, sysFlag=sys_flag, commitOffset=commit_offset,
            suspendTimeoutMillis=BROKER_SUSPEND_MAX_TIME_MS, subscription=None, subVersion=sub["subVersion"],
            expressionType=sub["expressionType"])
        response = self.instance.invoke(addr, RequestCode.PULL_MESSAGE, header.to_fields(),
                                        timeout_ms=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS)
        return pull_result_of(response, addr)

    def process_pull_result(self, mq: MessageQueue, result: PullResult, sub: dict) -> list[MessageExt]:
        """`processPullResult`: the next pull goes to the broker id suggested; the messages a FOUND answer carries
        that the subscription's tags select, each with the queue's MIN_OFFSET / MAX_OFFSET."""
        self._pull_from[mq] = result.suggest_which_broker_id
        msgs = result.messages
        tags = sub["tagsSet"]
        if tags and not sub["classFilterMode"]:
            msgs = [m for m in msgs if m.tags in tags]
        for m in msgs:
            m.properties[PROPERTY_MIN_OFFSET] = str(result.min_offset)
            m.properties[PROPERTY_MAX_OFFSET] = str(result.max_offset)
        return msgs
