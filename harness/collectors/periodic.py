"""`PeriodicCollector`: a collector that samples once a second beside the load and writes rows of its run into a
`PartWriter` (`write_rows`, counted in `rows`). `start()` starts its thread; each round calls `collect_once()`,
paced from the start (a round that overran is made up at once, see `next_due`); `stop()` ends it, waits for the
round under way at most `join_timeout_s()`, then `close()`s (the writer writes its last rows). When its rows can no
longer be written (a full disk, an I/O error), the thread ends and `on_failure` is called once with one line."""
from __future__ import annotations

import threading
import time
from typing import Any

from analysis.contract import PartWriter, os_error_words


class PeriodicCollector:
    THREAD_NAME = "rmq-collector"

    def __init__(self, run_id: str, writer: PartWriter, interval_s: float) -> None:
        self.run_id = run_id
        self.writer = writer
        self.interval_s = interval_s
        self.rows = 0
        self.on_failure: Any = None
        """Called once (from the collector's thread) with one line when its rows cannot be written."""
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def collect_once(self) -> Any:
        raise NotImplementedError

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.writer.add(row)
        self.rows += len(rows)

    def close(self) -> None:
        """After the thread has ended (or the join timed out): the last rows written (a failure reported, not
        raised)."""
        try:
            self.writer.close()
        except OSError as err:
            self._failed(err)

    def _failed(self, err: OSError) -> None:
        if self.failure is None:
            self.failure = f"{os_error_words(err)} writing {self.THREAD_NAME.removeprefix('rmq-')} " \
                           f"rows to {self.writer.directory}"
            if self.on_failure is not None:
                self.on_failure(self.failure)

    def join_timeout_s(self) -> float:
        return self.interval_s * 5

    def next_due(self, due: float) -> float:
        """When the round after the one due at `due` (monotonic s) is due: one interval later."""
        return due + self.interval_s

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.join_timeout_s())
        self.close()

    def _loop(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            try:
                self.collect_once()
            except OSError as err:  # its rows cannot be written: stop sampling, say so once
                self._failed(err)
                return
            due = self.next_due(due)
            self._stop.wait(max(0.0, due - time.monotonic()))
