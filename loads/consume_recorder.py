"""`ConsumeRecorder`: every delivery to one consumer process's listener becomes one consume row (architecture §5,
`CONSUME_SCHEMA`), first in a journal, then in `consumes/part-<worker>-<n>.parquet`.

The journal (`<run_dir>/journal/consumes/<worker>.jsonl`) gets one line per listener call when the listener is
entered (the rows, with `done_ns` null) and one when it returns (`done_ns`, `result`), each with a single unbuffered
`os.write` on an O_APPEND descriptor: once the write returns the line is in the kernel's page cache and survives a
SIGKILL of the process (not a crash of the machine). A background thread writes the finished rows as Parquet parts
every `interval_s` through the contract's atomic writer; each part names the journal row ids it holds in its
Parquet key-value metadata (`JOURNAL_IDS_KEY`, ranges `a-b,c-d`), so `salvage()` can turn exactly the journal rows
no part holds into one more part after the process died, without a duplicate and without a gap.
`close()` writes the rows still in a listener as ABANDONED (`done_ns` null); a listener returning after that is not
recorded again.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from analysis.contract import CONSUME_SCHEMA, PART_NAME_RE, os_error_words, write_part

log = logging.getLogger(__name__)

JOURNAL_SUBDIR = ("journal", "consumes")
JOURNAL_IDS_KEY = b"rmq_chaos.journal_ids"
ABANDONED = "ABANDONED"
FLUSH_INTERVAL_S = 1.0
JOURNAL_COMPACT_BYTES = 16 * 1024 * 1024
"""After a part, a journal larger than this is rewritten with only the rows still in a listener (the others are in
parts), so it stays small on long runs."""


def journal_path(run_dir: str | os.PathLike[str], worker: str) -> Path:
    return Path(run_dir).joinpath(*JOURNAL_SUBDIR, f"{worker}.jsonl")


def _ranges(ids: Iterable[int]) -> str:
    """Sorted ids as `a-b,c-d` (a single id as `a-a`)."""
    out: list[str] = []
    start = prev = None
    for i in sorted(ids):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}")
    return ",".join(out)


def _parse_ranges(text: str) -> Iterator[int]:
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        yield from range(int(a), int(b) + 1)


def _write(rows: list[dict[str, Any]], ids: list[int], directory: Path, worker: str) -> Path:
    schema = CONSUME_SCHEMA.with_metadata({JOURNAL_IDS_KEY: _ranges(ids).encode()})
    return write_part(rows, directory, worker, schema)


class ConsumeRecorder:
    """Journals the deliveries of one consumer process and writes them as Parquet parts. Thread-safe."""

    def __init__(self, run_dir: str | os.PathLike[str], worker: str, interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.directory = Path(run_dir) / "consumes"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.journal = journal_path(run_dir, worker)
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        self.worker = worker
        self.interval_s = interval_s
        self.parts: list[Path] = []
        self.rows_written = 0
        self.abandoned = 0
        self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._next_id = 0
        self._open: dict[int, dict[str, Any]] = {}  # in a listener
        self._finished: list[tuple[int, dict[str, Any]]] = []  # returned, not yet in a part
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_failure: Any = None
        """Called once with one line when the deliveries can no longer be journaled or written (the process then
        has to end: a delivery it cannot record must not be acknowledged)."""
        self.failure: str | None = None

    def _failed(self, err: OSError, what: str) -> None:
        if self.failure is None:
            self.failure = f"{os_error_words(err)} writing {what}"
            log.error("%s", self.failure)
            if self.on_failure is not None:
                self.on_failure(self.failure)

    def _journal(self, record: dict[str, Any]) -> None:
        try:
            os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        except OSError as err:
            self._failed(err, f"consume journal {self.journal}")
            raise

    @property
    def in_listener(self) -> int:
        return len(self._open)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"consume-recorder-{self.worker}", daemon=True)
            self._thread.start()

    def delivered(self, rows: list[dict[str, Any]]) -> list[int] | None:
        """The listener was called with these rows (`done_ns` null, `result` ABANDONED until `done`). Journaled
        before this returns. None once closed: nothing recorded."""
        with self._lock:
            if self._closed:
                return None
            ids = list(range(self._next_id, self._next_id + len(rows)))
            self._next_id += len(rows)
            self._journal({"d": ids[0], "rows": rows})
            for i, row in zip(ids, rows, strict=True):
                self._open[i] = row
        return ids

    def done(self, ids: list[int] | None, done_ns: int, result: str) -> None:
        """The listener returned `result` (or raised: the exception's class name) for the rows of `ids`."""
        if not ids:
            return
        with self._lock:
            if self._closed:
                return
            self._journal({"r": ids, "done_ns": done_ns, "result": result})
            for i in ids:
                row = self._open.pop(i, None)
                if row is not None:
                    self._finished.append((i, {**row, "done_ns": done_ns, "result": result}))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.flush()
            except OSError as err:  # the rows stay journaled; the process is told and ends
                self._failed(err, f"consume rows to {self.directory}")
                return
            except Exception:  # the rows stay buffered (and journaled) for the next attempt
                log.exception("writing consume rows failed")

    def flush(self) -> Path | None:
        """Write the finished rows as one part now."""
        with self._write_lock:
            with self._lock:
                batch, self._finished = self._finished, []
            if not batch:
                return None
            try:
                path = _write([r for _, r in batch], [i for i, _ in batch], self.directory, self.worker)
            except BaseException:
                with self._lock:
                    self._finished[:0] = batch
                raise
            self.parts.append(path)
            self.rows_written += len(batch)
            self._compact()
            return path

    def _compact(self) -> None:
        """Rewrite a large journal with only the rows no part holds yet (those in a listener, and those finished since
        the last batch, whose `d` line then carries the result)."""
        with self._lock:
            if self._fd < 0 or os.fstat(self._fd).st_size < JOURNAL_COMPACT_BYTES:
                return
            keep = sorted([*self._open.items(), *self._finished])
            tmp = self.journal.with_name(f".{self.journal.name}.tmp")
            tmp.write_text("".join(json.dumps({"d": i, "rows": [row]}, separators=(",", ":")) + "\n"
                                   for i, row in keep), encoding="utf-8")
            os.replace(tmp, self.journal)
            os.close(self._fd)
            self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def close(self) -> int:
        """Stop the writer, write every row: the finished ones and, as ABANDONED, those still in a listener.
        Idempotent. Returns the rows written in all."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        with self._lock:
            if not self._closed:
                self._closed = True
                self.abandoned = len(self._open)
                self._finished.extend(sorted(self._open.items()))
                self._open.clear()
        self.flush()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        return self.rows_written


def parts_of(directory: Path, worker: str) -> list[Path]:
    return sorted(p for p in directory.glob(f"part-{worker}-*.parquet")
                  if (m := PART_NAME_RE.match(p.name)) and m["worker"] == worker)


def covered_ids(directory: Path, worker: str) -> set[int]:
    """The journal row ids the parts of `worker` hold."""
    ids: set[int] = set()
    for path in parts_of(directory, worker):
        meta = pq.read_schema(path).metadata or {}
        ids.update(_parse_ranges(meta.get(JOURNAL_IDS_KEY, b"").decode()))
    return ids


def read_journal(path: Path) -> dict[int, dict[str, Any]]:
    """Journal rows by id, with their done time and result where the listener returned (else ABANDONED). A torn last
    line (the process died in the middle of a write) is skipped."""
    rows: dict[int, dict[str, Any]] = {}
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return rows
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if "d" in entry:
            for i, row in enumerate(entry["rows"], start=entry["d"]):
                rows[i] = row
        elif "r" in entry:
            for i in entry["r"]:
                if i in rows:
                    rows[i] = {**rows[i], "done_ns": entry["done_ns"], "result": entry["result"]}
    return rows


def salvage(run_dir: str | os.PathLike[str], worker: str) -> int:
    """After `worker`'s process died: write the journal rows no part of it holds as one more part (rows whose
    listener never returned as ABANDONED). Returns how many rows it wrote (0: nothing was missing). Idempotent."""
    directory = Path(run_dir) / "consumes"
    rows = read_journal(journal_path(run_dir, worker))
    missing = sorted(set(rows) - covered_ids(directory, worker))
    if not missing:
        return 0
    _write([rows[i] for i in missing], missing, directory, worker)
    return len(missing)


def rows_in_parts(run_dir: str | os.PathLike[str], worker: str) -> int:
    """Rows of `worker` in its parts (from the Parquet footers)."""
    return sum(pq.ParquetFile(p).metadata.num_rows for p in parts_of(Path(run_dir) / "consumes", worker))
