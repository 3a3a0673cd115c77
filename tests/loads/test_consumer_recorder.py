"""`ConsumeRecorder` in one process: journal first, parts in batches naming their journal ids, `salvage()` writes
exactly the journal rows no part holds (a torn last line skipped, idempotent), `close()` writes rows still in a
listener as ABANDONED, and a compacted journal still salvages exactly the missing rows."""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.contract import CONSUME_SCHEMA
from loads import consume_recorder
from loads.consume_recorder import ConsumeRecorder, covered_ids, journal_path, salvage


def row(offset: int) -> dict:
    now = time.time_ns()
    return {"run_id": "r", "worker": "g.c0", "group": "g", "consumer": "c", "topic": "T", "key": f"r:w0:{offset}",
            "msg_id": f"U{offset}", "broker": "b", "broker_id": 0, "pulled_topic": "T", "queue_id": 0,
            "queue_offset": offset, "born_ms": now // 10**6, "store_ms": now // 10**6, "pulled_ns": now,
            "delivered_ns": now, "done_ns": None, "result": "ABANDONED", "reconsume_times": 0, "body_size": 3}


def offsets(run_dir) -> list[tuple[int, str]]:
    parts = sorted((run_dir / "consumes").glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(p, schema=CONSUME_SCHEMA) for p in parts])
    return sorted(zip(table.column("queue_offset").to_pylist(), table.column("result").to_pylist(), strict=True))


def test_salvage_writes_exactly_the_rows_no_part_holds(tmp_path):
    rec = ConsumeRecorder(tmp_path, "g.c0")
    a = rec.delivered([row(0)])
    b = rec.delivered([row(1), row(2)])
    rec.done(a, time.time_ns(), "CONSUME_SUCCESS")
    assert rec.flush() is not None and covered_ids(tmp_path / "consumes", "g.c0") == {0}
    rec.done(b, time.time_ns(), "RECONSUME_LATER")
    c = rec.delivered([row(3)])
    with open(journal_path(tmp_path, "g.c0"), "ab") as f:
        f.write(b'{"d": 9, "rows": [{"run_')  # the process died in the middle of a write
    # the process "dies" here: nothing more is flushed
    assert salvage(tmp_path, "g.c0") == 3
    assert salvage(tmp_path, "g.c0") == 0
    assert offsets(tmp_path) == [(0, "CONSUME_SUCCESS"), (1, "RECONSUME_LATER"), (2, "RECONSUME_LATER"),
                                 (3, "ABANDONED")]
    assert c == [3]


def test_close_abandons_open_rows_and_ignores_late_results(tmp_path):
    rec = ConsumeRecorder(tmp_path, "g.c0", interval_s=0.05)
    rec.start()
    ids = rec.delivered([row(0)])
    done = rec.delivered([row(1)])
    rec.done(done, time.time_ns(), "CONSUME_SUCCESS")
    assert rec.close() == 2 and rec.abandoned == 1
    rec.done(ids, time.time_ns(), "CONSUME_SUCCESS")  # the listener returned after the stop: not recorded again
    assert rec.delivered([row(2)]) is None
    assert offsets(tmp_path) == [(0, "ABANDONED"), (1, "CONSUME_SUCCESS")]
    assert salvage(tmp_path, "g.c0") == 0


def test_compacted_journal_keeps_only_rows_not_in_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(consume_recorder, "JOURNAL_COMPACT_BYTES", 1)
    rec = ConsumeRecorder(tmp_path, "g.c0")
    stuck = rec.delivered([row(0)])
    for i in range(1, 50):
        rec.done(rec.delivered([row(i)]), time.time_ns(), "CONSUME_SUCCESS")
    rec.flush()
    late = rec.delivered([row(50)])
    rec.done(late, time.time_ns(), "CONSUME_SUCCESS")
    lines = journal_path(tmp_path, "g.c0").read_bytes().splitlines()
    assert len(lines) == 3 and os.path.getsize(journal_path(tmp_path, "g.c0")) < 2000
    assert salvage(tmp_path, "g.c0") == 2
    got = offsets(tmp_path)
    assert [o for o, _ in got] == list(range(51)) and got[0] == (0, "ABANDONED") and stuck == [0]
