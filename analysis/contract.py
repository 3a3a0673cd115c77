"""The run directory contract: layout, Parquet schemas, outcome words and event names, and the part-file writer.

This is the single definition that the load generator (request rows), the harness (metrics, read-back, events)
and the analysis job are built against (docs/architecture.md §4, §5, §8). It imports only pyarrow and the
standard library so writers can use it without Spark.

Writers produce part files through `write_part` (or `PartWriter`): the rows go to a hidden temporary file that is
fsync'ed and then renamed to `part-<worker>-<n>.parquet`, so a crash never leaves a half-written file under a
part name. Readers (Spark included) ignore names starting with `.`.

Example::

    writer = PartWriter(layout.requests, worker="w1", schema=REQUEST_SCHEMA)
    writer.add({"run_id": ..., "worker": "w1", ...})
    writer.close()   # flushes the last batch
"""
from __future__ import annotations

import itertools
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# --- layout (DESIGN.md "The run directory") -------------------------------------------------------------------

SCENARIO_FILE = "scenario.yaml"
CLUSTER_FILE = "cluster.json"
EVENTS_FILE = "events.jsonl"
REQUESTS_DIR = "requests"
METRICS_DIR = "metrics"
READBACK_DIR = "readback"
CONSUMES_DIR = "consumes"
CONSUMER_LAG_DIR = "lag"  # inside METRICS_DIR: metrics/lag/part-*.parquet
READBACK_QUEUES_FILE = "queues.json"  # in READBACK_DIR: how far each (node, queue) was read back
LOGS_DIR = "logs"
REPORT_DIR = "report"
REPORT_INDEX = "index.html"
VERDICT_FILE = "verdict.json"
JUNIT_FILE = "junit.xml"

PART_GLOB = "part-*.parquet"
PART_NAME_RE = re.compile(r"^part-(?P<worker>[A-Za-z0-9_.-]+)-(?P<n>\d+)\.parquet$")
WORKER_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
DEFAULT_BATCH_ROWS = 10_000
MAX_JSON_BYTES = 64 * 1024 * 1024
"""cluster.json and readback/queues.json larger than this are not a run's (they hold one entry per node or queue)."""


@dataclass(frozen=True)
class RunLayout:
    """Paths of one run directory, `runs/<run-id>/`."""

    root: Path

    @classmethod
    def of(cls, root: str | os.PathLike[str]) -> RunLayout:
        return cls(Path(root))

    @property
    def run_id(self) -> str:
        """The directory name; `events.jsonl`'s `run_start` carries the same id."""
        return self.root.name

    @property
    def scenario(self) -> Path:
        return self.root / SCENARIO_FILE

    @property
    def cluster(self) -> Path:
        return self.root / CLUSTER_FILE

    @property
    def events(self) -> Path:
        return self.root / EVENTS_FILE

    @property
    def requests(self) -> Path:
        return self.root / REQUESTS_DIR

    @property
    def metrics(self) -> Path:
        return self.root / METRICS_DIR

    @property
    def readback(self) -> Path:
        return self.root / READBACK_DIR

    @property
    def consumes(self) -> Path:
        return self.root / CONSUMES_DIR

    @property
    def consumer_lag(self) -> Path:
        return self.metrics / CONSUMER_LAG_DIR

    @property
    def readback_queues(self) -> Path:
        return self.readback / READBACK_QUEUES_FILE

    @property
    def logs(self) -> Path:
        return self.root / LOGS_DIR

    def node_logs(self, node: str) -> Path:
        return self.logs / node

    @property
    def report(self) -> Path:
        return self.root / REPORT_DIR

    @property
    def report_index(self) -> Path:
        return self.report / REPORT_INDEX

    @property
    def verdict(self) -> Path:
        return self.report / VERDICT_FILE

    @property
    def junit(self) -> Path:
        return self.report / JUNIT_FILE

    def make_dirs(self) -> None:
        """Create the directories writers fill while a run goes."""
        for d in (self.requests, self.metrics, self.readback, self.logs):
            d.mkdir(parents=True, exist_ok=True)


# --- Parquet schemas (architecture §5) -------------------------------------------------------------------------

