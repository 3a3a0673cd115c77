"""Statistics of the known-answer runs, computed by the real job on Spark: percentiles (nearest rank), counts,
per-second series, outcome/remark counts, node metrics. Answers are known by construction or recomputed from the
part files with plain Python (an independent oracle)."""
from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from known_runs import transition_of

pytestmark = pytest.mark.spark

QS = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999, "max": 1.0}


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def rows_of(path):
    return pq.read_table(path / "requests").to_pylist()


def phase(res, name):
    """The phase's own row (its transition slices are rows of their own)."""
    return next(p for p in res.per_phase if p["phase"] == name and p["transition"] is None)


def test_healthy_phase_percentiles_are_exact(analysed):
    res = analysed.result("ro-run")
    nums = analysed.answers["ro-run"].numbers
    healthy = phase(res, "healthy")
    assert {q: healthy[f"intended_{q}"] for q in QS} == nums["healthy_intended"]
    assert {q: healthy[f"actual_{q}"] for q in QS} == nums["healthy_actual"]
    assert healthy["sends"] == 1000 and healthy["seconds"] == 10.0 and healthy["rate"] == 100.0


@pytest.mark.parametrize("run_id", ["ro-run", "clean-run"])
def test_every_phase_matches_a_sorted_list(analysed, run_id):
    """Every slice (a phase's own sends, each transition of a fault in it) and the whole run, against its rows."""
    res = analysed.result(run_id)
    rows = rows_of(analysed.paths[run_id])
    answers = analysed.answers[run_id]
    assert sum(p["sends"] for p in res.per_phase if not p["whole_run"]) == len(rows)
    for p in res.per_phase:
        mine = rows if p["whole_run"] else [r for r in rows if r["phase"] == p["phase"]
                                            and transition_of(answers, r["start_ns"]) == p["transition"]]
        assert p["sends"] == len(mine)
        for q, frac in QS.items():
            assert p[f"intended_{q}"] == nearest_rank([r["latency_ms"] for r in mine], frac), (p["phase"], q)
            assert p[f"actual_{q}"] == nearest_rank([r["service_ms"] for r in mine], frac), (p["phase"], q)
        assert p["send_ok"] == sum(r["outcome"] == "SEND_OK" for r in mine)


def test_phase_class_counts(analysed):
    """The readonly phase's own sends are those started while `ro` was in effect (10.5 to 19.5 s: 9 s); the 50 sends
    of its apply and the 50 of its revert are slices of their own; the whole run holds all."""
    res = analysed.result("ro-run")
    ro = phase(res, "readonly")
    assert (ro["sends"], ro["ok"], ro["fail"], ro["info"]) == (910, 455, 150, 305)
    assert ro["seconds"] == pytest.approx(9.0) and ro["rate"] == pytest.approx(910 / 9)
    slices = [(p["slice"], p["sends"], p["send_ok"], p["fail"], p["seconds"]) for p in res.per_phase
              if p["transition"] is not None]
    assert slices == [("readonly (transition: ro apply)", 50, 50, 0, 0.5),
                      ("readonly (transition: ro revert)", 50, 0, 50, 0.5)]
    assert [p["slice"] for p in res.per_phase] == ["healthy", "readonly", "readonly (transition: ro apply)",
                                                  "readonly (transition: ro revert)", "recovery", "(whole run)"]
    whole = phase(res, "(whole run)")
    assert whole["sends"] == 3010 and whole["seconds"] == 30.0


def test_per_second_series(analysed):
    ps = {r["sec"]: r for r in analysed.result("ro-run").per_second.to_pylist()}
    for s in range(10):  # healthy: second s holds latencies 100s+1 .. 100s+100
        assert ps[s]["sends"] == 100
        assert (ps[s]["intended_p50"], ps[s]["intended_p90"], ps[s]["intended_p99"], ps[s]["intended_p999"],
                ps[s]["intended_max"]) == (100 * s + 50, 100 * s + 90, 100 * s + 99, 100 * s + 100, 100 * s + 100)
    assert ps[12]["sends"] == 101 and ps[12]["send_ok"] == 0 and ps[12]["info"] == 101
    assert ps[-1]["intended"] == 1 and ps[-1]["sends"] == 0  # the first send was meant 0.5 ms before t0
    assert sum(r["sends"] for r in ps.values()) == 3010
    assert sum(r["intended"] for r in ps.values()) == 3010


def test_outcomes_per_second(analysed):
    out = {(r["sec"], r["outcome"]): r["sends"] for r in analysed.result("ro-run").outcomes_per_second.to_pylist()}
    assert out[(12, "RemotingTooMuchRequestException")] == 101
    assert out[(15, "SLAVE_NOT_AVAILABLE")] == 102  # 100 flood + the probe's sends at 15.0 s and 15.5 s
    assert out[(18, "MQBrokerException")] == 100
    assert (12, "SEND_OK") not in out


