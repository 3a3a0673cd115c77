"""The Spark part of the job: run directories in, small per-run results (Arrow tables and dicts) out.

All runs are computed together (one scan per step, `run_id` tells them apart); the results are small enough
for the driver: per-second series, per-phase rows, outcome counts, node metrics, loss checks, fault timings and
the verdicts. Independent jobs run in threads side by side (`_compute`).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analysis import contract as c
from analysis import jvm, stats
from analysis.consume_measures import RunConsume, measure_consumer, run_consume
from analysis.consume_stats import ConsumeInput, consume_input, consume_results
from analysis.expectations import CONSUMER_LOSS_METRICS, CONSUMER_METRICS, PAGECACHE_METRICS
from analysis.failover import failover_of
from analysis.fault_timing import FaultSpec
from analysis.frames import Frames, enrich_requests, load_frames
from analysis.loss import LossCheck, loss_checks, plan_key_flags
from analysis.measures import Measurement, measure
from analysis.nodes_back import measure_nodes_back
from analysis.per_group import group_per_second, group_tables, multi_group_runs, per_group
from analysis.per_phase import empty_counts, per_phase
from analysis.rundir import RunDir
from analysis.search import searches_of
from analysis.timeline import NS
from analysis.transitions import transitions_of, transitions_of_fault
from analysis.verdict import RunVerdict, judge

Step = Callable[[str], None]
PER_SECOND_SCHEMA = pa.schema(
    [("sec", pa.int64()), ("sends", pa.int64()), ("send_ok", pa.int64()), ("ok", pa.int64()), ("fail", pa.int64()),
     ("info", pa.int64()), ("intended", pa.int64()), ("intended_max", pa.float64()), ("actual_max", pa.float64())]
    + [(f"{b}_{q}", pa.float64()) for b in ("intended", "actual") for q in ("p50", "p90", "p99", "p999")])


@dataclass
class RunResults:
    """Everything the report shows about one run."""

    run: RunDir
    t0_ns: int | None
    rows: int
    per_second: pa.Table
    outcomes_per_second: pa.Table
    per_phase: list[dict[str, Any]]
    outcome_counts: pa.Table
    metrics_per_second: pa.Table
    loss: LossCheck
    faults: list[dict[str, Any]]
    verdict: RunVerdict
    warnings: list[str] = field(default_factory=list)
    consume: RunConsume | None = None  # the consumer side (None: the run has no consumes, lag or PAGECACHERT)
    failover: dict[str, Any] | None = None  # controller mode: the failover figures (analysis.failover)
    search: dict[str, Any] | None = None  # phase -> its sustainable-rate search (analysis.search); None: no search
    per_group: list[dict[str, Any]] | None = None  # per slice per broker group (analysis.per_group); None: one group
    group_per_second: pa.Table | None = None  # sends and share per broker group per second; None: one group


def _split(table: pa.Table, run_id: str, sort: Sequence[str] = ()) -> pa.Table:
    t = table.filter(pc.equal(table["run_id"], run_id)).drop_columns(["run_id"])
    return t.sort_by([(k, "ascending") for k in sort]) if sort and t.num_rows else t


def _t0(spark: SparkSession, runs: Sequence[RunDir], requests: DataFrame) -> dict[str, int | None]:
    """Zero of each run's time axis: the first phase start from events.jsonl, else the first send's start."""
    t0 = {r.run_id: r.timeline.t0_ns for r in runs}
    missing = [k for k, v in t0.items() if v is None]
    if missing:
        for r in requests.where(F.col("run_id").isin(missing)).groupBy("run_id").agg(
                F.min("start_ns").alias("first")).collect():
            t0[r["run_id"]] = r["first"]
    return t0


def compute(spark: SparkSession, runs: Sequence[RunDir], step: Step = lambda _: None) -> list[RunResults]:
    """Run every Spark step for all `runs` and return their results in the same order."""
    step("reading part files")
    frames = load_frames(spark, runs)
    t0 = _t0(spark, runs, frames.requests)
    known_t0 = {k: v for k, v in t0.items() if v is not None}
    # not cached: Spark's in-memory cache costs more to build than re-reading the pruned Parquet columns
    enriched = enrich_requests(frames.requests, known_t0, {r.run_id: transitions_of(r.timeline) for r in runs})
    spark.conf.set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", str(stats.OBJECT_AGG_FALLBACK))
    fallback = jvm.why_not(spark)
    if fallback is not None:  # the same figures, slower: say so in one line
        print(f"rmq-chaos report: percentiles by Spark SQL, not the JVM aggregates: {fallback}", file=sys.stderr)
    return _compute(spark, runs, frames, enriched, known_t0, t0, step)


def _compute(spark: SparkSession, runs: Sequence[RunDir], frames: Frames, enriched: DataFrame,
             known_t0: dict[str, int], t0: dict[str, int | None], step: Step) -> list[RunResults]:
    """The loss check's key flags, the per-second series and percentiles, and the consumers' jobs run in threads
    of their own beside the outcome counts and fault timings (Spark schedules jobs from several threads at once):
    each job's driver work (planning, code generation, scheduling) is single-threaded, and a scan of a compacted
    file is one task, so one job at a time leaves a core of local[2] idle for much of a report."""
    step("planning the loss check")
    readback_runs = {r.run_id: r.timeline.readback_nodes for r in runs if r.readback_complete}
    unread = {r.run_id: r.coverage.unread for r in runs if r.run_id in readback_runs and r.coverage.unread}
    consume_in = consume_input(spark, runs, known_t0)
    deliveries = consume_in.deliveries()
    plan = plan_key_flags(enriched, frames.readback, list(readback_runs), unread=unread,
                          deliveries=deliveries) if readback_runs or deliveries is not None else None
    try:
        with ThreadPoolExecutor(max_workers=3, thread_name_prefix="analysis") as pool:
            flags = pool.submit(plan.resolve) if plan is not None else None
            series = pool.submit(_series, enriched, frames.metrics, known_t0)
            consumers = pool.submit(consume_results, spark, runs, known_t0, enriched, consume_in,
                                    flags.result if flags is not None else None) if any(
                r.has_consumes or r.parts.get("metrics/lag") for r in runs) else None
            multi = multi_group_runs(runs)
            groups = pool.submit(group_tables, enriched, multi) if multi else None
            try:
                return _compute_sends(spark, runs, frames, enriched, known_t0, t0, step, flags, readback_runs,
                                      series, consume_in, consumers, groups)
            except BaseException:  # a failed step or Ctrl-C: the threads' jobs end now, not when they are done
                spark.sparkContext.cancelAllJobs()
                raise
    finally:
        if plan is not None:
            plan.release()


def _series(enriched: DataFrame, metrics: DataFrame, known_t0: dict[str, int]) -> tuple[pa.Table, ...]:
    """The per-second latency series, the node metrics per second and the latency percentiles' tables."""
    per_sec = stats.per_second(enriched).toArrow()
    metrics_sec = stats.metrics_per_second(metrics, known_t0).toArrow()
    return per_sec, metrics_sec, _percentile_tables(stats.latency_percentiles(enriched).toArrow())


