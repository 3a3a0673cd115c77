"""What `PushConsumer.stats()` reports: per assigned queue a `QueueStats` (cached count / size / span, committed
and next offset, the broker id of the last pull, pulls, failed pulls, flow-control counts), and consumer-wide
counters kept by `ConsumerCounters` behind one lock (flow control times as Java's two fields, consume results,
send-backs, local re-consumes, rebalances)."""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

from remoting.route import MessageQueue


@dataclass(slots=True)
class QueueStats:
    """One assigned message queue (`stats()`)."""

    cached_count: int
    cached_size: int
    span: int
    committed_offset: int
    next_offset: int
    broker_id: int
    pulls: int
    pull_errors: int
    flow_control_count: int
    flow_control_size: int
    flow_control_span: int


@dataclass(slots=True)
class ConsumerStats:
    client_id: str
    queues: dict[MessageQueue, QueueStats] = field(default_factory=dict)
    queue_flow_control_times: int = 0
    queue_max_span_flow_control_times: int = 0
    consumed_ok: int = 0
    consumed_later: int = 0
    sent_back: int = 0
    sent_back_by_producer: int = 0
    consume_again_local: int = 0
    rebalances: int = 0


class ConsumerCounters:
    """The consumer-wide counters of a `ConsumerStats`, thread-safe."""

    def __init__(self, client_id: str) -> None:
        self._stats = ConsumerStats(client_id)
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> int:
        """Add `n` to the counter `name` (a `ConsumerStats` field); returns its value before."""
        with self._lock:
            before = getattr(self._stats, name)
            setattr(self._stats, name, before + n)
            return before

    def snapshot(self, queues: dict[MessageQueue, QueueStats]) -> ConsumerStats:
        """The counters now, with `queues`."""
        with self._lock:
            return dataclasses.replace(self._stats, queues=queues)
