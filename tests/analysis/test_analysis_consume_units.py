"""No-Spark units of the consumer analysis: the [PAGECACHERT] parser on real 4.9.1 lines and junk, the offset
stall of a crafted lag series, and the consumer expectations' one-line validation errors."""
from __future__ import annotations

import pytest

from analysis import pagecache as pc
from analysis.consume_measures import lag_grew, stall_seconds
from analysis.expectations import parse_expectations

REAL_491 = ("2026-11-23 16:11:50 INFO StoreStatsService - [PAGECACHERT] TotalPut 15177, PutMessageDistributeTime "
            "[<=0ms]:0 [0~10ms]:10054 [10~50ms]:4645 [50~100ms]:340 [100~200ms]:65 [200~500ms]:65 [500ms~1s]:0 "
            "[1~2s]:1 [2~3s]:0 [3~4s]:0 [4~5s]:1 [5~10s]:1 [10s~]:5 ")
"""A line of a real 4.9.1 master's store.log (slave-readonly-default, --program apache, 2026-11-23)."""


def test_real_line_parses():
    line = pc.parse_line(REAL_491)
    assert line is not None and line.total == 15177 and sum(line.counts) == 15177
    assert line.counts[1] == 10054 and line.counts[-1] == 5
    assert line.ts_ns == 1_795_450_310 * 1_000_000_000  # 2026-11-23 16:11:50 UTC
    assert pc.quantile_upper_ms(line.counts, 0.99) == 100  # rank 15026 falls in [50~100ms]
    assert pc.fast_share(line.counts) == pytest.approx(10054 / 15177)


REAL_491_MINUTES = [
    "2026-11-24 00:01:56 INFO StoreStatsService - [PAGECACHERT] TotalPut 391975, PutMessageDistributeTime "
    "[<=0ms]:56971 [0~10ms]:325588 [10~50ms]:8916 [50~100ms]:301 [100~200ms]:199 [200~500ms]:0 [500ms~1s]:0 "
    "[1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
    "2026-11-24 00:02:56 INFO StoreStatsService - [PAGECACHERT] TotalPut 619238, PutMessageDistributeTime "
    "[<=0ms]:25269 [0~10ms]:586024 [10~50ms]:7734 [50~100ms]:145 [100~200ms]:66 [200~500ms]:0 [500ms~1s]:0 "
    "[1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
]
"""Two consecutive lines of a real 4.9.1 master (a seed-pair run, 2026-11-24): [<=0ms] falls from one to the next,
so each line counts its own minute (the buckets are swapped at each line), and a window's puts are their sum."""


def test_real_lines_are_per_minute_and_summed():
    a, b = (pc.parse_line(x) for x in REAL_491_MINUTES)
    assert b.ts_ns - a.ts_ns == 60 * 1_000_000_000
    assert a.total == sum(a.counts) and b.total == sum(b.counts) and b.counts[0] < a.counts[0]
    both = pc.sum_counts([a, b])
    assert sum(both) == 391975 + 619238
    assert pc.fast_share(both) == pytest.approx((56971 + 325588 + 25269 + 586024) / (391975 + 619238))
    assert pc.quantile_upper_ms(both, 0.99) == 50  # 98.3 % under 10 ms: the 99th percentile is in [10~50ms]
    assert pc.quantile_upper_ms(both, 0.5) == 10


@pytest.mark.parametrize("junk", [
    REAL_491.replace("[10s~]:5 ", ""),  # a bucket missing
    REAL_491.replace("[0~10ms]", "[0~9ms]"),  # not 4.9.1's bucket text
    REAL_491.replace("TotalPut 15177", "TotalPut x"),
    REAL_491.replace("2026-11-23 16:11:50", "2026-13-45 99:11:50"),
    REAL_491 + "[0~10ms]:1 " * 400,  # too long
    "\x00[PAGECACHERT]\xff",
])
def test_junk_is_skipped(junk):
    assert pc.parse_line(junk) is None


def test_store_log_reader_counts_skipped_and_caps(tmp_path, monkeypatch):
    node = tmp_path / "logs" / "master" / "rocketmqlogs"
    node.mkdir(parents=True)
    (node / "store.log").write_bytes(b"\xff\xfe binary\n" + REAL_491.encode() + b"\n[PAGECACHERT] half\n")
    (tmp_path / "logs" / "slave").mkdir()
    logs = pc.read_run_logs(tmp_path / "logs")
    assert [(g.node, len(g.lines), g.skipped, g.truncated) for g in logs] == [("master", 1, 1, False)]
    monkeypatch.setattr(pc, "MAX_LOG_BYTES", 100)
    capped = pc.read_run_logs(tmp_path / "logs")[0]
    assert capped.truncated and not capped.lines