def _compute_sends(spark: SparkSession, runs: Sequence[RunDir], frames: Frames, enriched: DataFrame,
                   known_t0: dict[str, int], t0: dict[str, int | None], step: Step, flags: Future | None,
                   readback_runs: dict[str, list[str] | None], series: Future, consume_in: ConsumeInput,
                   consumers: Future | None, groups: Future | None = None) -> list[RunResults]:
    ids = [r.run_id for r in runs]

    step("outcome counts")
    summary = stats.send_summary(enriched).toArrow()
    counts = stats.summary_part(summary, "outcomes")
    intended = stats.summary_part(summary, "intended")
    out_long = stats.summary_part(summary, "per_second")

    step("loss check: counts and sample keys (key flags begun beside)")
    kf = flags.result() if flags is not None and readback_runs else None  # else only the consumers' loss uses it
    totals = _totals(counts)
    coverage = {r.run_id: r.coverage for r in runs}
    loss = loss_checks(kf, readback_runs, totals, ids, coverage)
    step("fault timings and expectations")
    specs = [FaultSpec((r.run_id, f.fault_id), r.run_id, f) for r in runs for f in r.timeline.faults]
    measured, timings, deliveries = measure(enriched, kf, runs, t0, loss, specs)

    step("per-second series and latency percentiles (begun beside)")
    per_sec, metrics, pct = series.result()
    if consumers is not None:
        step("consumers: deliveries, end-to-end latency, loss, lag (begun beside)")
    cres = consumers.result() if consumers is not None else consume_results(spark, runs, known_t0, enriched,
                                                                            consume_in)
    consume: dict[str, RunConsume] = {}
    for run in runs:
        rc = run_consume(run, cres, t0[run.run_id])
        consume[run.run_id] = rc
        for i, e in enumerate(run.expectations):
            if e.metric in CONSUMER_METRICS + PAGECACHE_METRICS:
                m = measure_consumer(e, run, rc)
                gaps = deliveries[run.run_id]
                gap = gaps.gaps.get(e.phase) if e.phase is not None else gaps.first_gap()
                if gap is not None and m.value is not None and e.metric not in CONSUMER_LOSS_METRICS:
                    m = Measurement(None, gap)
                measured[(run.run_id, i)] = m

    if groups is not None:
        step("per broker group: outcomes, latency, rate (begun beside)")
    group_tabs = groups.result() if groups is not None else None
    failovers = {run.run_id: failover_of(run, enriched, measured) for run in runs}
    not_back = {run.run_id: measure_nodes_back(run, measured) for run in runs}
    searches = searches_of(runs, frames.requests, consume, measured, step)
    results = []
    for run in runs:
        rid = run.run_id
        rc = consume[rid]
        shown = rc if (rc.has_consumes or rc.has_lag or rc.pagecache) else None
        rows = totals.get(rid, {}).get("attempted", 0)
        warnings = list(run.warnings) + cres.warnings.get(rid, []) + [
            f"phase {phase}: {why}: its expectations are unknown" for phase, why in deliveries[rid].gaps.items()]
        if run.parts["requests"] and rows == 0:
            warnings.append(f"requests/: no row has run_id {rid!r}: the parts belong to another run")
        incomplete = None
        if not run.timeline.completed:
            incomplete = f"run status {run.timeline.status!r} (events.jsonl has no run_end 'completed')"
        elif not run.requests_complete:
            incomplete = "request part files were skipped (truncated)"
        verdict = RunVerdict(rid, run.scenario_name,
                             [judge(e, measured[(rid, i)]) for i, e in enumerate(run.expectations)], incomplete)
        run_counts = _split(counts, rid, ["phase", "outcome"])
        faults = [_fault_row(f, timings[(rid, f.fault_id)], t0[rid], run_counts) for f in run.timeline.faults]
        slices = per_phase(run, run_counts, {k: _split(v, rid) for k, v in pct.items()})
        several = group_tabs is not None and len(run.broker_groups) > 1
        results.append(RunResults(
            run=run, t0_ns=t0[rid], rows=rows,
            per_second=_per_second(_split(per_sec, rid), _split(intended, rid), _split(out_long, rid)),
            outcomes_per_second=_outcomes_long(_split(out_long, rid)),
            per_phase=slices,
            outcome_counts=run_counts, metrics_per_second=_split(metrics, rid, ["node", "sec"]),
            loss=loss[rid], faults=faults, verdict=verdict, warnings=warnings, consume=shown,
            failover=failovers[rid], search=searches[rid],
            per_group=per_group(run, slices, group_tabs) if several else None,
            group_per_second=group_per_second(run, group_tabs) if several else None))
        verdict.extra = {"loss": loss[rid].to_json(), "faults": faults, "warnings": warnings,
                         "run_status": run.timeline.status,
                         "schedule": {"dropped": deliveries[rid].dropped, "gaps": deliveries[rid].gaps,
                                      "rows_whole": deliveries[rid].rows_whole}}
        if shown is not None:
            verdict.extra["consumers"] = shown.to_json()
        if failovers[rid] is not None:
            verdict.extra["failover"] = failovers[rid]
        if not_back[rid]:
            verdict.extra["nodes_not_back"] = not_back[rid]
        if searches[rid] is not None:
            verdict.extra["search"] = searches[rid]
    return results


