"""The consumer side of a run in Spark: deliveries, end-to-end latency, consumer-visible loss, duplicates, per-queue
order and lag (architecture §5 consume and lag rows). Runs without `consumes/` and `metrics/lag/` cost nothing:
`consume_results` runs no Spark job for them.

"Consumed" is `delivered_ns`: the moment the listener was called with the message. End-to-end latency of a
delivery in whole microseconds: `born` = delivered_ns - born_ms (the producer's clock), `stored` = delivered_ns -
store_ms (the broker's). A delivery (and a lag sample) belongs to the phase whose window [phase_start, phase_end)
holds its delivered_ns (ts_ns), not to the phase its message was sent in.

Steps when a run has consumes: per second (one aggregation), per group and phase with exact nearest-rank
percentiles (one aggregation, grouping sets, one window), loss and duplicates (counted per key in the loss check's
shuffle, analysis.consume_loss, then one small aggregation), per-queue order (one aggregation, or a window without
the JVM aggregates), lag per group per second (one aggregation). Everything collected is small: seconds x groups
rows.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from analysis import contract as c
from analysis import jvm
from analysis.consume_loss import RESTARTED, consume_names, consumer_loss, judged_groups, key_aggregates, run_sums
from analysis.frames import read_parts, second_of, with_t0
from analysis.loss import Deliveries, KeyFlags, plan_key_flags
from analysis.rundir import LAG_PARTS, RunDir
from analysis.stats import use_jvm

BASES = ("born", "stored")
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999))
LEVELS = {"group_phase": (True, True), "group": (True, False), "phase": (False, True), "all": (False, False)}
"""Which keys a per-phase row keeps: every (group, phase), each group over the run, each phase over all groups,
the whole run. A key not kept is null in the row."""
PERCENTILE_ACCURACY = 10_000
SUCCESS = "CONSUME_SUCCESS"
RETRY_PREFIX = "%RETRY%"


@dataclass
class ConsumeResults:
    """What the consumer side of all runs came to (small tables, split per run by `run_id`)."""

    per_second: pa.Table  # run_id, group, sec, deliveries, successes, from_slave, born_p50/p99, stored_p50/p99
    per_phase: pa.Table  # run_id, level, group, phase, basis, deliveries, successes, from_slave, p50..p999, max (ms)
    loss: dict[tuple[str, str], dict[str, Any]]  # (run, group) -> acknowledged, lost, lost_keys, duplicated, ...
    reordered: dict[tuple[str, str], int]
    lag: pa.Table  # run_id, group, sec, ts_ns, phase, lag, committed, rewound
    loss_runs: set[str] = field(default_factory=set)  # runs whose loss was computed
    warnings: dict[str, list[str]] = field(default_factory=dict)  # run -> what was left out


def _phase_of(ts: Column, runs: Sequence[RunDir]) -> Column:
    """The phase whose [start, end) holds `ts` (a phase without an end is open), null outside every phase."""
    expr = None
    for run in runs:
        for p in run.timeline.phases:
            cond = (F.col("run_id") == F.lit(run.run_id)) & (ts >= F.lit(p.start_ns))
            if p.end_ns is not None:
                cond = cond & (ts < F.lit(p.end_ns))
            expr = F.when(cond, F.lit(p.name)) if expr is None else expr.when(cond, F.lit(p.name))
    return F.lit(None).cast("string") if expr is None else expr.otherwise(F.lit(None).cast("string"))


def enrich_consumes(consumes: DataFrame, runs: Sequence[RunDir], t0: dict[str, int],
                    restarted: Collection[str] | None = None) -> DataFrame:
    """Consume rows with `phase`, `sec`, `born_us`, `stored_us`, `ok`, `slave`, `restart` (worker `.r<n>`:
    `restarted` names those workers when the caller knows them, else a regular expression tells them per row)."""
    delivered = F.col("delivered_ns")
    if restarted is None:
        restart = F.coalesce(F.col("worker").rlike(RESTARTED.pattern).cast("long"), F.lit(0))
    else:
        restart = F.col("worker").isin(sorted(restarted)).cast("long") if restarted else F.lit(0).cast("long")
    return (with_t0(consumes, t0).select(
        "run_id", "worker", "group", "key", "broker", "broker_id", "pulled_topic", "queue_id", "queue_offset",
        "delivered_ns", "result", "reconsume_times",
        _phase_of(delivered, runs).alias("phase"),
        second_of(delivered, F.col("t0_ns")).alias("sec"),
        (F.floor(delivered / F.lit(1000)) - F.col("born_ms") * F.lit(1000)).cast("long").alias("born_us"),
        (F.floor(delivered / F.lit(1000)) - F.col("store_ms") * F.lit(1000)).cast("long").alias("stored_us"),
        (F.col("result") == F.lit(SUCCESS)).cast("long").alias("ok"),
        F.coalesce((F.col("broker_id") == F.lit(1)).cast("long"), F.lit(0)).alias("slave"),
        restart.alias("restart")))


def per_second(ce: DataFrame, jvm_aggregates: bool | None = None) -> DataFrame:
    """Deliveries per group per second (by delivered_ns) with p50/p99 of both bases (ms): exact nearest-rank with
    the JVM aggregates (`stats.use_jvm`; `rmq_second_ranks` of whole microseconds), else `percentile_approx`,
    which is the same figure while a second has at most PERCENTILE_ACCURACY deliveries."""
    counts = [F.count(F.lit(1)).alias("deliveries"), F.sum("ok").alias("successes"),
              F.sum("slave").alias("from_slave")]
    keys = ["run_id", "group", "sec", "deliveries", "successes", "from_slave"]
    if use_jvm(ce.sparkSession, jvm_aggregates):  # cold, 4.8 s -> 1.6 s on the ten-minute run's 726k deliveries
        agg = ce.groupBy("run_id", "group", "sec").agg(*counts, *[
            F.call_function(jvm.SECOND_RANKS, F.col(f"{b}_us") / F.lit(1000.0)).alias(f"{b}_q") for b in BASES])
        return agg.select(*keys, *[F.col(f"{b}_q.{q}").alias(f"{b}_{q}") for b in BASES for q in ("p50", "p99")])
    pct = [(F.percentile_approx(f"{b}_us", [0.5, 0.99], PERCENTILE_ACCURACY)).alias(f"{b}_q") for b in BASES]
    agg = ce.groupBy("run_id", "group", "sec").agg(*counts, *pct)
    return agg.select(*keys, *[(F.col(f"{b}_q")[i] / F.lit(1000.0)).alias(f"{b}_{q}") for b in BASES
                               for i, q in enumerate(("p50", "p99"))])


def per_phase(ce: DataFrame, jvm_aggregates: bool | None = None) -> DataFrame:
    """Rows per (run, level, group, phase, basis): deliveries, successes, from_slave and exact nearest-rank
    percentiles (ms, of whole microseconds) and max; levels as LEVELS. With the JVM aggregates (`stats.use_jvm`):
    one histogram per (run, group, phase) and basis, summed and ranked per level (`_per_phase_jvm`). Without them,
    deliveries are counted per (run, group, phase, basis, microsecond) by one aggregation, the levels come from
    grouping sets over that table, and one window walks the cumulative counts of every (level, group, phase, basis)
    at once (on the real ten-minute run's 726k deliveries, local[2], warm: 8.0 s, the JVM path 2.2 s, equal rows)."""
    if use_jvm(ce.sparkSession, jvm_aggregates):
        return _per_phase_jvm(ce)
    both = ce.select("run_id", "group", "phase", "ok", "slave", F.explode(F.array(*[
        F.struct(F.lit(b).alias("basis"), F.col(f"{b}_us").alias("us")) for b in BASES])).alias("x"))
    counts = both.groupBy("run_id", "group", "phase", "x.basis", "x.us").agg(
        F.count(F.lit(1)).alias("c"), F.sum("ok").alias("ok"), F.sum("slave").alias("slave"))
    keys = ("run_id", "group", "phase", "basis", "us")
    sets, gid, level = _levels(keys)
    allc = counts.groupingSets(sets, *keys).agg(
        F.sum("c").alias("c"), F.sum("ok").alias("ok"), F.sum("slave").alias("slave"), gid.alias("gid"))
    allc = allc.withColumn("level", level[F.col("gid")]).drop("gid")
    pkeys = ["run_id", "level", "group", "phase", "basis"]
    ranked_c = F.when(F.col("us").isNull(), F.lit(0)).otherwise(F.col("c"))
    upto = Window.partitionBy(*pkeys).orderBy(F.col("us").asc_nulls_first()).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    ranked = allc.withColumn("rc", ranked_c).withColumn("cum", F.sum("rc").over(upto)).withColumn(
        "n", F.sum("rc").over(Window.partitionBy(*pkeys)))
    return ranked.groupBy(*pkeys).agg(
        F.sum("c").alias("deliveries"), F.sum("ok").alias("successes"), F.sum("slave").alias("from_slave"),
        *[(F.min(F.when((F.col("n") > 0) & (F.col("cum") >= F.ceil(F.col("n") * F.lit(q))), F.col("us")))
           / F.lit(1000.0)).alias(name) for name, q in QUANTILES],
        (F.max("us") / F.lit(1000.0)).alias("max"))


def _levels(keys: tuple[str, ...]) -> tuple[list[list[str]], Column, Column]:
    """The grouping sets of LEVELS over `keys`, a row's grouping id (an aggregate expression) and the map from
    that id to the level's name."""
    sets = [[k for k in keys if (k != "group" or keep_g) and (k != "phase" or keep_p)]
            for keep_g, keep_p in LEVELS.values()]
    gid = F.grouping("group") * F.lit(2) + F.grouping("phase")  # 2: group grouped out, 1: phase grouped out
    level = F.create_map(*[F.lit(x) for name, (keep_g, keep_p) in LEVELS.items()
                           for x in ((0 if keep_g else 2) + (0 if keep_p else 1), name)])
    return sets, gid, level


def _per_phase_jvm(ce: DataFrame) -> DataFrame:
    """`per_phase` by the JVM aggregates: MicrosHistogram counts each (run, group, phase)'s latencies per whole
    microsecond for both bases in one hash aggregation (a latency of whole microseconds given in ms comes back
    as the same microsecond), and HistogramRanks sums those histograms per level and walks them."""
    per = ce.groupBy("run_id", "group", "phase").agg(
        F.count(F.lit(1)).alias("deliveries"), F.sum("ok").alias("ok"), F.sum("slave").alias("slave"),
        *[F.call_function(jvm.MICROS_HISTOGRAM, F.col(f"{b}_us") / F.lit(1000.0)).alias(f"h_{b}") for b in BASES],
        *[F.max(f"{b}_us").alias(f"m_{b}") for b in BASES])
    stacked = per.select("run_id", "group", "phase", "deliveries", "ok", "slave", F.explode(F.array(*[
        F.struct(F.lit(b).alias("basis"), F.col(f"h_{b}.pairs").alias("pairs"), F.col(f"m_{b}").alias("mx"))
        for b in BASES])).alias("x")).select("run_id", "group", "phase", "deliveries", "ok", "slave", "x.*")
    keys = ("run_id", "group", "phase", "basis")
    sets, gid, level = _levels(keys)
    ranked = stacked.groupingSets(sets, *keys).agg(
        F.sum("deliveries").alias("deliveries"), F.sum("ok").alias("successes"), F.sum("slave").alias("from_slave"),
        F.call_function(jvm.HISTOGRAM_RANKS, F.col("pairs")).alias("r"), F.max("mx").alias("mx"),
        level[gid].alias("level"))
    return ranked.select("run_id", "level", "group", "phase", "basis", "deliveries", "successes", "from_slave",
                         *[F.col(f"r.{name}").alias(name) for name, _ in QUANTILES],
                         (F.col("mx") / F.lit(1000.0)).alias("max"))


def reordered(ce: DataFrame, jvm_aggregates: bool | None = None) -> dict[tuple[str, str], int]:
    """Per (run, group): first deliveries (not a redelivery) whose queue offset is below one the same consumer
    process was delivered earlier from the same queue (in delivered_ns, then queue offset, order). With the JVM
    aggregates (`stats.use_jvm`) `rmq_queue_reorders` sorts each process's queue as primitive pairs (the ten-minute
    shape's 2.4M deliveries, warm: 1.0 s against the window's 2.1 s); without them one window does it."""
    first = ce.where(F.coalesce(F.col("reconsume_times"), F.lit(0)) == 0).where(
        ~F.coalesce(F.col("pulled_topic"), F.lit("")).startswith(RETRY_PREFIX)).where(
        F.col("queue_offset").isNotNull() & F.col("delivered_ns").isNotNull())
    queue = ("run_id", "group", "worker", "broker", "queue_id")
    if use_jvm(ce.sparkSession, jvm_aggregates):
        rows = first.groupBy(*queue).agg(
            F.call_function(jvm.QUEUE_REORDERS, F.col("delivered_ns"), F.col("queue_offset")).alias("n")).collect()
        out: dict[tuple[str, str], int] = {}
        for r in rows:
            out[(r["run_id"], r["group"])] = out.get((r["run_id"], r["group"]), 0) + int(r["n"])
        return out
    w = Window.partitionBy(*queue).orderBy("delivered_ns", "queue_offset").rowsBetween(Window.unboundedPreceding, -1)
    flagged = first.withColumn("before", F.max("queue_offset").over(w))
    return {(r["run_id"], r["group"]): int(r["reordered"] or 0) for r in flagged.groupBy("run_id", "group").agg(
        F.sum((F.col("queue_offset") < F.col("before")).cast("long")).alias("reordered")).collect()}


def lag_per_second(lag: DataFrame, runs: Sequence[RunDir], t0: dict[str, int]) -> DataFrame:
    """Per (run, group, second): the lag summed over queues (the last sample of each queue in that second) and
    the committed offsets summed likewise, with the second's last sample time and its phase; `rewound`: by how much
    the queues' committed offsets stand below the highest each had before (summed over queues; a queue not
    committed yet, offset < 0, counts nothing), which is what a failover's stale copy of the offsets shows."""
    rows = with_t0(lag, t0).withColumn("sec", second_of(F.col("ts_ns"), F.col("t0_ns")))
    per_queue = rows.groupBy("run_id", "group", "sec", "topic", "broker", "queue_id").agg(
        F.max_by("lag", "ts_ns").alias("lag"), F.max_by("consumer_offset", "ts_ns").alias("committed"),
        F.max("ts_ns").alias("ts_ns"))
    before = Window.partitionBy("run_id", "group", "topic", "broker", "queue_id").orderBy("sec").rowsBetween(
        Window.unboundedPreceding, -1)
    high = F.max(F.when(F.col("committed") >= 0, F.col("committed"))).over(before)
    per_queue = per_queue.withColumn("rewound", F.when((F.col("committed") >= 0) & (high > F.col("committed")),
                                                       high - F.col("committed")).otherwise(F.lit(0)))
    per_group = per_queue.groupBy("run_id", "group", "sec").agg(
        F.sum("lag").alias("lag"), F.sum("committed").alias("committed"), F.sum("rewound").alias("rewound"),
        F.max("ts_ns").alias("ts_ns"))
    return per_group.withColumn("phase", _phase_of(F.col("ts_ns"), runs))


@dataclass
class ConsumeInput:
    """The consume rows of the runs that have some (`ce`: `enrich_consumes`, None when none has), the runs with
    lag samples, and the groups judged for loss per run (`analysis.consume_loss.judged_groups`)."""

    ce: DataFrame | None
    with_c: list[RunDir]
    with_lag: list[RunDir]
    judged: dict[str, list[str]] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def deliveries(self) -> Deliveries | None:
        """What the loss check's key table counts for the consumers (None: no group to judge)."""
        if self.ce is None or not self.judged:
            return None
        return Deliveries(self.ce, self.judged, key_aggregates, run_sums)


def consume_input(spark: SparkSession, runs: Sequence[RunDir], t0: dict[str, int]) -> ConsumeInput:
    """The consumer side's input (no Spark job: the frames are planned, the groups read with pyarrow)."""
    with_c = [r for r in runs if r.parts.get(c.CONSUMES_DIR) and r.run_id in t0]
    with_lag = [r for r in runs if r.parts.get(LAG_PARTS) and r.run_id in t0]
    if not with_c:
        return ConsumeInput(None, with_c, with_lag)
    consumes = read_parts(spark, [p for r in with_c for p in r.parts[c.CONSUMES_DIR]], c.CONSUME_SCHEMA)
    # not persisted: on the real ten-minute run (726k deliveries) persisting took this step from 19.4 s to 23-24 s
    seen, restarted = consume_names(with_c)
    ce = enrich_consumes(consumes, with_c, {r.run_id: t0[r.run_id] for r in with_c}, restarted)
    judged, warnings = judged_groups(with_c, seen)
    return ConsumeInput(ce, with_c, with_lag, judged, warnings)


def consume_results(spark: SparkSession, runs: Sequence[RunDir], t0: dict[str, int], enriched: DataFrame,
                    inp: ConsumeInput | None = None, keys: Callable[[], KeyFlags] | None = None
                    ) -> ConsumeResults:
    """Every consumer aggregate of the runs that have consume or lag parts (no Spark job for the others). `inp`:
    `consume_input`'s (made here when None); `keys`: gives the loss check's key table planned with
    `inp.deliveries()` (when None, the consumers' loss gets a key table of its own, over `enriched`)."""
    inp = inp if inp is not None else consume_input(spark, runs, t0)
    out = ConsumeResults(pa.table({}), pa.table({}), {}, {}, pa.table({}), warnings=dict(inp.warnings))
    if inp.ce is not None:
        ce = inp.ce
        out.per_second = per_second(ce).toArrow()
        out.per_phase = per_phase(ce).toArrow()
        out.reordered = reordered(ce)
    if inp.with_lag:
        lag = read_parts(spark, [p for r in inp.with_lag for p in r.parts[LAG_PARTS]], c.CONSUMER_LAG_SCHEMA)
        out.lag = lag_per_second(lag, inp.with_lag, {r.run_id: t0[r.run_id] for r in inp.with_lag}).toArrow()
    deliveries = inp.deliveries()
    if deliveries is not None:
        plan = None
        if keys is None:
            plan = plan_key_flags(enriched, None, [], deliveries=deliveries)
            keys = plan.resolve
        try:
            kf = keys()
            for row in consumer_loss(kf, inp.judged):
                out.loss[(row["run_id"], row["group"])] = row
            out.loss_runs = set(inp.judged)
        finally:
            if plan is not None:
                plan.release()
    return out
