"""The control channel between `LoadProcess` (in the harness) and the load's process (`loads.headless`): one JSON
object per line, commands on the child's stdin, answers and pushed figures on a private copy of its stdout.

Commands: `{"id": n, "cmd": "start", "phase": str|null, "at_ns": int}`, `{"id": n, "cmd": "phase", "name": str,
"rate": float|null, "at_ns": int}`, `{"id": n, "cmd": "stats"}`, `{"id": n, "cmd": "stop"}`.
From the child: `{"type": "listening", "port": int}` (a master, before its workers connect), `{"type": "ready"}`,
`{"type": "reply", "id": n, "ok": bool, "result"|"error": ...}`, `{"type": "stats", ...LoadStats}` every second,
`{"type": "failed", "error": str, "worker": str, "t_ns": int}` the moment a process's rows can no longer be
written (it has stopped sending), and `{"type": "stopped", "reason": str, "result": {...totals}, "stats": {...}}` as
its last line.
Imports neither gevent nor Locust.
"""
from __future__ import annotations

import json
from typing import Any

CMD_START = "start"
CMD_PHASE = "phase"
CMD_STATS = "stats"
CMD_STOP = "stop"
COMMANDS = (CMD_START, CMD_PHASE, CMD_STATS, CMD_STOP)

MSG_LISTENING = "listening"
MSG_READY = "ready"
MSG_REPLY = "reply"
MSG_STATS = "stats"
MSG_STOPPED = "stopped"
MSG_FAILED = "failed"


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def decode(line: bytes | str) -> dict[str, Any] | None:
    """One message, or None for a line that is not a JSON object (e.g. stray output)."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