def _percentile_tables(pct: pa.Table) -> dict[str, pa.Table]:
    """`<basis>_phase` (run_id, phase, transition, `<basis>_p50`..) and `<basis>_run` (run_id, `<basis>_p50`..)
    tables out of `stats.latency_percentiles` rows."""
    out = {}
    for basis in stats.BASIS_COLUMNS:
        for name, level in (("phase", stats.LEVEL_PHASE), ("run", stats.LEVEL_RUN)):
            t = pct.filter(pc.and_(pc.equal(pct["basis"], basis), pc.equal(pct["level"], level)))
            keys = ["run_id", "phase", "transition"] if level == stats.LEVEL_PHASE else ["run_id"]
            out[f"{basis}_{name}"] = t.select([*keys, *stats.QUANTILE_NAMES]).rename_columns(
                [*keys, *[f"{basis}_{q}" for q in stats.QUANTILE_NAMES]])
    return out


def _totals(counts: pa.Table) -> dict[str, dict[str, int]]:
    """run -> attempted, acknowledged (ok class), send_ok: sums of the outcome-count rows."""
    out: dict[str, dict[str, int]] = {}
    for r in counts.select(["run_id", "outcome", "cls", "sends"]).to_pylist():
        t = out.setdefault(r["run_id"], {"attempted": 0, "acknowledged": 0, "send_ok": 0})
        t["attempted"] += r["sends"]
        t["acknowledged"] += r["sends"] if r["cls"] == c.OK else 0
        t["send_ok"] += r["sends"] if r["outcome"] == c.SEND_OK else 0
    return out


