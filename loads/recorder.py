"""`RequestRecorder`: every send of one worker process becomes one request row (architecture §5), written to
`requests/part-<worker>-<n>.parquet` in batches.

`add()` only appends a tuple, so the send path stays cheap. A background writer takes the buffered rows at least
once per flush interval and writes them as one part file through the contract's atomic writer (temp name, fsync,
rename), so memory stays flat on long runs and a killed process leaves only whole files. Under gevent the writer is
a greenlet that hands the Arrow conversion and the file write to a native thread of the hub's pool (the event loop
keeps serving sends meanwhile); without gevent it is a plain thread. The phase of a row is looked up by its
intended time when the batch is written (see `PhaseBook`). Every written batch also yields a `BatchSummary` for the
progress figures. `on_rows` (Locust's statistics, `loads.locust_feed`) gets every row once, in the writer's thread,
when a batch takes it (also a row held back for the next batch). With `drops`, each batch also writes the open-model
slots dropped since the last one (`schedule/part-*.parquet`, `loads.keeper`).

A batch that cannot be written (ENOSPC, EIO, EROFS, ...) keeps its rows in the buffer and calls `on_failure` once
with one line (`no space left on device writing request rows to <dir>`); the writer stops trying.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analysis.contract import PART_NAME_RE, REQUEST_SCHEMA, SCHEDULE_SCHEMA, os_error_words, write_part
from loads.histogram import LogHistogram
from loads.phasebook import PhaseBook
from loads.tally import BatchSummary

log = logging.getLogger(__name__)

FIELDS = ("client", "seq", "msg_id", "intended_ns", "start_ns", "end_ns", "outcome", "response_code",
          "remark", "broker", "queue_id", "queue_offset", "attempts", "scheduled")
"""Order of the tuple `add()` takes; `scheduled` (open model) is not a column, it says whether the row's start
can be late against a schedule."""
_INT32_COLUMNS = ("response_code", "queue_id", "attempts")
_STRING_COLUMNS = ("client", "msg_id", "outcome", "remark", "broker")
NS_PER_MS = 1_000_000.0
INTENDED = FIELDS.index("intended_ns")
CHUNK_ROWS = 1000
PHASE_GRACE_NS = 200_000_000
"""Rows this recent (by intended time) wait for the next batch: a phase change may still be on its way."""


def write_error(err: BaseException, what: str, where: str | Path) -> str:
    """One line for a failed write: `no space left on device writing request rows to <dir>`."""
    return f"{os_error_words(err)} writing {what} to {where}"


def harness_key(run_id: str, worker: str, seq: int | str) -> str:
    """The key of a send, first in its message's KEYS and in the `key` column: `<run_id>:<worker>:<seq>`."""
    return f"{run_id}:{worker}:{seq}"


def _gevent_patched() -> bool:
    try:
        from gevent import monkey
    except ImportError:  # pragma: no cover - gevent comes with locust
        return False
    return monkey.is_module_patched("threading")


def highest_seq(requests_dir: Path, worker: str) -> int:
    """The highest `seq` in the parts `worker` already wrote in this directory (-1 when none), read from the Parquet
    statistics, so a restarted worker continues its keys instead of repeating them."""
    best = -1
    for path in requests_dir.glob(f"part-{worker}-*.parquet"):
        m = PART_NAME_RE.match(path.name)
        if not m or m["worker"] != worker:
            continue
        meta = pq.ParquetFile(path).metadata
        col = meta.schema.to_arrow_schema().get_field_index("seq")
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(col).statistics
            if stats is not None and stats.has_min_max:
                best = max(best, int(stats.max))
    return best


