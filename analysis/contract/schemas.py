"""The Parquet schemas of a run directory (architecture §5): request, schedule, metrics, read-back, consume and
consumer lag rows."""
from __future__ import annotations

import pyarrow as pa

from analysis.contract.layout import (
    CONSUMER_LAG_DIR,
    CONSUMES_DIR,
    METRICS_DIR,
    READBACK_DIR,
    REQUESTS_DIR,
    SCHEDULE_DIR,
)

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

SCHEDULE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("worker", pa.string(), nullable=False),
        pa.field("client", pa.string(), nullable=False),
        pa.field("phase", pa.string()),  # of the slots' intended time
        pa.field("reason", pa.string(), nullable=False),  # late | stopped
        pa.field("ts_ns", pa.int64(), nullable=False),  # when the count was written
        pa.field("dropped", pa.int64(), nullable=False),
        pa.field("first_intended_ns", pa.int64(), nullable=False),
        pa.field("last_intended_ns", pa.int64(), nullable=False),
    ]
)
"""Open-model slots the load did not send, counted per batch: `late` (not started within the client's max lag of
the intended time: the load did not keep its schedule) or `stopped` (due when the load stopped, still on time)."""
SCHEDULE_REASONS = ("late", "stopped")

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


PART_SCHEMAS: dict[str, pa.Schema] = {
    REQUESTS_DIR: REQUEST_SCHEMA, METRICS_DIR: METRICS_SCHEMA, READBACK_DIR: READBACK_SCHEMA,
    CONSUMES_DIR: CONSUME_SCHEMA, f"{METRICS_DIR}/{CONSUMER_LAG_DIR}": CONSUMER_LAG_SCHEMA,
    SCHEDULE_DIR: SCHEDULE_SCHEMA}
"""Every directory of part files in a run directory (relative to it) -> the schema of its rows."""


def schema_problem(file_schema: pa.Schema, schema: pa.Schema) -> str | None:
    """Why a part file with `file_schema` cannot be read as `schema` says (a required column missing, a column of
    another type), None when it can: the analysis refuses such a part, the compaction leaves it as it is."""
    for f in schema:
        i = file_schema.get_field_index(f.name)
        if i < 0 and not f.nullable:
            return f"column {f.name!r} is missing (required by analysis/contract/schemas.py)"
        if i >= 0 and file_schema.field(i).type != f.type:
            return f"column {f.name!r} has type {file_schema.field(i).type}, the contract says {f.type}"
    return None
