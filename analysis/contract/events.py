"""`events.jsonl` (architecture §4): the event names, the words of their fields, and the writer of one line."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

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
EVENT_CONSUMERS_BEHIND = "consumers_behind"  # phase, group, flow_control, pull_threshold_for_queue (keep_up)
EVENT_HARNESS_FAILED = "harness_failed"  # part (load, consumers, metrics, read-back, events), error, phase, at_s
EVENT_RUN_INTERRUPTED = "run_interrupted"  # signal, phase, at_s: the moment a signal reached the run
EVENT_HOST_CLOCK = "host_clock"  # host, when (start/end), offset_ns (host - control node), error_ns
EVENT_ROLES = "roles"  # controller mode: master, master_epoch, sync_state_set, route_master (sampled, on change)
EVENT_SEARCH_START = "search_start"  # phase, start_rate, step_s, hold, factor, max_rate, bounds
EVENT_SEARCH_STEP = "search_step"  # phase, step, rate, start_ns, end_ns, live, within, exceeded, next_rate
EVENT_SEARCH_END = "search_end"  # phase, steps, sustainable_rate (live), hold
EVENT_THREAD_DUMP = "thread_dump"  # phase, nodes (node -> pids sent SIGQUIT)
EVENTS: tuple[str, ...] = (
    EVENT_RUN_START, EVENT_RUN_END, EVENT_CLUSTER_UP, EVENT_CLUSTER_READY, EVENT_CLUSTER_DOWN,
    EVENT_PHASE_START, EVENT_PHASE_END, EVENT_FAULT, EVENT_READBACK_START, EVENT_READBACK_END,
    EVENT_LOAD_START, EVENT_LOAD_STOP, EVENT_NODE_EXIT, EVENT_CONSUMERS_START, EVENT_CONSUMERS_DRAIN,
    EVENT_CONSUMERS_STOP, EVENT_CONSUMERS_BEHIND, EVENT_HARNESS_FAILED, EVENT_RUN_INTERRUPTED, EVENT_HOST_CLOCK,
    EVENT_ROLES,
    EVENT_SEARCH_START, EVENT_SEARCH_STEP, EVENT_SEARCH_END, EVENT_THREAD_DUMP,
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
