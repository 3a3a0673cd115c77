"""Fault events for the run's `events.jsonl` (architecture §4): one dict per apply/verify/revert/step, stamped with
wall and monotonic nanoseconds taken together."""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

Emit = Callable[[dict], None]
"""Receives each event dict; the harness appends it to `events.jsonl`."""

ACTIONS = ("apply", "verify", "revert", "step")
STATUSES = ("started", "ok", "failed")


def stamp() -> dict[str, int]:
    """`wall_ns` and `mono_ns` read together at this moment."""
    return {"wall_ns": time.time_ns(), "mono_ns": time.monotonic_ns()}


def fault_event(fault_id: str, kind: str, target: str, action: str, status: str, **extra: Any) -> dict:
    """One `fault` event; `extra` may carry `params`, `evidence`, `step`, `error`."""
    if action not in ACTIONS or status not in STATUSES:
        raise ValueError(f"fault event: action {action!r} / status {status!r} not in {ACTIONS} / {STATUSES}")
    event = {**stamp(), "event": "fault", "fault_id": fault_id, "kind": kind, "target": target,
             "action": action, "status": status}
    event.update({k: v for k, v in extra.items() if v is not None})
    return event


def discard(event: dict) -> None:
    """The default `emit`: events go nowhere."""


class JsonlEventSink:
    """Appends events to a JSONL file, one line each, flushed as they come (thread-safe)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def __call__(self, event: dict) -> None:
        line = json.dumps(event, sort_keys=True, default=str) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
