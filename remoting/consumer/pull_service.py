"""The pulls of a push consumer (`PullMessageService` and `DefaultMQPushConsumerImpl.pullMessage` with its
callback): one thread per assigned queue doing a blocking long poll (Java has one PullMessageService thread and
async callbacks; the wire traffic is the same). Each round: flow control first (`remoting.consumer.flow_control`:
wait 50 ms), then PULL_MESSAGE (`remoting.consumer.pull_api`) with the offset committed so far. FOUND caches the
messages and hands them to the consume service; NO_NEW_MSG / NO_MATCHED_MSG move on (and commit the next offset
when nothing is cached); OFFSET_ILLEGAL drops the queue and 10 s later stores the corrected offset and forgets
the queue, for the next rebalance to add it again; an exception retries after 3 s."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from remoting.consumer.consume_service import ConsumeContext, ConsumeMessageConcurrentlyService
from remoting.consumer.flow_control import FlowControl
from remoting.consumer.offset_store import RemoteBrokerOffsetStore
from remoting.consumer.pull_api import PullAPIWrapper
from remoting.consumer.pull_request import ProcessQueueTable, PullRequest
from remoting.consumer.subscription import is_retry_topic
from remoting.errors import MQClientException, RemotingError

log = logging.getLogger("rmq_chaos.consumer")

PULL_DELAY_WHEN_EXCEPTION_S = 3.0  # pullTimeDelayMillsWhenException
PULL_DELAY_WHEN_FLOW_CONTROL_S = 0.05  # PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL
OFFSET_ILLEGAL_FIX_DELAY_S = 10.0  # the OFFSET_ILLEGAL branch's executeTaskLater(..., 10000)


@dataclass(eq=False)
class PullMessageService:
    """`subscriptions`: the consumer's table topic -> SubscriptionData; `stop` ends every pull thread."""

    api: PullAPIWrapper
    flow_control: FlowControl
    offsets: RemoteBrokerOffsetStore
    table: ProcessQueueTable
    consume: ConsumeMessageConcurrentlyService
    subscriptions: dict[str, dict]
    stop: threading.Event

    def dispatch(self, req: PullRequest) -> None:
        """`executePullRequestImmediately`: start the queue's pull thread."""
        mq = req.mq
        req.thread = threading.Thread(target=self._pull_loop, args=(req,), daemon=True,
                                      name=f"PullMessageService-{mq.topic}-{mq.broker_name}-{mq.queue_id}")
        req.thread.start()

    def _pull_loop(self, req: PullRequest) -> None:
        while not self.stop.is_set() and not req.pq.dropped:
            try:
                delay = self.pull_once(req)
            except Exception:  # noqa: BLE001 - never let a pull thread die silently
                log.exception("pull of %s failed", req)
                delay = PULL_DELAY_WHEN_EXCEPTION_S
            if delay and self.stop.wait(delay):
                return

    def pull_once(self, req: PullRequest) -> float:
        """One round of `pullMessage` and its callback; returns the delay before the next round (seconds)."""
        pq, mq = req.pq, req.mq
        pq.last_pull_timestamp = time.time()
        if self.flow_control.holds(req):
            return PULL_DELAY_WHEN_FLOW_CONTROL_S
        sub = self.subscriptions.get(mq.topic)
        if sub is None:
            log.warning("find the consumer's subscription failed, %s", req)
            return PULL_DELAY_WHEN_EXCEPTION_S
        commit_offset = self.offsets.read(mq, from_store=False)
        found = self.api.find_broker(mq)
        if found is None:
            log.warning("execute the pull request exception: The broker[%s] not exist", mq.broker_name)
            req.pull_errors += 1
            return PULL_DELAY_WHEN_EXCEPTION_S
        addr, broker_id = found
        req.broker_id = broker_id
        try:
            result = self.api.pull_kernel(addr, broker_id, mq, sub, req.next_offset, commit_offset)
        except (RemotingError, MQClientException) as e:
            req.pull_errors += 1
            if self.stop.is_set():
                return 0.0
            if not is_retry_topic(mq.topic):
                log.warning("execute the pull request exception, %s: %s", req, e)
            return PULL_DELAY_WHEN_EXCEPTION_S
        pulled_ns = time.time_ns()
        req.pulls += 1
        msgs = self.api.process_pull_result(mq, result, sub)
        if self.stop.is_set() or pq.dropped:
            return 0.0
        if result.status == "FOUND":
            req.next_offset = result.next_begin_offset
            if msgs:
                pq.put(msgs)
                self.consume.submit(msgs, pq, ConsumeContext(mq, broker_id, pulled_ns))
            return 0.0
        if result.status in ("NO_NEW_MSG", "NO_MATCHED_MSG"):
            req.next_offset = result.next_begin_offset
            if pq.count == 0:  # correctTagsOffset
                self.offsets.update(mq, req.next_offset, True)
            return 0.0
        # OFFSET_ILLEGAL
        log.warning("the pull request offset illegal, %s %s", req, result.remark)
        req.next_offset = result.next_begin_offset
        pq.dropped = True
        if not self.stop.wait(OFFSET_ILLEGAL_FIX_DELAY_S):
            self.offsets.update(mq, req.next_offset, False)
            self.offsets.persist(mq)
            self.table.remove(req)  # the next rebalance adds it again from the stored offset
            log.warning("fix the pull request offset, %s", req)
        return 0.0