REQUEST_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("worker", pa.string(), nullable=False),
        pa.field("client", pa.string()),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("topic", pa.string()),
        pa.field("key", pa.string(), nullable=False),
        pa.field("msg_id", pa.string()),
        pa.field("intended_ns", pa.int64()),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("end_ns", pa.int64(), nullable=False),
        pa.field("latency_ms", pa.float64()),  # end - intended
        pa.field("service_ms", pa.float64()),  # end - start
        pa.field("phase", pa.string()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("response_code", pa.int32()),
        pa.field("remark", pa.string()),
        pa.field("broker", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("attempts", pa.int32()),
    ]
)
"""One row per send. Clock: wall ns of the machine that sent (`time.time_ns()`)."""

METRICS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("node", pa.string(), nullable=False),
        pa.field("ts_ns", pa.int64(), nullable=False),
        pa.field("cpu_percent", pa.float64()),
        pa.field("rss_bytes", pa.int64()),
        pa.field("swap_bytes", pa.int64()),
        pa.field("read_bytes_per_s", pa.float64()),
        pa.field("write_bytes_per_s", pa.float64()),
        pa.field("put_tps", pa.float64()),
        pa.field("commitlog_max_offset", pa.int64()),
        pa.field("slave_fallbehind_bytes", pa.int64()),
        pa.field("send_queue_size", pa.int64()),
        pa.field("page_cache_lock_ms", pa.float64()),
    ]
)
"""Per node per second. Broker figures are null when the broker did not answer that second."""

READBACK_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("node", pa.string(), nullable=False),  # "master" | "slave"
        pa.field("broker", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("commitlog_offset", pa.int64()),
        pa.field("key", pa.string()),
        pa.field("msg_id", pa.string()),
        pa.field("store_ts_ms", pa.int64()),
        pa.field("body_size", pa.int32()),
    ]
)
"""Every message pulled back at the end, from the master and from the slave."""

READBACK_NODES = ("master", "slave")

CONSUME_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("worker", pa.string(), nullable=False),  # the consumer process: "<group>.c<i>" (+ ".r<n>" restarts)
        pa.field("group", pa.string(), nullable=False),  # consumer group
        pa.field("consumer", pa.string()),  # the client id the broker knows it by (ip@instance)
        pa.field("topic", pa.string()),  # the original topic (RETRY_TOPIC property of a redelivery)
        pa.field("key", pa.string()),  # the harness key (first of KEYS); null for a message not the run's
        pa.field("msg_id", pa.string()),  # UNIQ_KEY
        pa.field("broker", pa.string()),  # broker name of the queue it was pulled from
        pa.field("broker_id", pa.int32()),  # the broker id the pull went to: 0 master, 1 slave
        pa.field("pulled_topic", pa.string()),  # the topic pulled: the topic or %RETRY%<group>
        pa.field("queue_id", pa.int32()),
        pa.field("queue_offset", pa.int64()),
        pa.field("born_ms", pa.int64()),  # message bornTimestamp (producer's wall ms)
        pa.field("store_ms", pa.int64()),  # message storeTimestamp (broker's wall ms)
        pa.field("pulled_ns", pa.int64()),  # wall ns the pull response carrying it was received
        pa.field("delivered_ns", pa.int64(), nullable=False),  # wall ns the listener was called with it
        pa.field("done_ns", pa.int64()),  # wall ns the listener returned; null: still in it when the process ended
        pa.field("result", pa.string(), nullable=False),  # CONSUME_SUCCESS | RECONSUME_LATER | exception | ABANDONED
        pa.field("reconsume_times", pa.int32()),
        pa.field("body_size", pa.int32()),
    ]
)
"""One row per delivery of a message to a consumer group's listener (a redelivery is a row of its own)."""

CONSUME_RESULTS = ("CONSUME_SUCCESS", "RECONSUME_LATER", "ABANDONED")
"""`result` words besides an exception's class name (the listener raised: the client treats it as RECONSUME_LATER).
ABANDONED: the listener had not returned when the consumer process stopped (done_ns null)."""

