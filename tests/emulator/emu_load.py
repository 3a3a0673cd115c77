"""Send load for the emulator tests: N threads sending back to back through one shared `remoting.Producer` (as the
field incident's 64 threads shared one Java producer: one connection per broker, the client profile's retries,
budget and close-on-timeout), every outcome recorded with its time in the outcome words of the Java client."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from remoting.errors import RemotingError
from remoting.message import Message
from remoting.outcome import outcome_of
from remoting.producer import Producer

TIMEOUT_MS = 3000
JOIN_MARGIN_S = 5.0


@dataclass
class Outcome:
    end: float
    """time.monotonic() when the send returned or raised"""
    latency_ms: float
    outcome: str
    """SEND_OK, FLUSH_SLAVE_TIMEOUT, ..., or the exception's class name (remoting.outcome.outcome_of)"""
    code: int | None
    """the broker's response code (None for a client-side exception)"""
    remark: str | None
    key: str
    queue_id: int = -1
    queue_offset: int = -1
    msg_id: str = ""
    attempts: int = 1


def send_one(producer: Producer, topic: str, body: bytes, key: str, timeout_ms: float = TIMEOUT_MS) -> Outcome:
    """One `producer.send` with KEYS=key; the result or the exception as an `Outcome`."""
    begin = time.monotonic()
    try:
        result = producer.send(Message(topic, body, tags="T", keys=key), timeout_ms)
    except RemotingError as e:
        word, code, remark = outcome_of(e)
        return Outcome(time.monotonic(), (time.monotonic() - begin) * 1000, word, code, remark, key,
                       msg_id=e.msg_id or "", attempts=len(e.attempts))
    word, code, remark = outcome_of(result)
    return Outcome(time.monotonic(), (time.monotonic() - begin) * 1000, word, code, remark, key, result.queue_id,
                   result.queue_offset, result.msg_id, len(result.attempts))


class Flood:
    """`threads` senders sharing `producer` (closed model: each sends again as soon as its send returns)."""

    def __init__(self, producer: Producer, topic: str, threads: int, body_size: int,
                 timeout_ms: float = TIMEOUT_MS) -> None:
        self.producer, self.topic = producer, topic
        self.body = os.urandom(body_size)  # incompressible: the client's zlib (over 4 KiB) leaves it this size
        self.threads, self.timeout_ms = threads, timeout_ms
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []

    def __enter__(self) -> Flood:
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i,), name=f"flood-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for t in self._workers:
            t.join(self.timeout_ms / 1000 + JOIN_MARGIN_S)

    def _run(self, worker: int) -> None:
        seq = 0
        while not self._stop.is_set():
            self.outcomes.append(send_one(self.producer, self.topic, self.body, f"w{worker}-{seq}", self.timeout_ms))
            seq += 1

    def since(self, t: float) -> list[Outcome]:
        return [o for o in list(self.outcomes) if o.end >= t]

    def count(self, t: float, outcome: str | None = None, code: int | None = None,
              remark_prefix: str | tuple[str, ...] | None = None) -> int:
        return len(self.matching(t, outcome, code, remark_prefix))

    def matching(self, t: float, outcome: str | None = None, code: int | None = None,
                 remark_prefix: str | tuple[str, ...] | None = None) -> list[Outcome]:
        return [o for o in self.since(t) if (outcome is None or o.outcome == outcome)
                and (code is None or o.code == code)
                and (remark_prefix is None or (o.remark or "").startswith(remark_prefix))]

    def words(self, t: float) -> dict[str, int]:
        """Outcome word -> count since `t` (for assertion messages)."""
        out: dict[str, int] = {}
        for o in self.since(t):
            key = o.outcome if o.code is None else f"{o.outcome}({o.code})"
            out[key] = out.get(key, 0) + 1
        return out