def test_outcome_and_remark_counts(analysed):
    counts = analysed.result("ro-run").outcome_counts.to_pylist()
    busy = [r for r in counts if r["outcome"] == "MQBrokerException"]
    # one remark pattern although the numbers vary: a row per slice (the last 50 started in the revert of `ro`)
    assert [(r["phase"], r["transition"], r["sends"]) for r in busy] == [("readonly", None, 150),
                                                                         ("readonly", "ro revert", 50)]
    for row in busy:
        assert row["response_code"] == 2 and row["cls"] == "fail"
        assert row["remark_pattern"] == ("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                                         "period in queue: Nms, size of queue: N")
    probe = [r for r in counts if r["client"] == "probe" and r["outcome"] == "RemotingTooMuchRequestException"]
    assert probe[0]["sends"] == 5 and probe[0]["remark_pattern"] == "sendDefaultImpl call timeout"


def test_node_metrics_per_second(analysed):
    m = {(r["node"], r["sec"]): r for r in analysed.result("ro-run").metrics_per_second.to_pylist()}
    assert m[("slave", 15)]["swap_bytes"] == 6 << 20
    assert m[("slave", 15)]["write_bytes_per_s"] == 0.0 and m[("slave", 5)]["write_bytes_per_s"] == 50e6
    assert m[("master", 15)]["slave_fallbehind_bytes"] == 100_000
    assert m[("slave", 15)]["put_tps"] is None  # broker figures stay null when absent
    assert len(m) == 70


def test_aggregates_are_written_beside_the_page(analysed):
    report = analysed.paths["ro-run"] / "report"
    for name in ("per_second", "outcomes_per_second", "outcome_counts", "metrics_per_second", "per_phase"):
        assert pq.read_table(report / f"{name}.parquet").num_rows > 0
    per_sec = pq.read_table(report / "per_second.parquet")
    assert per_sec.num_rows == analysed.result("ro-run").per_second.num_rows
    assert (report / "summary.json").stat().st_size < 100_000


def test_percentiles_rank_whole_microseconds(spark):
    """Nearest rank over latencies truncated to whole microseconds; the maximum stays exact."""
    from pyspark.sql import functions as F

    from analysis.stats import latency_counts, nearest_rank

    values = [1.0004999, 1.0005, 1.0009999, 2.0, 2.000001, 7.25, 7.2500004, 9.9999996, 10.0, 12.3456789]
    df = spark.createDataFrame([("r", "p", v, v) for v in values],
                               "run_id string, phase string, latency_ms double, service_ms double")
    row = nearest_rank(latency_counts(df, "intended"), ["run_id"], "x").first()
    truncated = sorted(int(round(v * 1e6)) // 1000 / 1000 for v in values)
    assert (row["x_p50"], row["x_p90"], row["x_p99"]) == (truncated[4], truncated[8], truncated[9])
    assert row["x_p50"] == 2.0 and row["x_p90"] == 10.0 and row["x_p99"] == 12.345
    assert df.agg(F.max("latency_ms")).first()[0] == 12.3456789


def test_time_zero_by_map_and_by_join_agree(spark):
    """Up to 64 runs the run's t0 is a literal map lookup, above a broadcast join: same rows, same t0."""
    from analysis.frames import MAP_LOOKUP_RUNS, with_t0

    rows = [(f"run{i}", i * 10) for i in range(MAP_LOOKUP_RUNS + 6)] + [("stranger", 5)]
    df = spark.createDataFrame(rows, "run_id string, start_ns long")
    many = {f"run{i}": 1000 + i for i in range(MAP_LOOKUP_RUNS + 6)}
    few = dict(list(many.items())[:3])
    for t0 in (many, few):
        got = {r["run_id"]: r["t0_ns"] for r in with_t0(df, t0).collect()}
        assert got == t0  # the stranger's rows are dropped
    assert with_t0(df, {}).count() == 0


@settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=0, max_value=5_000_000)),
                min_size=1, max_size=400))
def test_nearest_rank_matches_a_sorted_list_for_any_data(spark, rows):
    """Random groups of whole-microsecond latencies: the Spark nearest rank equals rank ceil(p*n) of a sort."""
    from analysis import stats

    df = spark.createDataFrame([("r", g, us / 1000.0, us / 1000.0) for g, us in rows],
                               "run_id string, phase string, latency_ms double, service_ms double")
    counts = stats.latency_counts(df, "actual")
    got = {r["phase"]: r for r in stats.nearest_rank(counts, ["run_id", "phase"], "x").collect()}
    for g in {g for g, _ in rows}:
        values = [us / 1000.0 for gg, us in rows if gg == g]
        for q, name in zip(stats.QUANTILES, stats.QUANTILE_NAMES, strict=True):
            assert got[g][f"x_{name}"] == nearest_rank(values, q)
