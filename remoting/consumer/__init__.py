"""Consuming: `PushConsumer` (4.9.1's `DefaultMQPushConsumer`, split as the Java client is: `push_consumer` the
facade, `client_instance`, `rebalance`, `allocation`, `pull_service`, `pull_api`, `flow_control`, `pull_request`,
`process_queue`, `consume_service`, `send_back`, `offset_store`, `subscription`, `stats`, `headers`),
`PullConsumer` (stateless pulls by broker address, for reading queues back), and the group's progress as a broker
reports it (`get_consume_stats`, from `remoting.consume_stats`, which the emulator shares)."""
from __future__ import annotations

from remoting.consume_stats import ConsumeStats, OffsetWrapper, get_consume_stats
from remoting.consumer.allocation import allocate_averagely
from remoting.consumer.consume_service import CONSUME_SUCCESS, RECONSUME_LATER, ConsumeContext
from remoting.consumer.offset_store import RemoteBrokerOffsetStore
from remoting.consumer.process_queue import ProcessQueue
from remoting.consumer.pull_consumer import PullConsumer, PullResult
from remoting.consumer.push_consumer import PushConsumer
from remoting.consumer.stats import ConsumerStats, QueueStats

__all__ = [
    "CONSUME_SUCCESS",
    "RECONSUME_LATER",
    "ConsumeContext",
    "ConsumeStats",
    "ConsumerStats",
    "OffsetWrapper",
    "ProcessQueue",
    "PullConsumer",
    "PullResult",
    "PushConsumer",
    "QueueStats",
    "RemoteBrokerOffsetStore",
    "allocate_averagely",
    "get_consume_stats",
]
