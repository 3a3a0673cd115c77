"""The JVM aggregates (analysis/jvm) against the Spark SQL expressions they replace: the jar builds with the JDK,
the shared session has the functions, and per second and per phase both give the same figures for any data
(ties, nulls, NaN, groups far larger than the aggregates' first buffers), checked further against sorted lists."""
from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.spark

SCHEMA = "run_id string, phase string, sec long, latency_ms double, service_ms double"


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def both_ways(spark, rows):
    from analysis import stats

    df = spark.createDataFrame(rows, SCHEMA)
    second = {}
    phase = {}
    for jvm in (True, False):
        second[jvm] = {(r["run_id"], r["sec"]): r.asDict() for r in stats.per_second(df, jvm).collect()}
        phase[jvm] = {(r["run_id"], r["basis"], r["level"], r["phase"]): r.asDict()
                      for r in stats.latency_percentiles(df, jvm).collect()}
    return second, phase


def same(a, b):
    """Equal dicts of rows, NaN equal to NaN."""
    assert a.keys() == b.keys()
    for k in a:
        for col, x in a[k].items():
            y = b[k][col]
            assert x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)), \
                (k, col, x, y)


def test_the_jar_builds_and_the_session_has_the_functions(spark):
    from analysis import jvm

    jar = jvm.build()
    assert jar is not None and jar.is_file() and jar.name.endswith(".jar")
    assert jvm.ready(spark)
    assert {f.name for f in spark.catalog.listFunctions() if f.name.startswith("rmq_")} >= {
        jvm.SECOND_RANKS, jvm.MICROS_HISTOGRAM, jvm.HISTOGRAM_RANKS}


latency = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.25, 2.0, 3000.0]),
                    st.floats(min_value=0.0, max_value=1e5, allow_nan=False))


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["r1", "r2"]), st.sampled_from(["healthy", "readonly", None]),
                          st.integers(min_value=-1, max_value=3), latency, latency), min_size=1, max_size=300))
def test_jvm_and_sql_agree_for_any_data(spark, rows):
    second, phase = both_ways(spark, rows)
    same(second[True], second[False])
    same(phase[True], phase[False])