CONSUMER_LAG_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),  # the topic or %RETRY%<group>
        pa.field("ts_ns", pa.int64(), nullable=False),  # wall ns of the GET_CONSUME_STATS answer
        pa.field("broker", pa.string()),
        pa.field("queue_id", pa.int32()),
        pa.field("broker_offset", pa.int64()),  # OffsetWrapper.brokerOffset (the queue's max offset)
        pa.field("consumer_offset", pa.int64()),  # OffsetWrapper.consumerOffset (committed)
        pa.field("lag", pa.int64()),  # broker_offset - consumer_offset (mqadmin consumerProgress "Diff")
        pa.field("last_timestamp_ms", pa.int64()),  # OffsetWrapper.lastTimestamp
        pa.field("consume_tps", pa.float64()),  # ConsumeStats.consumeTps (the group's, same on every queue row)
    ]
)
"""Per group per queue per second, from GET_CONSUME_STATS to the master (metrics/lag/part-*.parquet). No row for a
second whose request failed."""

# --- read-back coverage: `readback/queues.json` (architecture §5) -----------------------------------------------

QUEUE_COMPLETE, QUEUE_PARTIAL, QUEUE_UNREADABLE = "complete", "partial", "unreadable"
QUEUE_STATUSES = (QUEUE_COMPLETE, QUEUE_PARTIAL, QUEUE_UNREADABLE)
READBACK_QUEUES_VERSION = 1
_INT, _OPT_INT, _STR, _OPT_STR = "int", "int or null", "string", "string or null"
READBACK_QUEUE_FIELDS: dict[str, str] = {
    "node": _STR,             # "master" | "slave", as the read-back rows
    "broker": _OPT_STR,       # broker name
    "queue_id": _INT,
    "min_offset": _OPT_INT,   # GET_MIN_OFFSET before the read; null when it failed
    "max_offset": _OPT_INT,   # GET_MAX_OFFSET before the read; null when it failed
    "offsets_error": _OPT_STR,  # why min/max are null: "<outcome word>: <message>"
    "read_to": _INT,          # the next queue offset not read: last message read + 1, else min_offset (else 0)
    "rows": _INT,             # read-back rows written for this queue
    "status": _STR,           # complete | partial (rows read, then an error) | unreadable (an error, no row)
    "error": _OPT_STR,        # outcome word of what ended the read (MQBrokerException, ...); null when complete
    "response_code": _OPT_INT,  # the broker's response code, when the error has one
    "remark": _OPT_STR,       # the broker's remark, else the exception's message
}
"""One entry per (node, queue) the read-back attempted, in the order they were read. A queue is `complete` when the
pull reached the end of the queue (NO_NEW_MSG / OFFSET_ILLEGAL past the end). Analysis: an acknowledged send whose
(broker, queue_id, queue_offset) has `queue_offset >= read_to` on a queue that is not complete was not seen there."""


