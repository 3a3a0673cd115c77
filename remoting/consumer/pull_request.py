"""`PullRequest`: one assigned message queue with its process queue, the next offset to pull, the broker id its
last pull went to and its counters; `ProcessQueueTable` (`RebalanceImpl.processQueueTable`): the assigned queues'
pull requests, written by the rebalance, read by the pulls, the offset persisting and `stats()`; thread-safe."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from remoting.consumer.process_queue import ProcessQueue
from remoting.consumer.stats import QueueStats
from remoting.headers import MASTER_ID
from remoting.route import MessageQueue


def mq_str(mq: MessageQueue) -> str:
    """`MessageQueue.toString()`."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


@dataclass(slots=True, eq=False)
class PullRequest:
    """One assigned queue: its process queue, the next offset to pull and its counters."""

    group: str
    mq: MessageQueue
    next_offset: int
    pq: ProcessQueue = field(default_factory=ProcessQueue)
    broker_id: int = MASTER_ID
    pulls: int = 0
    pull_errors: int = 0
    fc_count: int = 0
    fc_size: int = 0
    fc_span: int = 0
    thread: threading.Thread | None = None

    def __str__(self) -> str:
        return f"PullRequest [consumerGroup={self.group}, messageQueue={mq_str(self.mq)}, nextOffset={self.next_offset}]"

    def stats(self, committed_offset: int) -> QueueStats:
        pq = self.pq
        return QueueStats(pq.count, pq.size, pq.max_span, committed_offset, self.next_offset, self.broker_id,
                          self.pulls, self.pull_errors, self.fc_count, self.fc_size, self.fc_span)


class ProcessQueueTable:
    """The assigned queues, each with its pull request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[MessageQueue, PullRequest] = {}

    def add(self, req: PullRequest) -> None:
        with self._lock:
            self._requests[req.mq] = req

    def remove(self, req: PullRequest) -> None:
        """Forget the queue of `req` while `req` is still its request (a newer one stays)."""
        with self._lock:
            if self._requests.get(req.mq) is req:
                del self._requests[req.mq]

    def of_topic(self, topic: str) -> dict[MessageQueue, PullRequest]:
        with self._lock:
            return {mq: req for mq, req in self._requests.items() if mq.topic == topic}

    def queues(self) -> set[MessageQueue]:
        with self._lock:
            return set(self._requests)

    def requests(self) -> list[PullRequest]:
        with self._lock:
            return list(self._requests.values())

    def drop_all(self) -> None:
        """Mark every process queue dropped (shutdown): pulls and consumes of them stop."""
        with self._lock:
            for req in self._requests.values():
                req.pq.dropped = True