def test_large_groups_with_ties_nulls_and_nan_match_sorted_lists(spark):
    """Seconds of 20k values (past the quickselect's small-range cut and many buffer doublings), half of them ties,
    some nulls; one second also has NaN, which ranks above every number as in Spark's ordering."""
    rnd = random.Random(7)
    rows = []
    for sec in range(3):
        for _ in range(20_000):
            v = rnd.choice([None, round(rnd.uniform(0, 50), 1), rnd.expovariate(0.2)])
            rows.append(("r", "healthy" if sec < 2 else "readonly", sec, v, None if v is None else v / 2))
    rows += [("r", "readonly", 2, math.nan, 1.0)] * 50
    second, phase = both_ways(spark, rows)
    same(second[True], second[False])
    for sec in range(2):  # the seconds without NaN, against a plain sort
        got = second[True][("r", sec)]
        values = [r[3] for r in rows if r[2] == sec and r[3] is not None]
        assert got["sends"] == 20_000 and got["intended_max"] == max(values)
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
            assert got[f"intended_{name}"] == nearest_rank(values, q)
    assert math.isnan(second[True][("r", 2)]["intended_max"])
    no_nan = [r for r in rows if not (r[3] is not None and math.isnan(r[3]))]
    _, phase = both_ways(spark, no_nan)
    same(phase[True], phase[False])
    whole = phase[True][("r", "actual", 1, None)]
    values = [int(round(r[4] * 1e6)) // 1000 / 1000 for r in no_nan if r[4] is not None]
    assert whole["p99"] == nearest_rank(values, 0.99) and whole["p50"] == nearest_rank(values, 0.5)


def test_a_dropped_function_is_registered_again_from_the_class_path(spark):
    from analysis import jvm

    spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS {jvm.SECOND_RANKS}")
    assert not spark.catalog.functionExists(jvm.SECOND_RANKS)
    assert jvm.ready(spark) and spark.catalog.functionExists(jvm.SECOND_RANKS)


def test_without_the_aggregates_sql_computes_and_demanding_them_is_an_error(spark, monkeypatch):
    from analysis import jvm, stats

    monkeypatch.setattr(jvm, "ready", lambda session: False)
    df = spark.createDataFrame([("r", "p", 0, 1.0, 2.0), ("r", "p", 0, 3.0, 4.0)], SCHEMA)
    row = stats.per_second(df).first()
    assert (row["sends"], row["intended_p50"], row["actual_max"]) == (2, 1.0, 4.0)
    with pytest.raises(RuntimeError, match="no JVM aggregates"):
        stats.latency_percentiles(df, True)


def test_a_phase_of_many_distinct_microseconds(spark):
    """150k distinct microseconds, each twice, in one phase and one partition, in a scrambled order: the small
    table fills, the rest goes through batches sorted and merged into the run (the first before the second half of
    the values, so merges add counts to microseconds already in the run). Both ways agree, and the ranks are the
    known ones (intended: i µs twice for i = 1..150000; actual: j µs for j = 1..300000)."""
    from pyspark.sql import functions as F

    from analysis import stats

    n = 150_000
    df = spark.range(1, 2 * n + 1, numPartitions=1).select(
        F.lit("r").alias("run_id"), F.lit("long").alias("phase"), (F.col("id") % 7).alias("sec"),
        (((F.col("id") * 7919) % n + 1) / F.lit(1000.0)).alias("latency_ms"),
        (F.col("id") / 1000.0).alias("service_ms"))
    rows = {jvm: {(r["basis"], r["level"]): r.asDict() for r in stats.latency_percentiles(df, jvm).collect()}
            for jvm in (True, False)}
    same(rows[True], rows[False])
    got = rows[True][("intended", stats.LEVEL_PHASE)]
    assert (got["p50"], got["p99"], got["p999"]) == (75.0, 148.5, 149.85)
    got = rows[True][("actual", stats.LEVEL_PHASE)]
    assert (got["p50"], got["p99"], got["p999"]) == (150.0, 297.0, 299.7)


def test_wide_latencies_over_many_partitions(spark):
    """A real run's spread (12 ms to 140 s) of distinct microseconds in one phase, over 16 partitions: sixteen
    partial histograms merged (issue 28). Same figures as the SQL expressions. Its time, at a million, is in benchmarks/analysis_real_shapes.py
    (--wide)."""
    from pyspark.sql import functions as F

    from analysis import stats

    n = 200_000
    spread = F.exp(F.lit(math.log(12.0)) + (F.col("id") * 7919 % n) / F.lit(n) * F.lit(math.log(140_000 / 12)))
    df = spark.range(n, numPartitions=16).select(
        F.lit("r").alias("run_id"), F.lit("wide").alias("phase"), F.lit(0).alias("sec"),
        spread.alias("latency_ms"), (spread / 2).alias("service_ms"))
    got = {(r["basis"], r["level"], r["phase"]): r.asDict() for r in stats.latency_percentiles(df, True).collect()}
    want = {(r["basis"], r["level"], r["phase"]): r.asDict() for r in stats.latency_percentiles(df, False).collect()}
    same(got, want)


CONSUME_SCHEMA = "run_id string, group string, phase string, ok long, slave long, born_us long, stored_us long"
micros = st.one_of(st.none(), st.sampled_from([0, 1, 1500, -2000]), st.integers(min_value=-10**6, max_value=10**9))


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["r1", "r2"]), st.sampled_from(["app", "audit"]),
                          st.sampled_from(["healthy", "frozen", None]), st.integers(0, 1), st.integers(0, 1),
                          micros, micros), min_size=1, max_size=200))
