"""Send load for the emulator tests: N threads sending 3000 ms SEND_MESSAGE_V2 requests back to back through one
`RemotingClient` (as the Java client shares one connection per broker), every outcome recorded with its time."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import emu_wire as wire

from remoting.client import RemotingClient
from remoting.errors import RemotingError


@dataclass
class Outcome:
    end: float  # time.monotonic() when the answer (or error) came
    latency_ms: float
    code: int | None  # response code, None for an exception
    error: str | None
    key: str
    queue_id: int = -1
    remark: str | None = None


class Flood:
    def __init__(self, client: RemotingClient, addr: str, topic: str, threads: int, body_size: int,
                 queues: int = 4, timeout_ms: float = 3000) -> None:
        self.client, self.addr, self.topic = client, addr, topic
        self.body = b"x" * body_size
        self.threads, self.queues, self.timeout_ms = threads, queues, timeout_ms
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._seq = 0
        self._lock = threading.Lock()

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
            t.join(self.timeout_ms / 1000 + 5)

    def _run(self, worker: int) -> None:
        while not self._stop.is_set():
            with self._lock:
                self._seq += 1
                seq = self._seq
            key = f"w{worker}-{seq}"
            begin = time.monotonic()
            try:
                r = wire.send(self.client, self.addr, self.topic, self.body, key, seq % self.queues, self.timeout_ms)
                out = Outcome(time.monotonic(), r.latency_ms, r.code, None, key, r.queue_id, r.remark)
            except RemotingError as e:
                out = Outcome(time.monotonic(), (time.monotonic() - begin) * 1000, None, type(e).__name__, key)
            self.outcomes.append(out)

    def since(self, t: float) -> list[Outcome]:
        return [o for o in list(self.outcomes) if o.end >= t]

    def count(self, t: float, code: int | None = None, error: str | None = None) -> int:
        return sum(1 for o in self.since(t) if (code is None or o.code == code) and (error is None or o.error == error))
