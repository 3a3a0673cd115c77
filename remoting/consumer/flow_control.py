"""The flow control `DefaultMQPushConsumerImpl.pullMessage` does before each pull of a queue: more than
`pullThresholdForQueue` (1000) messages cached, more than `pullThresholdSizeForQueue` (100 MiB), or a span
(last - first cached offset) over `consumeConcurrentlyMaxSpan` (2000) holds the pull back. Counted per queue
(`fc_count` / `fc_size` / `fc_span`) and per consumer in Java's two fields (count and size together, span apart);
logged at WARNING on the `rmq_chaos.consumer` logger the 1st, 1001st, ... time of each field, in the Java
client's words."""
from __future__ import annotations

import logging

from remoting.consumer.pull_request import PullRequest
from remoting.consumer.stats import ConsumerCounters

log = logging.getLogger("rmq_chaos.consumer")


class FlowControl:
    def __init__(self, counters: ConsumerCounters, pull_threshold_for_queue: int, pull_threshold_size_for_queue: int,
                 consume_concurrently_max_span: int) -> None:
        self.counters = counters
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span

    def holds(self, req: PullRequest) -> bool:
        """True when the pull of `req` must wait (counted and, every 1000th time, logged)."""
        pq = req.pq
        count = pq.count
        size_mib = pq.size // (1024 * 1024)
        kind = None
        if count > self.pull_threshold_for_queue:
            kind = "count"
            req.fc_count += 1
        elif size_mib > self.pull_threshold_size_for_queue:
            kind = "size"
            req.fc_size += 1
        elif pq.max_span > self.consume_concurrently_max_span:
            kind = "span"
            req.fc_span += 1
        if kind is None:
            return False
        field = "queue_max_span_flow_control_times" if kind == "span" else "queue_flow_control_times"
        times = self.counters.add(field)
        if times % 1000 == 0:
            first, last = pq.first_last()
            if kind == "count":
                log.warning("the cached message count exceeds the threshold %s, so do flow control, minOffset=%s, "
                            "maxOffset=%s, count=%s, size=%s MiB, pullRequest=%s, flowControlTimes=%s",
                            self.pull_threshold_for_queue, first, last, count, size_mib, req, times + 1)
            elif kind == "size":
                log.warning("the cached message size exceeds the threshold %s MiB, so do flow control, minOffset=%s, "
                            "maxOffset=%s, count=%s, size=%s MiB, pullRequest=%s, flowControlTimes=%s",
                            self.pull_threshold_size_for_queue, first, last, count, size_mib, req, times + 1)
            else:
                log.warning("the queue's messages, span too long, so do flow control, minOffset=%s, maxOffset=%s, "
                            "maxSpan=%s, pullRequest=%s, flowControlTimes=%s", first, last, pq.max_span, req,
                            times + 1)
        return True