def _per_second(per_sec: pa.Table, intended: pa.Table, outcomes: pa.Table) -> pa.Table:
    """One row per second that had a send or an intended send: counts by class, maxima, percentiles, intended.
    `outcomes`: sec, outcome, cls, sends."""
    rows: dict[int, dict[str, Any]] = {}
    for r in per_sec.to_pylist():
        rows[r["sec"]] = {**r, "send_ok": 0, **dict.fromkeys(c.JEPSEN_CLASSES, 0)}
    for r in outcomes.to_pylist():
        row = rows[r["sec"]]
        row["send_ok"] += r["sends"] if r["outcome"] == c.SEND_OK else 0
        row[r["cls"]] += r["sends"]
    empty = {**empty_counts(), **dict.fromkeys(f"{b}_{q}" for b in stats.BASIS_COLUMNS for q in stats.QUANTILE_NAMES)}
    for r in intended.to_pylist():
        rows.setdefault(r["sec"], {**empty, "sec": r["sec"]})["intended"] = r["intended"]
    out = [{"intended": 0, **rows[sec]} for sec in sorted(rows)]
    return pa.Table.from_pylist(out, schema=PER_SECOND_SCHEMA)


def _outcomes_long(outcomes: pa.Table) -> pa.Table:
    """sec, outcome, sends for every (second, outcome) with sends: the stacked-outcome series."""
    rows = [{"sec": r["sec"], "outcome": r["outcome"], "sends": r["sends"]} for r in outcomes.to_pylist()]
    rows.sort(key=lambda r: (r["sec"], r["outcome"]))
    return pa.Table.from_pylist(rows, schema=pa.schema([("sec", pa.int64()), ("outcome", pa.string()),
                                                       ("sends", pa.int64())]))


def _fault_row(f: Any, timing: Any, t0: int | None, counts: pa.Table) -> dict[str, Any]:
    """The Faults table's row of one fault; `transitions`: its apply and revert, each with its start and end second
    and the sends started in it (`counts`: the run's outcome-count rows)."""
    def rel(ns: int | None) -> float | None:
        return None if ns is None or t0 is None else (ns - t0) / NS

    sends: dict[str, int] = {}
    for r in counts.select(["transition", "sends"]).to_pylist():
        if r["transition"] is not None:
            sends[r["transition"]] = sends.get(r["transition"], 0) + r["sends"]
    transitions = [{"action": t.action, "label": t.label, "start_s": rel(t.start_ns), "end_s": rel(t.end_ns),
                    "sends": sends.get(t.label, 0)}
                   for t in transitions_of_fault(f)]

    def finite(v: float | None) -> float | None:
        return None if v is None or v == float("inf") else v

    return {
        "fault_id": f.fault_id, "kind": f.kind, "target": f.target, "status": f.status, "errors": f.errors,
        "apply_s": rel(f.shade_start_ns), "verified_s": rel(f.verified_ns),
        "revert_started_s": rel(f.revert_started_ns), "reverted_s": rel(f.reverted_ns), "transitions": transitions,
        "first_error_s": rel(timing.first_error_ns), "first_error_outcome": timing.first_error_outcome,
        "fault_to_first_error_s": finite(timing.fault_to_first_error_s),
        "recovery_s": finite(timing.recovery_s),
        "never_failed": timing.fault_to_first_error_s == float("inf"),
        "never_recovered": timing.recovery_s == float("inf"),
        "evidence": f.evidence,
    }
