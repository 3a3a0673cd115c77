"""The consumer side of the analysis (issue 12) through the real job on the shared Spark session: a dropped delivery
is consumer_lost 1, a redelivery a duplicate, lag max/end and the offset stall of a crafted series, the
[PAGECACHERT] table and sentence; a run without consumes analyzes as before with its consumer metrics unknown."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from known_consumer_run import consumer_run
from known_runs import clean_run

from analysis.consumer_rules import KEPT_UP
from analysis.job import analyze


@pytest.fixture(scope="module")
def consumed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("consume")
    path, answers = consumer_run(root)
    plain, _ = clean_run(root, "no-consumer", expect=[{"name": "c", "metric": "consume_count", "min": 1},
                                                      {"name": "l", "metric": "lag_max", "max": 1}])
    broker_only, _ = clean_run(root, "pagecache-only", pagecache=True)
    job = analyze([path, plain, broker_only], spark=spark, progress=False)
    return {r.run.run_id: r for r in job.results}, answers, path, plain, job.compare_dir, broker_only


def _measured(res, name):
    return next(x for x in res.verdict.results if x.expectation.label() == name)


def test_consumer_metrics_on_a_crafted_run(consumed):
    results, answers, path, _, compare, _ = consumed
    res = results["consume-run"]
    want = answers.numbers
    m = {x.expectation.label(): x for x in res.verdict.results}
    assert m["fast-lost"].measured == 1 and want["fast_lost"][0] in (m["fast-lost"].note or "")
    assert m["fast-lost"].status == "failed"
    assert m["slow-lost"].measured == 0
    assert m["fast-dups"].measured == want["fast_dup"] and "1 after a consumer restart" in m["fast-dups"].note
    assert m["slow-reordered"].measured == want["slow_reordered"]
    assert m["fast-count"].measured == want["fast_count"]
    assert m["idle-count"].measured == 0 and m["idle-p99"].status == "unknown"  # a scenario group that got nothing
    assert m["slow-p50"].measured == want["slow_p50_born"]
    assert m["slow-p50-stored"].measured == want["slow_p50_stored"]
    assert m["fast-max"].measured == pytest.approx(12_000.0)  # the redelivery: born 3.0 s, delivered 15.0 s
    assert m["slow-lag-max"].measured == want["slow_lag_max"]
    assert m["slow-lag-end-stuck"].measured == want["slow_lag_max"]
    assert m["slow-lag-end"].measured == 0
    assert m["slow-stall"].measured == want["slow_stall_s"]
    assert m["fast-stall"].measured == 0
    assert m["fast-rewind"].measured == 40 and m["slow-rewind"].measured == 0  # per queue: 70 -> 50 twice
    assert m["master-p99"].measured == 10.0
    # by delivery time: fast 99 (key 17 dropped), slow 99 (its 100th is delivered at 10.0 s, in stuck)
    assert m["healthy-rate"].measured == pytest.approx(198 / 10)
    rc = res.consume
    slave = rc.row("slow", "stuck")
    assert slave["from_slave"] == want["slow_from_slave"]
    assert m["slow-from-slave"].measured == want["slow_from_slave"]
    # group fast kept up on the same topic: the seed's own proof that the broker serves it (analysis.consumer_rules)
    assert any(KEPT_UP in s and "group fast" in s and "group slow" in s for s in rc.verdicts), rc.verdicts
    assert any("PAGECACHERT" in w and "skipped" in w for w in res.warnings)
    page = (path / "report" / "index.html").read_text()
    for text in ("Consumers", "consumer lag", "PAGECACHERT", KEPT_UP):
        assert text in page
    verdict = json.loads((path / "report" / "verdict.json").read_text())
    assert verdict["consumers"]["loss"]["fast"]["lost"] == 1
    side_by_side = (compare / "index.html").read_text()
    assert "<h2>Consumers</h2>" in side_by_side and side_by_side.count("<td>consume-run</td>") == 3  # fast, idle, slow
    assert "<td>pagecache-only</td>" not in side_by_side  # PAGECACHERT alone is no consumer side: no row
    for name in ("consume_per_second", "consume_per_phase", "consumer_lag_per_second"):
        assert pq.read_table(path / "report" / f"{name}.parquet").num_rows > 0


def test_run_without_consumes_is_as_before(consumed):
    results, _, _, plain, _, _ = consumed
    res = results["no-consumer"]
    assert res.consume is None
    m = {x.expectation.label(): x for x in res.verdict.results}
    assert m["c"].status == "unknown" and m["l"].status == "unknown"
    assert all(x.status == "held" for k, x in m.items() if k not in ("c", "l"))
    assert "Consumers" not in (plain / "report" / "index.html").read_text()
    assert not (plain / "report" / "consume_per_second.parquet").exists()
    assert "consumers" not in json.loads((plain / "report" / "verdict.json").read_text())


def test_no_spark_job_for_runs_without_a_consumer_side(consumed, spark, monkeypatch):
    """The send-side job is not slowed down: runs without consumes/ and metrics/lag/ cost no Spark job."""
    from analysis.consume_stats import consume_results
    from analysis.rundir import open_run_dir

    _, _, path, plain, _, _ = consumed
    sc = spark.sparkContext

    def jobs(run_path, group):
        run = open_run_dir(run_path)
        sc.setJobGroup(group, "consumer side probe")
        try:
            res = consume_results(spark, [run], {run.run_id: run.timeline.t0_ns},
                                  enriched=spark.createDataFrame([], "run_id string, key string, cls string"))
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        return res, sc.statusTracker().getJobIdsForGroup(group)

    res, ran = jobs(plain, "consume-probe-none")
    assert ran == [] and res.loss == {} and res.per_phase.num_rows == 0 and res.lag.num_rows == 0
    monkeypatch.setattr("analysis.consume_loss.MAX_JUDGED_GROUPS", 1)  # and the cap on judged groups holds
    res, ran = jobs(path, "consume-probe-some")  # the probe sees jobs when there are some
    assert ran and res.per_phase.num_rows > 0
    assert [g for _, g in res.loss] == ["fast"] and "3 consumer groups" in res.warnings["consume-run"][0]


def test_run_without_consumers_shows_its_brokers_put_times(consumed):
    """A run without consumers whose broker logged [PAGECACHERT] (every run of a minute or more): the report shows
    the put-time table and no consumer section (a compose run crashed the report here once)."""
    results, _, _, _, _, broker_only = consumed
    assert results["pagecache-only"].consume is not None
    page = (broker_only / "report" / "index.html").read_text()
    assert "Broker put times" in page and "<h2>Consumers</h2>" not in page
