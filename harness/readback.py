"""The read-back step: after the phases, every queue of the topic is pulled from the master and from the slave
(the slave needs `slaveReadEnable=true`, which the local backend sets in its conf) and each stored message becomes a
read-back row (architecture §5) in `readback/part-<node>-*.parquet`. The analysis counts from these rows what was
acknowledged but lost, and what the master has that the slave does not.

Each (node, queue) is read on its own: an error on one queue (the broker answering PULL_MESSAGE with SYSTEM_ERROR, a
timeout, a refused connection, a stored message that does not decode) ends that queue only, and the read goes on
with the next one. How far each queue was read and why it stopped is written to `readback/queues.json`
(`analysis.contract.READBACK_QUEUE_FIELDS`) as soon as the queue is done, so it is there after a timeout too: a queue
a broker cannot serve is evidence for the analysis, not a failed read-back.

The harness key of a send is the first of the message's KEYS (`<run_id>:<worker>:<seq>`, see `loads/`)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.contract import (
    QUEUE_COMPLETE,
    QUEUE_PARTIAL,
    QUEUE_UNREADABLE,
    READBACK_QUEUES_FILE,
    READBACK_SCHEMA,
    PartWriter,
    read_readback_queues,
    write_readback_queues,
)
from remoting.errors import RemotingError
from remoting.outcome import outcome_of

BATCH_ROWS = 20_000
QUEUE_ERRORS: tuple[type[BaseException], ...] = (RemotingError, OSError)
"""What ends one queue's read (remoting's errors: MQBrokerException, MQClientException, timeouts, refused
connections, undecodable bodies as RemotingCommandException; and socket errors). Anything else is a bug and raises."""


@dataclass
class ReadbackSource:
    """One broker to read: node name (`master`/`slave`), broker name, address."""

    node: str
    broker: str
    addr: str


QueueReader = Callable[[str, str, int], Iterable[Any]]
"""`read(addr, topic, queue_id)` -> the queue's messages (`remoting.stored.MessageExt`), oldest first."""
OffsetReader = Callable[[str, str, int, str], int]
"""`offset(addr, topic, queue_id, "min" | "max")` -> GET_MIN_OFFSET / GET_MAX_OFFSET; raises a remoting error."""


class ReadbackTimeout(TimeoutError):
    pass


@dataclass
class QueueCoverage:
    """How far one (node, queue) was read: an entry of `readback/queues.json`."""

    node: str
    broker: str | None
    queue_id: int
    min_offset: int | None = None
    max_offset: int | None = None
    offsets_error: str | None = None
    read_to: int = 0
    rows: int = 0
    status: str = QUEUE_COMPLETE
    error: str | None = None
    response_code: int | None = None
    remark: str | None = None

    def failed(self, err: BaseException) -> None:
        self.status = QUEUE_PARTIAL if self.rows else QUEUE_UNREADABLE
        if isinstance(err, ReadbackTimeout):
            self.error, self.response_code, self.remark = type(err).__name__, None, str(err)
        else:
            self.error, self.response_code, self.remark = outcome_of(err)


def read_back(run_id: str, topic: str, queues: int, sources: list[ReadbackSource], read: QueueReader,
              readback_dir: str | Path, timeout_s: float,
              progress: Callable[[str, int, int], None] | None = None,
              offsets: OffsetReader | None = None) -> dict[str, int]:
    """Pull every queue from every source; returns rows written per node. A queue that fails is recorded and
    skipped (module docstring). `offsets` defaults to `harness.brokerclient.queue_offset`. Raises
    `ReadbackTimeout` (after writing what it has, coverage included) when `timeout_s` passes."""
    if offsets is None:
        from harness import brokerclient

        offsets = brokerclient.queue_offset
    deadline = time.monotonic() + timeout_s
    coverage_path = Path(readback_dir) / READBACK_QUEUES_FILE
    done: list[QueueCoverage] = []
    counts: dict[str, int] = {}
    several = len({src.broker for src in sources}) > 1
    for src in sources:
        label = f"{src.broker}/{src.node}" if several else src.node  # several broker groups: per group and node
        counts[label] = 0
        with PartWriter(readback_dir, label.replace("/", "."), READBACK_SCHEMA, batch_rows=BATCH_ROWS) as writer:
            for queue_id in range(queues):
                if done and time.monotonic() > deadline:
                    raise ReadbackTimeout(f"read-back passed {timeout_s:g}s before {label} queue {queue_id} "
                                          f"({sum(counts.values())} rows written)")
                q = QueueCoverage(src.node, src.broker, queue_id)
                done.append(q)
                try:
                    _read_queue(q, run_id, topic, src, read, offsets, writer, deadline, timeout_s, counts, label)
                finally:
                    write_readback_queues(coverage_path, run_id, topic, [asdict(x) for x in done])
                if progress:
                    progress(label, queue_id, counts[label])
        if time.monotonic() > deadline:
            raise ReadbackTimeout(f"read-back passed {timeout_s:g}s after {label}")
    return counts