def test_the_consumers_per_phase_rows_agree_for_any_data(spark, rows):
    """`consume_stats.per_phase`: every level's counts, percentiles and max the same both ways (latencies of whole
    microseconds, negative ones from a skewed clock, nulls)."""
    from analysis import consume_stats

    df = spark.createDataFrame(rows, CONSUME_SCHEMA)
    key = ("run_id", "level", "group", "phase", "basis")
    got = {jvm: {tuple(r[k] for k in key): r.asDict() for r in consume_stats.per_phase(df, jvm).collect()}
           for jvm in (True, False)}
    same(got[True], got[False])


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["r1", "r2"]), st.sampled_from(["app", "audit"]), st.integers(0, 3),
                          st.integers(0, 1), st.integers(0, 1), micros, micros), min_size=1, max_size=200))
def test_the_consumers_per_second_rows_agree_for_any_data(spark, rows):
    """`consume_stats.per_second`: counts and p50/p99 the same by the JVM aggregate (exact nearest rank) and by
    `percentile_approx` (exact while a second has at most PERCENTILE_ACCURACY deliveries), nulls included."""
    from analysis import consume_stats

    df = spark.createDataFrame(rows, "run_id string, group string, sec long, ok long, slave long, born_us long, "
                                     "stored_us long")
    key = ("run_id", "group", "sec")
    got = {jvm: {tuple(r[k] for k in key): r.asDict() for r in consume_stats.per_second(df, jvm).collect()}
           for jvm in (True, False)}
    same(got[True], got[False])


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["app", "audit"]), st.sampled_from(["app.c0", "app.c0.r1"]),
                          st.integers(0, 2), st.integers(0, 6), st.integers(0, 9), st.sampled_from([0, 0, 1]),
                          st.sampled_from(["t", "%RETRY%app"])), min_size=1, max_size=300))
def test_the_consumers_reorders_agree_for_any_data(spark, rows):
    """`consume_stats.reordered`: the JVM aggregate (sorting each process's queue as primitive pairs) counts the same
    as the window, with ties in time and in offset, redeliveries and retry topics left out, and a Python walk of
    the sorted rows agrees."""
    from analysis import consume_stats

    full = [("r", g, w, "b", q, off, t, rc, topic) for g, w, q, t, off, rc, topic in rows]
    df = spark.createDataFrame(full, "run_id string, group string, worker string, broker string, queue_id int, "
                                     "queue_offset long, delivered_ns long, reconsume_times int, pulled_topic string")
    got = {jvm: consume_stats.reordered(df, jvm) for jvm in (True, False)}
    want: dict = {}
    queues: dict = {}
    for r in full:
        if r[7] == 0 and not r[8].startswith("%RETRY%"):
            queues.setdefault(r[:5], []).append((r[6], r[5]))
    for q, pairs in queues.items():
        highest = None
        for _, off in sorted(pairs):
            if highest is not None and off < highest:
                want[(q[0], q[1])] = want.get((q[0], q[1]), 0) + 1
            highest = off if highest is None else max(highest, off)
        want.setdefault((q[0], q[1]), 0)
    assert got[True] == got[False] == want


def test_a_long_queue_over_many_partitions_reorders_the_same(spark):
    """One queue of 20k deliveries (many buffer doublings, partial buffers merged from 16 partitions, runs of
    sorted and shuffled pairs for the merge sort): the aggregate and the window count the same."""
    from analysis import consume_stats

    rnd = random.Random(5)
    rows = [("r", "app", "app.c0", "b", 0, n + (rnd.randrange(-50, 50) if rnd.random() < 0.3 else 0), n // 2, 0, "t")
            for n in range(20_000)]
    rnd.shuffle(rows)
    df = spark.createDataFrame(rows, "run_id string, group string, worker string, broker string, queue_id int, "
                                     "queue_offset long, delivered_ns long, reconsume_times int, "
                                     "pulled_topic string").repartition(16)
    jvm_count, sql_count = (consume_stats.reordered(df, jvm) for jvm in (True, False))
    assert jvm_count == sql_count and jvm_count[("r", "app")] > 1000
