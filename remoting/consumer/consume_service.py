"""`ConsumeMessageConcurrentlyService`: a pool of consume threads (20), one message per consume request
(`consumeMessageBatchMaxSize` 1). Before the listener, a message of `%RETRY%<group>` gets its RETRY_TOPIC back as
topic and every message a CONSUME_START_TIME; a listener that raises or returns anything but CONSUME_SUCCESS /
RECONSUME_LATER counts as RECONSUME_LATER. RECONSUME_LATER sends the message back (`remoting.consumer.send_back`);
when that fails it stays cached and is consumed again here after 5 s. After each consume the queue's committed
offset becomes the smallest offset still cached (`ProcessQueue.remove`)."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from remoting.consumer.offset_store import RemoteBrokerOffsetStore
from remoting.consumer.process_queue import ProcessQueue
from remoting.consumer.pull_request import mq_str
from remoting.consumer.send_back import SendBack
from remoting.consumer.stats import ConsumerCounters
from remoting.consumer.subscription import retry_topic
from remoting.message import PROPERTY_RETRY_TOPIC
from remoting.route import MessageQueue
from remoting.stored import MessageExt

log = logging.getLogger("rmq_chaos.consumer")

CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"
CONSUME_AGAIN_DELAY_S = 5.0  # submitConsumeRequestLater
PROPERTY_CONSUME_START_TIME = "CONSUME_START_TIME"
JAVA_INT_MAX = 2**31 - 1


@dataclass(slots=True)
class ConsumeContext:
    """`ConsumeConcurrentlyContext` plus where the messages came from: `broker_id` the pull went to, `pulled_ns`
    (time.time_ns()) when its answer came. A listener may set `delay_level_when_next_consume` (0: the broker
    decides, 3 + reconsume times) and `ack_index`."""

    message_queue: MessageQueue
    broker_id: int
    pulled_ns: int
    delay_level_when_next_consume: int = 0
    ack_index: int = JAVA_INT_MAX


Listener = Callable[[list[MessageExt], ConsumeContext], object]


@dataclass(eq=False)
class ConsumeMessageConcurrentlyService:
    """`listener(msgs, ctx)` is set before `start()`; `stop` ends the consumes waiting to run again."""

    group: str
    consume_threads: int
    offsets: RemoteBrokerOffsetStore
    send_back: SendBack
    counters: ConsumerCounters
    stop: threading.Event
    listener: Listener | None = field(default=None, init=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    def start(self) -> None:
        self._executor = ThreadPoolExecutor(self.consume_threads, thread_name_prefix=f"ConsumeMessageThread_{self.group}")

    def shutdown(self) -> None:
        """No more consumes; those queued are cancelled, those running finish on their own."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        """`submitConsumeRequest`: one consume request per message, each with its own copy of the context."""
        executor = self._executor
        if executor is None or self.stop.is_set():
            return
        try:
            for msg in msgs:  # consumeMessageBatchMaxSize 1
                executor.submit(self._consume, [msg], pq, ConsumeContext(ctx.message_queue, ctx.broker_id,
                                                                         ctx.pulled_ns))
        except RuntimeError:  # shut down meanwhile
            pass

    def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        """`ConsumeRequest.run`."""
        if pq.dropped:
            log.info("the message queue not be able to consume, because it's dropped. group=%s %s", self.group,
                     mq_str(ctx.message_queue))
            return
        own_retry_topic = retry_topic(self.group)
        now_ms = str(int(time.time() * 1000))
        for msg in msgs:  # resetRetryAndNamespace
            original = msg.properties.get(PROPERTY_RETRY_TOPIC)
            if original and msg.topic == own_retry_topic:
                msg.topic = original
            msg.properties[PROPERTY_CONSUME_START_TIME] = now_ms
        status = None
        try:
            status = self.listener(msgs, ctx)
        except Exception as e:  # noqa: BLE001 - the listener's exception means RECONSUME_LATER, as Java
            log.warning("consumeMessage exception: %s Group: %s Msgs: %s MQ: %s", e, self.group, len(msgs),
                        mq_str(ctx.message_queue))
        status = getattr(status, "value", status)
        if status not in (CONSUME_SUCCESS, RECONSUME_LATER):
            if status is not None:
                log.warning("consumeMessage returned %r, Group: %s", status, self.group)
            else:
                log.warning("consumeMessage return null, Group: %s Msgs: %s MQ: %s", self.group, len(msgs),
                            mq_str(ctx.message_queue))
            status = RECONSUME_LATER
        if pq.dropped:
            log.warning("processQueue is dropped without process consume result. messageQueue=%s, msgs=%s",
                        mq_str(ctx.message_queue), len(msgs))
            return
        self._process_consume_result(status, ctx, msgs, pq)

    def _process_consume_result(self, status: str, ctx: ConsumeContext, msgs: list[MessageExt],
                                pq: ProcessQueue) -> None:
        if status == CONSUME_SUCCESS:
            ack = min(ctx.ack_index, len(msgs) - 1)
            self.counters.add("consumed_ok", ack + 1)
        else:
            ack = -1
            self.counters.add("consumed_later", len(msgs))
        failed: list[MessageExt] = []
        for msg in msgs[ack + 1:]:
            if not self.send_back.send(msg, ctx.delay_level_when_next_consume, ctx.message_queue.broker_name):
                msg.reconsume_times += 1
                failed.append(msg)
        done = [m for m in msgs if all(m is not f for f in failed)]
        if failed:
            self.counters.add("consume_again_local", len(failed))
            self._consume_later(failed, pq, ctx)
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self.offsets.update(ctx.message_queue, offset, True)

    def _consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, ctx: ConsumeContext) -> None:
        """`submitConsumeRequestLater`: the same messages again after 5 s, here."""
        def later() -> None:
            if not self.stop.wait(CONSUME_AGAIN_DELAY_S):
                self.submit(msgs, pq, ctx)
        threading.Thread(target=later, daemon=True, name="ConsumeAgainLater").start()
