"""The read-back step: after the phases, every queue of the topic is pulled from the master and from the slave
(the slave needs `slaveReadEnable=true`, which the local backend sets in its conf) and each stored message becomes a
read-back row (architecture §5) in `readback/part-<node>-*.parquet`. The analysis counts from these rows what was
acknowledged but lost, and what the master has that the slave does not.

The harness key of a send is the first of the message's KEYS (`<run_id>:<worker>:<seq>`, see `loads/`)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.contract import READBACK_SCHEMA, PartWriter

BATCH_ROWS = 20_000


@dataclass
class ReadbackSource:
    """One broker to read: node name (`master`/`slave`), broker name, address."""

    node: str
    broker: str
    addr: str


QueueReader = Callable[[str, str, int], Iterable[Any]]
"""`read(addr, topic, queue_id)` -> the queue's messages (`remoting.message.MessageExt`), oldest first."""


class ReadbackTimeout(TimeoutError):
    pass


def read_back(run_id: str, topic: str, queues: int, sources: list[ReadbackSource], read: QueueReader,
              readback_dir: str | Path, timeout_s: float,
              progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
    """Pull every queue from every source; returns rows written per node. Raises `ReadbackTimeout` (after writing
    what it has) when `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    counts: dict[str, int] = {}
    for src in sources:
        n = 0
        with PartWriter(readback_dir, src.node, READBACK_SCHEMA, batch_rows=BATCH_ROWS) as writer:
            for queue_id in range(queues):
                for row in _rows(run_id, topic, queue_id, src, read(src.addr, topic, queue_id)):
                    writer.add(row)
                    n += 1
                    if n % 1000 == 0 and time.monotonic() > deadline:
                        counts[src.node] = n
                        raise ReadbackTimeout(f"read-back of {src.node} queue {queue_id} passed {timeout_s:g}s "
                                              f"({n} rows written)")
                if progress:
                    progress(src.node, queue_id, n)
        counts[src.node] = n
        if time.monotonic() > deadline:
            raise ReadbackTimeout(f"read-back passed {timeout_s:g}s after {src.node}")
    return counts


def _rows(run_id: str, topic: str, queue_id: int, src: ReadbackSource, messages: Iterable[Any]) -> Iterator[dict]:
    for m in messages:
        keys = getattr(m, "keys", None)
        key = (keys.split()[0] if isinstance(keys, str) else keys[0] if keys else None) if keys else None
        body = getattr(m, "body", b"") or b""
        yield {
            "run_id": run_id, "node": src.node, "broker": src.broker, "topic": topic,
            "queue_id": queue_id, "queue_offset": m.queue_offset, "commitlog_offset": m.commitlog_offset,
            "key": key, "msg_id": getattr(m, "uniq_key", None), "store_ts_ms": getattr(m, "store_timestamp", None),
            "body_size": len(body),
        }