class RequestRecorder:
    """Buffers request rows of one worker and writes them as Parquet parts."""

    def __init__(self, requests_dir: str | Path, run_id: str, worker: str, topic: str, phases: PhaseBook,
                 interval_s: float = 1.0, on_batch: Callable[[BatchSummary], None] | None = None,
                 gauges: Callable[[], dict[str, float | int]] | None = None,
                 on_rows: Callable[[list[tuple]], Callable[[], None] | None] | None = None,
                 drops: Callable[[], list[dict]] | None = None, schedule_dir: str | Path | None = None,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self.directory = Path(requests_dir)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.run_id, self.worker, self.topic = run_id, worker, topic
        self.phases = phases
        self.interval_s = interval_s
        self.on_batch = on_batch
        self.gauges = gauges or (lambda: {})
        self.drops = drops
        self.schedule_dir = Path(schedule_dir) if schedule_dir is not None else None
        self.on_failure = on_failure
        self.failure: str | None = None
        self._pending_drops: list[dict] = []
        self.rows_written = 0
        self.parts: list[Path] = []
        self.on_rows = on_rows
        """Called in the writer's thread with the rows a batch takes that it was not given before; what it returns
        (if not None) is then called in the caller's thread (the event loop's)."""
        self._rows: list[tuple] = []
        self._given = 0
        """How many rows at the head of the buffer `on_rows` already had (held back or not written)."""
        self._since_ns = time.time_ns()
        self._lock = threading.Lock()  # a gevent lock once patched: serializes batches among greenlets
        self._stop = threading.Event()
        self._runner = None
        self._gevent = _gevent_patched()

    def add(self, row: tuple) -> None:
        """One finished send, as a tuple in `FIELDS` order."""
        self._rows.append(row)

    @property
    def buffered(self) -> int:
        return len(self._rows)

    # --- background writer ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background writer (a greenlet under gevent, else a daemon thread)."""
        if self._runner is not None:
            return
        self._warm_up()
        if self._gevent:
            import gevent

            self._runner = gevent.spawn(self._loop)
        else:
            self._runner = threading.Thread(target=self._loop, name=f"recorder-{self.worker}", daemon=True)
            self._runner.start()

    def _warm_up(self) -> None:
        """Convert one made-up row now, so the first real batch does not pay for pyarrow's and numpy's lazy imports
        (done under the import lock, in the writer thread, while the event loop waits)."""
        now = time.time_ns()
        row = ("warm-up", 0, "X", now, now, now, "SEND_OK", 0, None, "b", 0, 0, 1, True)
        _, latency_ms, _ = self.to_table([row], PhaseBook())
        LogHistogram.of(latency_ms)
        Counter(["SEND_OK"])

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.flush()
            except Exception as err:  # the rows of this batch stay in the buffer; the load is told and stops
                self._failed(err)
                return

    def _failed(self, err: BaseException) -> None:
        if self.failure is None:
            self.failure = write_error(err, "request rows", self.directory)
            log.error("%s", self.failure, exc_info=err)
            if self.on_failure is not None:
                self.on_failure(self.failure)

    def close(self) -> BatchSummary | None:
        """Stop the background writer and write every buffered row. Idempotent. A last batch that cannot be written
        is reported (`on_failure`) and its rows counted as unwritten (`buffered`), not raised."""
        self._stop.set()
        runner, self._runner = self._runner, None
        if runner is not None and runner is not _current():
            runner.join(timeout=30)
        try:
            return self.flush(final=True)
        except Exception as err:  # noqa: BLE001 - said once through on_failure; the rows stay counted as unwritten
            self._failed(err)
            return None

    # --- writing ----------------------------------------------------------------------------------------------

    def flush(self, final: bool = False) -> BatchSummary | None:
        """Write the buffered rows as one part now (in a native thread under gevent). Unless `final`, rows intended
        less than `PHASE_GRACE_NS` ago wait for the next batch, so a phase change that is still on its way to this
        worker labels them. Then the dropped slots counted since the last batch. Returns what was written."""
        with self._lock:
            rows, self._rows = self._rows, []
            given, self._given = self._given, 0
            try:
                if self.on_rows is not None and given < len(rows):
                    self._give(rows[given:])
                    given = len(rows)
                now = time.time_ns()
                since, self._since_ns = self._since_ns, now
                gauges = self.gauges()
                phases = self.phases.snapshot()
                cutoff = None if final else now - PHASE_GRACE_NS
                summary, held = self._in_writer_thread(self._write, rows, phases, since, now, cutoff)
            except BaseException:
                self._rows[:0] = rows  # not written: keep them for the next attempt
                self._given = given
                raise
            if held:
                self._rows[:0] = held
                self._given = len(held)
            for name, value in gauges.items():
                setattr(summary, name, value)
            summary.parts, summary.rows_written = len(self.parts), self.rows_written
            self._write_drops(now)
        if self.on_batch is not None:
            self.on_batch(summary)
        return summary

    def _write_drops(self, now_ns: int) -> None:
        """The dropped-slot counts taken since the last batch, as one schedule part (kept for the next batch when
        the write fails)."""
        if self.drops is None or self.schedule_dir is None:
            return
        self._pending_drops.extend(self.drops())
        if not self._pending_drops:
            return
        base = {"run_id": self.run_id, "worker": self.worker, "ts_ns": now_ns}
        rows = [{**base, **d} for d in self._pending_drops]
        self._in_writer_thread(write_part, rows, self.schedule_dir, self.worker, SCHEDULE_SCHEMA)
        self._pending_drops.clear()

    def _in_writer_thread(self, fn: Callable, *args):
        """`fn(*args)` in a native thread of the hub's pool under gevent (the event loop keeps serving), else here."""
        if self._gevent:
            from gevent import get_hub

            ok, value = get_hub().threadpool.apply(_caught, (fn, *args))
            if not ok:
                raise value  # raised here, in the greenlet: the pool's thread never prints it (stderr may be full)
            return value
        return fn(*args)

    def _give(self, rows: list[tuple]) -> None:
        """Hand `rows` to `on_rows`; a failure there is logged, never lost rows."""
        try:
            then = self._in_writer_thread(self.on_rows, rows)
            if then is not None:
                then()
        except Exception:
            log.exception("on_rows failed for %d rows", len(rows))

    def _write(self, rows: list[tuple], phases: PhaseBook, since_ns: int, now_ns: int,
               cutoff_ns: int | None) -> tuple[BatchSummary, list[tuple]]:
        held: list[tuple] = []
        if cutoff_ns is not None:
            ready = [r for r in rows if r[INTENDED] < cutoff_ns]
            if len(ready) < len(rows):
                held = [r for r in rows if r[INTENDED] >= cutoff_ns]
                rows = ready
        if not rows:
            return BatchSummary(self.worker, since_ns, now_ns, 0, {}, LogHistogram(), LogHistogram()), held
        table, latency_ms, lag_ms = self.to_table(rows, phases)
        path = write_part(table, self.directory, self.worker, REQUEST_SCHEMA)
        self.parts.append(path)
        self.rows_written += len(rows)
        outcomes = dict(Counter(table.column("outcome").to_pylist()))
        summary = BatchSummary(self.worker, since_ns, now_ns, len(rows), outcomes, LogHistogram.of(latency_ms),
                               LogHistogram.of(lag_ms))
        return summary, held

    def to_table(self, rows: list[tuple], phases: PhaseBook) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """The rows as a table of `REQUEST_SCHEMA`, plus the latencies (ms) and start lags (ms, scheduled rows).
        Converted in chunks, each a few short C calls, so the event loop's thread gets the GIL in between."""
        tables, latencies, lags = [], [], []
        starts = np.array([b for b, _ in phases.boundaries()], dtype=np.int64)
        names = pa.array([n for _, n in phases.boundaries()], pa.string())
        for i in range(0, len(rows), CHUNK_ROWS):
            table, latency_ms, lag_ms = self._chunk_table(rows[i:i + CHUNK_ROWS], starts, names)
            tables.append(table)
            latencies.append(latency_ms)
            lags.append(lag_ms)
        return pa.concat_tables(tables), np.concatenate(latencies), np.concatenate(lags)

    def _chunk_table(self, rows: list[tuple], phase_starts: np.ndarray,
                     phase_names: pa.Array) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        cols = dict(zip(FIELDS, zip(*rows, strict=True), strict=True))
        n = len(rows)
        seq = np.fromiter(cols["seq"], dtype=np.int64, count=n)
        intended = np.fromiter(cols["intended_ns"], dtype=np.int64, count=n)
        start = np.fromiter(cols["start_ns"], dtype=np.int64, count=n)
        end = np.fromiter(cols["end_ns"], dtype=np.int64, count=n)
        scheduled = np.fromiter(cols["scheduled"], dtype=bool, count=n)
        latency_ms = (end - intended) / NS_PER_MS
        phase_index = np.searchsorted(phase_starts, intended, side="right") - 1
        arrays: dict[str, pa.Array] = {
            "run_id": pa.repeat(pa.scalar(self.run_id, pa.string()), n),
            "worker": pa.repeat(pa.scalar(self.worker, pa.string()), n),
            "topic": pa.repeat(pa.scalar(self.topic, pa.string()), n),
            "seq": pa.array(seq, pa.int64()),
            "key": pc.binary_join_element_wise(harness_key(self.run_id, self.worker, ""),
                                               pc.cast(pa.array(seq), pa.string()), ""),
            "latency_ms": pa.array(latency_ms, pa.float64()),
            "service_ms": pa.array((end - start) / NS_PER_MS, pa.float64()),
            "phase": pc.take(phase_names, pa.array(phase_index, pa.int64())),
            "intended_ns": pa.array(intended, pa.int64()),
            "start_ns": pa.array(start, pa.int64()),
            "end_ns": pa.array(end, pa.int64()),
            "queue_offset": pa.array(cols["queue_offset"], pa.int64()),
        }
        for name in _INT32_COLUMNS:
            arrays[name] = pa.array(cols[name], pa.int32())
        for name in _STRING_COLUMNS:
            arrays[name] = pa.array(cols[name], pa.string())
        table = pa.table([arrays[f.name] for f in REQUEST_SCHEMA], schema=REQUEST_SCHEMA)
        return table, latency_ms, ((start - intended) / NS_PER_MS)[scheduled]


def _caught(fn: Callable, *args) -> tuple[bool, object]:
    """`(True, fn(*args))`, or `(False, the exception)`: what the writer thread hands back to the event loop."""
    try:
        return True, fn(*args)
    except BaseException as err:  # noqa: BLE001 - handed back and raised in the caller's greenlet
        return False, err


def _current():
    """The running greenlet under gevent, else the current thread (so `close()` never joins itself)."""
    if _gevent_patched():
        import gevent

        return gevent.getcurrent()
    return threading.current_thread()
