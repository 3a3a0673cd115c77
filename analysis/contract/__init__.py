"""The run directory contract: layout, Parquet schemas, outcome words and event names, and the part-file writer,
one module each (`layout`, `schemas`, `readback_queues`, `outcomes`, `events`, `parts`), every public name re-exported
here.

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

from analysis.contract.events import (  # noqa: F401
    EVENT_CLUSTER_DOWN,
    EVENT_CLUSTER_READY,
    EVENT_CLUSTER_UP,
    EVENT_CONSUMERS_BEHIND,
    EVENT_CONSUMERS_DRAIN,
    EVENT_CONSUMERS_START,
    EVENT_CONSUMERS_STOP,
    EVENT_FAULT,
    EVENT_HARNESS_FAILED,
    EVENT_HOST_CLOCK,
    EVENT_LOAD_START,
    EVENT_LOAD_STOP,
    EVENT_NODE_EXIT,
    EVENT_PHASE_END,
    EVENT_PHASE_START,
    EVENT_READBACK_END,
    EVENT_READBACK_START,
    EVENT_ROLES,
    EVENT_RUN_END,
    EVENT_RUN_INTERRUPTED,
    EVENT_RUN_START,
    EVENT_SEARCH_END,
    EVENT_SEARCH_START,
    EVENT_SEARCH_STEP,
    EVENTS,
    FAULT_ACTIONS,
    FAULT_STATUSES,
    RUN_END_STATUSES,
    append_event,
    make_event,
)
from analysis.contract.layout import (  # noqa: F401
    CLUSTER_FILE,
    CONSUMER_LAG_DIR,
    CONSUMES_DIR,
    DEFAULT_BATCH_ROWS,
    EVENTS_FILE,
    JUNIT_FILE,
    LOGS_DIR,
    MAX_JSON_BYTES,
    METRICS_DIR,
    PART_GLOB,
    PART_NAME_RE,
    READBACK_DIR,
    READBACK_QUEUES_FILE,
    REPORT_DIR,
    REPORT_INDEX,
    REQUESTS_DIR,
    SCENARIO_FILE,
    SCHEDULE_DIR,
    VERDICT_FILE,
    WORKER_NAME_RE,
    RunLayout,
)
from analysis.contract.outcomes import (  # noqa: F401
    FAIL,
    FLUSH_DISK_TIMEOUT,
    FLUSH_SLAVE_TIMEOUT,
    INFO,
    JEPSEN_CLASSES,
    MQ_BROKER_EXCEPTION,
    MQ_CLIENT_EXCEPTION,
    OK,
    OUTCOME_CLASS,
    OUTCOMES,
    REMOTING_CONNECT,
    REMOTING_SEND_REQUEST,
    REMOTING_TIMEOUT,
    REMOTING_TOO_MUCH_REQUEST,
    SEND_OK,
    SEND_STATUSES,
    SLAVE_NOT_AVAILABLE,
    outcome_class,
)
from analysis.contract.parts import (  # noqa: F401
    PartWriter,
    new_part_path,
    os_error_words,
    to_table,
    write_part,
)
from analysis.contract.readback_queues import (  # noqa: F401
    QUEUE_COMPLETE,
    QUEUE_PARTIAL,
    QUEUE_STATUSES,
    QUEUE_UNREADABLE,
    READBACK_QUEUE_FIELDS,
    READBACK_QUEUES_VERSION,
    check_readback_queue,
    read_readback_queues,
    write_readback_queues,
)
from analysis.contract.schemas import (  # noqa: F401
    CONSUME_RESULTS,
    CONSUME_SCHEMA,
    CONSUMER_LAG_SCHEMA,
    METRICS_SCHEMA,
    READBACK_NODES,
    READBACK_SCHEMA,
    REQUEST_SCHEMA,
    SCHEDULE_REASONS,
    SCHEDULE_SCHEMA,
)

__all__ = ["SCENARIO_FILE", "SCHEDULE_DIR", "CLUSTER_FILE", "EVENTS_FILE", "REQUESTS_DIR", "METRICS_DIR", "READBACK_DIR", "CONSUMES_DIR", "CONSUMER_LAG_DIR", "READBACK_QUEUES_FILE", "LOGS_DIR", "REPORT_DIR", "REPORT_INDEX", "VERDICT_FILE", "JUNIT_FILE", "PART_GLOB", "PART_NAME_RE", "WORKER_NAME_RE", "DEFAULT_BATCH_ROWS", "MAX_JSON_BYTES", "RunLayout", "REQUEST_SCHEMA", "SCHEDULE_REASONS", "SCHEDULE_SCHEMA", "METRICS_SCHEMA", "READBACK_SCHEMA", "READBACK_NODES", "CONSUME_SCHEMA", "CONSUME_RESULTS", "CONSUMER_LAG_SCHEMA", "QUEUE_COMPLETE", "QUEUE_PARTIAL", "QUEUE_UNREADABLE", "QUEUE_STATUSES", "READBACK_QUEUES_VERSION", "READBACK_QUEUE_FIELDS", "check_readback_queue", "write_readback_queues", "read_readback_queues", "SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE", "MQ_BROKER_EXCEPTION", "REMOTING_TOO_MUCH_REQUEST", "REMOTING_TIMEOUT", "REMOTING_CONNECT", "REMOTING_SEND_REQUEST", "MQ_CLIENT_EXCEPTION", "OK", "FAIL", "INFO", "JEPSEN_CLASSES", "OUTCOME_CLASS", "OUTCOMES", "SEND_STATUSES", "outcome_class", "EVENT_RUN_START", "EVENT_RUN_END", "EVENT_CLUSTER_UP", "EVENT_CLUSTER_READY", "EVENT_CLUSTER_DOWN", "EVENT_PHASE_START", "EVENT_PHASE_END", "EVENT_FAULT", "EVENT_HARNESS_FAILED", "EVENT_HOST_CLOCK", "EVENT_READBACK_START", "EVENT_RUN_INTERRUPTED", "EVENT_READBACK_END", "EVENT_LOAD_START", "EVENT_LOAD_STOP", "EVENT_NODE_EXIT", "EVENT_ROLES", "EVENT_SEARCH_START", "EVENT_SEARCH_STEP", "EVENT_SEARCH_END", "EVENT_CONSUMERS_START", "EVENT_CONSUMERS_BEHIND", "EVENT_CONSUMERS_DRAIN", "EVENT_CONSUMERS_STOP", "EVENTS", "FAULT_ACTIONS", "FAULT_STATUSES", "RUN_END_STATUSES", "make_event", "append_event", "new_part_path", "os_error_words", "to_table", "write_part", "PartWriter"]