def check_readback_queue(entry: Any, where: str) -> dict[str, Any]:
    """One coverage entry checked against READBACK_QUEUE_FIELDS; raises ValueError naming the key and the allowed
    values."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: must be an object with keys {', '.join(READBACK_QUEUE_FIELDS)}")
    extra = sorted(set(entry) - set(READBACK_QUEUE_FIELDS))
    if extra:
        raise ValueError(f"{where}.{extra[0]}: unknown key; allowed: {', '.join(READBACK_QUEUE_FIELDS)}")
    out: dict[str, Any] = {}
    for key, kind in READBACK_QUEUE_FIELDS.items():
        v = entry.get(key)
        ok = {_INT: _is_int(v), _OPT_INT: v is None or _is_int(v), _STR: isinstance(v, str) and v != "",
              _OPT_STR: v is None or isinstance(v, str)}[kind]
        if not ok:
            raise ValueError(f"{where}.{key}: must be {'a non-empty ' if kind == _STR else ''}{kind}, got {v!r}")
        out[key] = v
    if out["status"] not in QUEUE_STATUSES:
        raise ValueError(f"{where}.status: {out['status']!r} is not one of: {', '.join(QUEUE_STATUSES)}")
    if out["read_to"] < 0 or out["rows"] < 0:
        raise ValueError(f"{where}: read_to and rows must be >= 0")
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def write_readback_queues(path: str | os.PathLike[str], run_id: str, topic: str | None,
                          queues: Iterable[Mapping[str, Any]]) -> Path:
    """Write `readback/queues.json` atomically (temp file, fsync, rename): `{"version", "run_id", "topic",
    "queues": [entry, ...]}`, every entry checked first."""
    entries = [check_readback_queue(q, f"queues[{i}]") for i, q in enumerate(queues)]
    data = {"version": READBACK_QUEUES_VERSION, "run_id": run_id, "topic": topic, "queues": entries}
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=1) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_readback_queues(path: str | os.PathLike[str]) -> list[dict[str, Any]] | None:
    """The entries of `readback/queues.json`; None when the file does not exist (a run made before it existed:
    every queue counts as read completely). Raises ValueError (one line naming file and key) on bad content."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"{p}: not a regular file of at most {MAX_JSON_BYTES} bytes; allowed: the file the "
                         "read-back wrote")
    try:
        data = json.loads(p.read_bytes().decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as err:
        raise ValueError(f"{p}: not UTF-8 text ({err.reason} at offset {err.start})") from None
    except RecursionError:
        raise ValueError(f"{p}: not JSON (nested too deeply)") from None
    except ValueError as err:
        raise ValueError(f"{p}: not JSON ({' '.join(str(err).split())[:200]})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("queues"), list):
        raise ValueError(f"{p}: queues: must be a list of objects with keys {', '.join(READBACK_QUEUE_FIELDS)}")
    return [check_readback_queue(q, f"{p}: queues[{i}]") for i, q in enumerate(data["queues"])]

# --- outcome words and their Jepsen class (architecture §5) ----------------------------------------------------

SEND_OK = "SEND_OK"
FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
MQ_BROKER_EXCEPTION = "MQBrokerException"
REMOTING_TOO_MUCH_REQUEST = "RemotingTooMuchRequestException"
REMOTING_TIMEOUT = "RemotingTimeoutException"
REMOTING_CONNECT = "RemotingConnectException"
REMOTING_SEND_REQUEST = "RemotingSendRequestException"
MQ_CLIENT_EXCEPTION = "MQClientException"

OK, FAIL, INFO = "ok", "fail", "info"
JEPSEN_CLASSES = (OK, FAIL, INFO)

OUTCOME_CLASS: dict[str, str] = {
    SEND_OK: OK,
    FLUSH_DISK_TIMEOUT: OK,
    FLUSH_SLAVE_TIMEOUT: OK,
    SLAVE_NOT_AVAILABLE: OK,
    MQ_BROKER_EXCEPTION: FAIL,
    REMOTING_TOO_MUCH_REQUEST: INFO,
    REMOTING_TIMEOUT: INFO,
    REMOTING_CONNECT: INFO,
    REMOTING_SEND_REQUEST: INFO,
    MQ_CLIENT_EXCEPTION: INFO,
}
"""ok: the master stored it; fail: a definite broker rejection; info: indeterminate (may be stored)."""

OUTCOMES: tuple[str, ...] = tuple(OUTCOME_CLASS)
SEND_STATUSES: tuple[str, ...] = (SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE)


def outcome_class(outcome: str) -> str:
    """Jepsen class of an outcome word; a word we do not know is indeterminate (`info`)."""
    return OUTCOME_CLASS.get(outcome, INFO)


# --- events.jsonl (architecture §4) ----------------------------------------------------------------------------

EVENT_RUN_START = "run_start"
EVENT_RUN_END = "run_end"
EVENT_CLUSTER_UP = "cluster_up"
EVENT_CLUSTER_READY = "cluster_ready"
EVENT_CLUSTER_DOWN = "cluster_down"
EVENT_PHASE_START = "phase_start"
EVENT_PHASE_END = "phase_end"
EVENT_FAULT = "fault"
EVENT_READBACK_START = "readback_start"
EVENT_READBACK_END = "readback_end"
EVENT_LOAD_START = "load_start"
EVENT_LOAD_STOP = "load_stop"
EVENT_NODE_EXIT = "node_exit"
EVENT_CONSUMERS_START = "consumers_start"  # groups, workers, pids, listed, queues_owned, ready_s
EVENT_CONSUMERS_DRAIN = "consumers_drain"  # lag (per group at the end), drained, waited_s
EVENT_CONSUMERS_STOP = "consumers_stop"  # rows (per group)
EVENTS: tuple[str, ...] = (
    EVENT_RUN_START, EVENT_RUN_END, EVENT_CLUSTER_UP, EVENT_CLUSTER_READY, EVENT_CLUSTER_DOWN,
    EVENT_PHASE_START, EVENT_PHASE_END, EVENT_FAULT, EVENT_READBACK_START, EVENT_READBACK_END,
    EVENT_LOAD_START, EVENT_LOAD_STOP, EVENT_NODE_EXIT, EVENT_CONSUMERS_START, EVENT_CONSUMERS_DRAIN,
    EVENT_CONSUMERS_STOP,
)

FAULT_ACTIONS = ("apply", "verify", "revert", "step")
FAULT_STATUSES = ("started", "ok", "failed")
RUN_END_STATUSES = ("completed", "interrupted", "failed")


def make_event(event: str, **extra: Any) -> dict[str, Any]:
    """An event record with `wall_ns` and `mono_ns` taken together now."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}; allowed: {', '.join(EVENTS)}")
    return {"wall_ns": time.time_ns(), "mono_ns": time.monotonic_ns(), "event": event, **extra}


def append_event(path: str | os.PathLike[str], record: Mapping[str, Any]) -> None:
    """Append one event as a JSON line and flush it to disk before returning."""
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


# --- part files ------------------------------------------------------------------------------------------------

_part_lock = threading.Lock()
_part_counters: dict[tuple[str, str], itertools.count] = {}


def new_part_path(directory: str | os.PathLike[str], worker: str) -> Path:
    """A `part-<worker>-<n>.parquet` path in `directory` that no file and no earlier call of this process used.

    `worker` must be unique per writing process (e.g. the Locust worker id), and match `[A-Za-z0-9_.-]+`."""
    if not WORKER_NAME_RE.match(worker):
        raise ValueError(f"worker name {worker!r} must match {WORKER_NAME_RE.pattern}")
    d = Path(directory)
    with _part_lock:
        key = (str(d.resolve()), worker)
        if key not in _part_counters:
            taken = [int(m["n"]) for p in d.glob(f"part-{worker}-*.parquet")
                     if (m := PART_NAME_RE.match(p.name)) and m["worker"] == worker]
            _part_counters[key] = itertools.count(max(taken, default=-1) + 1)
        while True:
            path = d / f"part-{worker}-{next(_part_counters[key]):06d}.parquet"
            if not path.exists():
                return path


def to_table(rows: pa.Table | Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows (dicts or a table) as a table of exactly `schema`; raises on a missing required or unknown column."""
    if isinstance(rows, pa.Table):
        extra = set(rows.schema.names) - set(schema.names)
        if extra:
            raise ValueError(f"columns not in the schema: {sorted(extra)}")
        missing = [f.name for f in schema if f.name not in rows.schema.names]
        for name in missing:
            rows = rows.append_column(name, pa.nulls(rows.num_rows, schema.field(name).type))
        table = rows.select(schema.names).cast(schema)
    else:
        rows = list(rows)
        for row in rows:
            extra = set(row) - set(schema.names)
            if extra:
                raise ValueError(f"columns not in the schema: {sorted(extra)}")
        table = pa.Table.from_pylist(rows, schema=schema)
    table.validate(full=True)
    for f in schema:
        if not f.nullable and table.column(f.name).null_count:
            raise ValueError(f"column {f.name!r} must not be null")
    return table


def write_part(rows: pa.Table | Iterable[Mapping[str, Any]], directory: str | os.PathLike[str], worker: str,
               schema: pa.Schema) -> Path:
    """Write rows as one new part file, atomically (temp file, fsync, rename). Returns the part's path."""
    table = to_table(rows, schema)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    final = new_part_path(d, worker)
    tmp = d / f".{final.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(table, tmp, compression="zstd")
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dfd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return final


class PartWriter:
    """Buffers rows and writes a part file every `batch_rows` rows and on `flush()`/`close()`. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], worker: str, schema: pa.Schema,
                 batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
        if not WORKER_NAME_RE.match(worker):
            raise ValueError(f"worker name {worker!r} must match {WORKER_NAME_RE.pattern}")
        self.directory = Path(directory)
        self.worker = worker
        self.schema = schema
        self.batch_rows = batch_rows
        self.parts: list[Path] = []
        self._rows: list[Mapping[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, row: Mapping[str, Any]) -> None:
        with self._lock:
            self._rows.append(row)
            full = len(self._rows) >= self.batch_rows
        if full:
            self.flush()

    def flush(self) -> Path | None:
        with self._lock:
            rows, self._rows = self._rows, []
            if not rows:
                return None
            path = write_part(rows, self.directory, self.worker, self.schema)
            self.parts.append(path)
            return path

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
