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

import itertools
import json
import queue
from collections.abc import Callable, Iterable, Iterator
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


def messages(lines: Iterable[bytes | str]) -> Iterator[dict[str, Any]]:
    """The messages read from a channel's lines until it closes, stray output passed over."""
    for line in lines:
        msg = decode(line)
        if msg is not None:
            yield msg


class Replies:
    """The answers awaited on a control channel, by message id: `ask` sends a message under a new id and waits for
    its reply, the channel's reader hands every reply to `deliver`, and `close` (the channel is gone) answers each
    call still waiting with None. `LoadProcess` and the host agent's client share it."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._boxes: dict[int, queue.Queue] = {}

    def next_id(self) -> int:
        """An id for a message whose answer nobody waits for."""
        return next(self._ids)

    def ask(self, send: Callable[[dict[str, Any]], None], message: dict[str, Any],
            timeout_s: float) -> dict[str, Any] | None:
        """`send` the message with an `id` first; its reply, or None when the channel closed before it came.

        Raises:
            TimeoutError: no reply within `timeout_s`.
        """
        msg_id = next(self._ids)
        box: queue.Queue = queue.Queue(maxsize=1)
        self._boxes[msg_id] = box
        try:
            send({"id": msg_id, **message})
            try:
                return box.get(timeout=timeout_s)
            except queue.Empty:
                raise TimeoutError(f"no reply within {timeout_s:g} s") from None
        finally:
            self._boxes.pop(msg_id, None)

    def deliver(self, reply: dict[str, Any]) -> None:
        """A reply read from the channel, to the call waiting for its id (the first one only)."""
        box = self._boxes.get(reply.get("id"))
        if box is not None and box.empty():
            box.put_nowait(reply)

    def close(self) -> None:
        """The channel is gone: every call still waiting gets None."""
        for box in list(self._boxes.values()):
            if box.empty():
                box.put_nowait(None)