def _read_queue(q: QueueCoverage, run_id: str, topic: str, src: ReadbackSource, read: QueueReader,
                offsets: OffsetReader, writer: PartWriter, deadline: float, timeout_s: float,
                counts: dict[str, int], label: str) -> None:
    """Read one queue into `writer`, filling `q`; a QUEUE_ERRORS error ends it (recorded in `q`), a timeout is
    recorded and raised."""
    problems = []
    for which in ("min", "max"):
        try:
            setattr(q, f"{which}_offset", offsets(src.addr, topic, q.queue_id, which))
        except QUEUE_ERRORS as err:
            word, code, remark = outcome_of(err)
            problems.append(f"GET_{which.upper()}_OFFSET {word}" + (f" code {code}" if code is not None else "")
                            + f": {remark}")
    q.offsets_error = "; ".join(problems) or None
    q.read_to = q.min_offset or 0
    try:
        for m in read(src.addr, topic, q.queue_id):
            writer.add(_row(run_id, topic, q.queue_id, src, m))
            q.rows += 1
            q.read_to = max(q.read_to, m.queue_offset + 1)
            counts[label] += 1
            if counts[label] % 1000 == 0 and time.monotonic() > deadline:
                raise ReadbackTimeout(f"read-back of {label} queue {q.queue_id} passed {timeout_s:g}s "
                                      f"({counts[label]} rows written)")
    except ReadbackTimeout as err:
        q.failed(err)
        raise
    except QUEUE_ERRORS as err:
        q.failed(err)


def _row(run_id: str, topic: str, queue_id: int, src: ReadbackSource, m: Any) -> dict[str, Any]:
    keys = getattr(m, "keys", None)
    key = (keys.split()[0] if isinstance(keys, str) else keys[0] if keys else None) if keys else None
    body = getattr(m, "body", b"") or b""
    return {
        "run_id": run_id, "node": src.node, "broker": src.broker, "topic": topic,
        "queue_id": queue_id, "queue_offset": m.queue_offset, "commitlog_offset": m.commitlog_offset,
        "key": key, "msg_id": getattr(m, "uniq_key", None), "store_ts_ms": getattr(m, "store_timestamp", None),
        "body_size": len(body),
    }


def incomplete_queues(readback_dir: str | Path) -> list[dict[str, Any]]:
    """The coverage entries of `readback/queues.json` that were not read completely ([] without the file)."""
    try:
        entries = read_readback_queues(Path(readback_dir) / READBACK_QUEUES_FILE) or []
    except ValueError:
        return []
    return [e for e in entries if e["status"] != QUEUE_COMPLETE]


def describe(entry: Mapping[str, Any]) -> str:
    """One line for the terminal: `slave queue 2 partial: read to offset 120 of 300 (88 rows); MQBrokerException
    code 1: java.lang.IndexOutOfBoundsException`."""
    top = "unknown" if entry.get("max_offset") is None else entry["max_offset"]
    code = entry.get("response_code")
    why = f"{entry.get('error')}" + (f" code {code}" if code is not None else "") + f": {entry.get('remark')}"
    return (f"{entry['node']} queue {entry['queue_id']} {entry['status']}: read to offset {entry['read_to']} of "
            f"{top} ({entry['rows']} rows); {why}")
