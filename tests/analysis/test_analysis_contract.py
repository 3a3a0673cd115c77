"""The run directory contract: schemas as architecture §5 lists them, part names, atomic part writes, events."""
from __future__ import annotations

import json
import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis import contract as c


def test_request_schema_matches_architecture():
    expected = ["run_id", "worker", "client", "seq", "topic", "key", "msg_id", "intended_ns", "start_ns", "end_ns",
                "latency_ms", "service_ms", "phase", "outcome", "response_code", "remark", "broker", "queue_id",
                "queue_offset", "attempts"]
    s = c.REQUEST_SCHEMA
    assert s.names == expected
    assert {s.field(n).type for n in ("intended_ns", "start_ns", "end_ns", "queue_offset")} == {pa.int64()}
    assert s.field("latency_ms").type == s.field("service_ms").type == pa.float64()
    assert s.field("response_code").type == pa.int32() and s.field("response_code").nullable
    assert s.field("queue_id").type == s.field("attempts").type == pa.int32()
    assert s.field("outcome").type == s.field("remark").type == pa.string()


def test_metrics_and_readback_schemas_match_architecture():
    assert c.METRICS_SCHEMA.names == ["run_id", "node", "ts_ns", "cpu_percent", "rss_bytes", "swap_bytes",
                                      "read_bytes_per_s", "write_bytes_per_s", "put_tps", "commitlog_max_offset",
                                      "slave_fallbehind_bytes", "send_queue_size", "page_cache_lock_ms"]
    assert c.READBACK_SCHEMA.names == ["run_id", "node", "broker", "topic", "queue_id", "queue_offset",
                                       "commitlog_offset", "key", "msg_id", "store_ts_ms", "body_size"]
    assert c.METRICS_SCHEMA.field("ts_ns").type == pa.int64()
    assert c.READBACK_SCHEMA.field("queue_offset").type == pa.int64()


def test_outcome_classes_are_jepsens():
    assert {o for o, k in c.OUTCOME_CLASS.items() if k == c.OK} == {
        "SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}
    assert c.outcome_class("MQBrokerException") == c.FAIL
    assert c.outcome_class("RemotingTooMuchRequestException") == c.INFO
    assert c.outcome_class("SomethingNew") == c.INFO  # unknown words are indeterminate


def _row(seq: int, **extra):
    return {"run_id": "r", "worker": "w1", "seq": seq, "key": f"r:w1:{seq}", "start_ns": 1, "end_ns": 2,
            "outcome": "SEND_OK", **extra}


def test_part_paths_are_unique_and_continue_after_existing(tmp_path):
    (tmp_path / "part-w1-000007.parquet").write_bytes(b"x")
    paths = [c.new_part_path(tmp_path, "w1") for _ in range(3)]
    assert [p.name for p in paths] == ["part-w1-000008.parquet", "part-w1-000009.parquet", "part-w1-000010.parquet"]
    assert c.new_part_path(tmp_path, "w2").name == "part-w2-000000.parquet"
    with pytest.raises(ValueError, match="worker name"):
        c.new_part_path(tmp_path, "bad/name")


def test_concurrent_writers_never_share_a_part_name(tmp_path):
    written = []

    def write(n):
        written.append(c.write_part([_row(n)], tmp_path, "w1", c.REQUEST_SCHEMA))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({p.name for p in written}) == 20
    assert sorted(pq.read_table(tmp_path).column("seq").to_pylist()) == list(range(20))


def test_write_part_round_trips_with_the_schema(tmp_path):
    path = c.write_part([_row(1, response_code=11, latency_ms=1.5)], tmp_path, "w1", c.REQUEST_SCHEMA)
    table = pq.read_table(path)
    assert table.schema.equals(c.REQUEST_SCHEMA)
    assert table.column("response_code").to_pylist() == [11]
    assert table.column("phase").to_pylist() == [None]


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(c.parts.pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        c.write_part([_row(1)], tmp_path, "w1", c.REQUEST_SCHEMA)
    assert os.listdir(tmp_path) == []


def test_bad_rows_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="'key' must not be null"):
        c.write_part([_row(1, key=None)], tmp_path, "w1", c.REQUEST_SCHEMA)
    with pytest.raises(ValueError, match="not in the schema"):
        c.write_part([_row(1, colour="red")], tmp_path, "w1", c.REQUEST_SCHEMA)
    assert os.listdir(tmp_path) == []


def test_part_writer_flushes_in_batches_and_on_close(tmp_path):
    with c.PartWriter(tmp_path, "w3", c.REQUEST_SCHEMA, batch_rows=4) as w:
        for n in range(10):
            w.add(_row(n))
        assert len(w.parts) == 2
    assert len(w.parts) == 3
    assert pq.read_table(tmp_path).num_rows == 10


def test_events_are_lines_with_both_clocks(tmp_path):
    path = tmp_path / "events.jsonl"
    c.append_event(path, c.make_event("phase_start", phase="healthy", index=0))
    c.append_event(path, c.make_event("run_end", status="completed"))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["event"] for x in lines] == ["phase_start", "run_end"]
    assert all(isinstance(x["wall_ns"], int) and isinstance(x["mono_ns"], int) for x in lines)
    with pytest.raises(ValueError, match="unknown event"):
        c.make_event("phase_begin")
