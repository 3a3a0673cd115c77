"""RequestRecorder (plain-thread mode; the gevent mode runs in the end-to-end tests): every added row reaches a
part file of the contract's schema, the background writer writes at least once per interval without being asked,
phases are looked up by intended time, a restarted worker continues its seqs, `on_rows` gets every row once; plus the
progress histogram/tally."""
from __future__ import annotations

import time

import pyarrow.parquet as pq
import pytest
from waiting import poll

from analysis.contract import REQUEST_SCHEMA
from loads.histogram import LogHistogram
from loads.phasebook import PhaseBook
from loads.recorder import RequestRecorder, highest_seq
from loads.tally import Tally

S = 1_000_000_000
T0 = 1_700_000_000 * S


def row(seq: int, intended: int, outcome: str = "SEND_OK", scheduled: bool = True) -> tuple:
    start, end = intended + 1_000_000, intended + 3_000_000
    code = 0 if outcome == "SEND_OK" else None
    return ("flood", seq, f"MSG{seq}", intended, start, end, outcome, code, None, "broker-a", seq % 4, seq, 1,
            scheduled)


def test_every_row_reaches_a_part_with_the_contract_schema(tmp_path):
    phases = PhaseBook("warmup")
    phases.begin("fault", T0 + 5 * S)
    rec = RequestRecorder(tmp_path / "requests", "r", "w0", "T", phases, interval_s=1.0)
    for i in range(10):
        rec.add(row(i, T0 + i * S))
    summary = rec.close()
    assert summary.rows == 10 and summary.outcomes == {"SEND_OK": 10}
    table = pq.read_table(rec.parts[0])
    assert table.schema.equals(REQUEST_SCHEMA, check_metadata=False)
    rows = table.to_pylist()
    assert [r["phase"] for r in rows] == ["warmup"] * 5 + ["fault"] * 5  # by intended time
    assert rows[0]["latency_ms"] == pytest.approx(3.0) and rows[0]["service_ms"] == pytest.approx(2.0)
    assert rows[0]["key"] == "r:w0:0" and rows[0]["run_id"] == "r" and rows[0]["worker"] == "w0"
    assert summary.latency.quantile(0.99) == pytest.approx(3.0, rel=0.012)
    assert summary.lag.quantile(0.5) == pytest.approx(1.0, rel=0.012)


def test_background_writer_writes_without_being_asked_and_keeps_memory_flat(tmp_path):
    batches = []
    rec = RequestRecorder(tmp_path / "requests", "r", "w0", "T", PhaseBook(), interval_s=0.2,
                          on_batch=batches.append)
    rec.start()
    try:
        for round_ in range(3):
            for i in range(100):
                rec.add(row(round_ * 100 + i, T0))
            poll(lambda n=round_: rec.rows_written == (n + 1) * 100, 5, "a background flush")
            assert rec.buffered == 0
    finally:
        rec.close()
    assert len(rec.parts) >= 3
    assert sum(b.rows for b in batches) == 300
    assert highest_seq(tmp_path / "requests", "w0") == 299
    assert highest_seq(tmp_path / "requests", "w1") == -1


def test_recent_rows_wait_for_a_phase_change_still_on_its_way(tmp_path):
    phases = PhaseBook("before")
    rec = RequestRecorder(tmp_path / "requests", "r", "w0", "T", phases, interval_s=1.0)
    now = time.time_ns()
    rec.add(row(0, now - 5 * S))  # long ago: written at the next flush
    rec.add(row(1, now))  # just now: held back one batch
    assert rec.flush().rows == 1 and rec.buffered == 1
    phases.begin("after", now - 1_000_000)  # the harness had changed phase 1 ms before row 1 was intended
    rec.close()
    rows = sorted((r for p in rec.parts for r in pq.read_table(p).to_pylist()), key=lambda r: r["seq"])
    assert [(r["seq"], r["phase"]) for r in rows] == [(0, "before"), (1, "after")]


def test_failed_write_keeps_the_rows_for_the_next_batch(tmp_path):
    target = tmp_path / "requests"
    rec = RequestRecorder(target, "r", "w0", "T", PhaseBook(), interval_s=1.0)
    rec.add(row(0, T0))
    target.rmdir()
    target.write_text("not a directory")  # the next write fails (even as root)
    with pytest.raises(OSError):
        rec.flush()
    assert rec.buffered == 1 and rec.rows_written == 0
    target.unlink()
    target.mkdir()
    rec.add(row(1, T0))
    rec.close()
    assert rec.rows_written == 2
    assert sorted(pq.read_table(rec.parts[0]).column("seq").to_pylist()) == [0, 1]


def test_on_rows_gets_every_row_once_held_back_or_not_written(tmp_path):
    target = tmp_path / "requests"
    given: list[int] = []
    applied: list[int] = []

    def on_rows(rows):
        seqs = [r[1] for r in rows]
        given.extend(seqs)
        return lambda: applied.extend(seqs)

    rec = RequestRecorder(target, "r", "w0", "T", PhaseBook(), interval_s=1.0, on_rows=on_rows)
    now = time.time_ns()
    rec.add(row(0, now - 5 * S))
    rec.add(row(1, now))  # held back one batch
    assert rec.flush().rows == 1 and given == [0, 1]
    target.rename(tmp_path / "kept")
    target.write_text("not a directory")  # the next write fails
    rec.add(row(2, now - 5 * S))
    with pytest.raises(OSError):
        rec.flush()
    assert given == [0, 1, 2] and rec.buffered == 2
    target.unlink()
    (tmp_path / "kept").rename(target)
    rec.add(row(3, now - 5 * S))
    rec.close()
    assert given == [0, 1, 2, 3] and applied == given
    assert rec.rows_written == 4


def test_a_failing_on_rows_loses_no_row(tmp_path):
    def on_rows(rows):
        raise ValueError("a bug in a statistics feed")

    rec = RequestRecorder(tmp_path / "requests", "r", "w0", "T", PhaseBook(), interval_s=1.0, on_rows=on_rows)
    rec.add(row(0, T0))
    rec.close()
    assert rec.rows_written == 1


def test_histogram_quantiles_are_upper_bounds_within_bucket_width():
    values = [0.1 * i for i in range(1, 10_001)]  # 0.1 .. 1000 ms
    h = LogHistogram.of(values)
    for q in (0.5, 0.9, 0.99, 0.999):
        exact = values[int(q * len(values)) - 1]
        assert exact <= h.quantile(q) <= exact * 1.012
    merged = LogHistogram.from_json(h.to_json()).merge(LogHistogram.of([5000.0]))
    assert merged.total == 10_001 and merged.max_ms == 5000.0
    assert LogHistogram().quantile(0.99) is None


def test_tally_rate_and_window():
    tally = Tally(window_s=5)
    now = time.time_ns()
    from loads.tally import BatchSummary

    for k in range(10):  # 10 batches of 1 s, 100 rows each, from two workers
        for w in ("w0", "w1"):
            t = now - (9 - k) * S
            tally.add(BatchSummary(w, t - S, t, 100, {"SEND_OK": 90, "MQBrokerException": 10},
                                   LogHistogram.of([float(k)] * 100), LogHistogram(), fired=100 * (k + 1)))
    snap = tally.snapshot(now_ns=now)
    assert snap.completed == 2000 and snap.outcomes == {"SEND_OK": 1800, "MQBrokerException": 200}
    assert snap.rate == pytest.approx(200.0)  # the last 5 s only
    assert snap.p99_ms == pytest.approx(9.0, rel=0.012)  # older batches fell out of the window
    assert snap.fired == 2000 and snap.workers == 2