def test_a_gmt8_store_log_is_shifted_to_utc(tmp_path):
    """The real 4.9.1 writes store.log in GMT+8 (conf/logback_broker.xml): C2's backlog run on the real 4.9.1 had
    cluster_up at 00:21:40 UTC and a store.log starting 08:21:38."""
    node = tmp_path / "logs" / "master" / "rocketmqlogs"
    node.mkdir(parents=True)
    first = "2026-11-24 08:21:38 INFO AllocateMappedFileService - AllocateMappedFileService service started"
    line = REAL_491_MINUTES[0].replace("2026-11-24 00:01:56", "2026-11-24 08:22:38")
    (node / "store.log").write_text(f"{first}\n{line}\n")
    cluster_up = 1_795_479_700_917_162_590  # 2026-11-24 00:21:40.9 UTC
    (log,) = pc.read_run_logs(tmp_path / "logs", cluster_up)
    assert log.zone_offset_ns == 8 * 3600 * 1_000_000_000
    assert log.lines[0].ts_ns == 1_795_479_758 * 1_000_000_000  # 00:22:38 UTC
    (same,) = pc.read_run_logs(tmp_path / "logs", None)  # no reference: read as UTC
    assert same.zone_offset_ns == 0 and same.lines[0].ts_ns == log.lines[0].ts_ns + 8 * 3600 * 1_000_000_000


def test_a_line_counts_in_every_phase_its_minute_overlaps():
    line = pc.parse_line(REAL_491)
    t = line.ts_ns
    s = 1_000_000_000
    assert pc.in_window([line], t - 20 * s, t + 40 * s) == [line]  # the minute's last 20 s
    assert pc.in_window([line], t - 90 * s, t - 50 * s) == [line]  # its first 10 s
    assert pc.in_window([line], t, t + 60 * s) == []  # after the line: the next line's minute
    assert pc.in_window([line], t - 120 * s, t - 60 * s) == []  # before its minute


def test_stall_of_a_crafted_series():
    s = 1_000_000_000
    pts = [{"ts_ns": i * s, "committed": c, "lag": lag} for i, (c, lag) in enumerate(
        [(0, 0), (10, 0), (10, 5), (10, 9), (10, 12), (20, 3), (20, 0), (20, 4), (20, 8)])]
    assert stall_seconds(pts) == 2.0  # lag > 0 from second 2 to 4 without an advance; 7-8 is 1 s
    assert stall_seconds([{"ts_ns": 0, "committed": 5, "lag": 0}]) == 0.0


@pytest.mark.parametrize("item, message", [
    ({"metric": "consume_latency_p99_ms", "basis": "intended", "max": 1},
     "basis 'intended' does not apply to metric consume_latency_p99_ms; allowed: born, stored"),
    ({"metric": "latency_p99_ms", "basis": "stored", "max": 1},
     "basis 'stored' does not apply to metric latency_p99_ms; allowed: intended, actual"),
    ({"metric": "consumer_lost", "phase": "x", "max": 0},
     "key 'phase' does not apply to metric consumer_lost; its filters: group"),
    ({"metric": "pagecache_put_p99_ms", "group": "g", "max": 10},
     "key 'group' does not apply to metric pagecache_put_p99_ms; its filters: node, phase"),
    ({"metric": "lag_max", "basis": "born", "max": 10}, "key 'basis' applies only to metrics"),
    ({"metric": "consumer_lag", "max": 10}, "'consumer_lag' is not one of: count"),
])
def test_expectation_errors_are_one_line(item, message):
    with pytest.raises(ValueError) as err:
        parse_expectations([item], source="s.yaml")
    text = str(err.value)
    assert "\n" not in text and text.startswith("s.yaml: expect[0]") and message in text


def test_consume_latency_defaults_to_born():
    (e,) = parse_expectations([{"metric": "consume_latency_p50_ms", "group": "g", "max": 5}])
    assert e.basis == "born" and e.label() == "group=g consume_latency_p50_ms[born] max=5"


def test_lag_grew_only_for_a_stand_or_a_real_backlog():
    s = 1_000_000_000

    def series(pairs):
        return [{"ts_ns": i * s, "committed": c, "lag": lag} for i, (c, lag) in enumerate(pairs)]

    keeping_up = series([(i * 300, (i * 37) % 64) for i in range(60)])  # a healthy group: lag 0-63, offsets move
    stuck = series([(100, 0)] + [(100, 30 * i) for i in range(1, 11)])  # offsets stand 9 s with lag
    slow = series([(i * 100, 50 * i) for i in range(40)])  # offsets move, lag reaches 1950
    assert not lag_grew(keeping_up)
    assert lag_grew(stuck) and lag_grew(slow)


def test_consume_and_lag_parts_are_screened(tmp_path):
    """A cut consume part is skipped and named; a lag part with a wrong column type is refused in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from known_consumer_run import consumer_run

    from analysis.errors import RunDirError
    from analysis.rundir import LAG_PARTS, open_run_dir

    path, _ = consumer_run(tmp_path)
    first = sorted((path / "consumes").glob("part-*.parquet"))[0]
    first.write_bytes(first.read_bytes()[:200])
    run = open_run_dir(path)
    assert len(run.parts["consumes"]) == 1 and run.skipped["consumes"] and len(run.parts[LAG_PARTS]) == 2
    assert any(w.startswith("consumes/part-") and "skipped" in w for w in run.warnings)
    lag = sorted((path / "metrics" / "lag").glob("part-*.parquet"))[0]
    pq.write_table(pa.table({"run_id": ["x"], "group": ["g"], "topic": ["t"], "ts_ns": ["not a number"]}), lag)
    with pytest.raises(RunDirError) as err:
        open_run_dir(path)
    assert "\n" not in str(err.value) and "column 'ts_ns' has type string, the contract says int64" in str(err.value)
