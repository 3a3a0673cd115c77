"""Send statistics per run, per phase and per second: counts, outcome mix, latency percentiles (Spark side).

Percentiles are nearest-rank values: the smallest latency with at least a fraction p of the sends at or below it,
i.e. rank ceil(p*n) of the sorted latencies (DuckDB's `quantile_disc`).
- Per phase and per run (and for expectations): exact, on latencies truncated to whole microseconds. The job
  counts sends per (group, microsecond) and walks the cumulative counts, so the work grows with the distinct
  microsecond values, not with the rows: it scales to soak runs. The report prints milliseconds with three
  decimals, so the truncation never shows.
- Per second (the charts): exact and untruncated, from each second's latencies: a second holds at most a
  second's sends, so its values are few whatever the run's length.
`max` is always the exact, untruncated maximum.

Two implementations give the same figures (tests/analysis/test_analysis_jvm_aggregates.py compares them):
- The JVM aggregates of `analysis.jvm`, when the session has them (the default): per second, a second's values
  as primitive doubles and the ranks selected in place; per phase, counts per whole microsecond for each
  (run, phase) in ascending primitive arrays (batches sorted and merged in), whose sums give the whole run.
  About a third less time than the SQL expressions on 10M rows (benchmarks/analysis_spark_vs_duckdb.py).
- Spark SQL expressions otherwise: per second `collect_list`, `sort_array` and the element at rank ceil(p*n)
  (half the time of `percentile_approx` at an accuracy that keeps every sample, which it replaced); per phase a
  hash aggregation of counts per microsecond and a window over their cumulative sums.

Two bases: `intended` = latency_ms (end - intended start: the open model's view, includes waiting in the load
generator) and `actual` = service_ms (end - actual start).

Per phase means per slice: (phase, transition), the sends started while a fault of the run was being applied or
reverted apart from the rest of their phase (analysis.transitions); the whole run holds every send. A frame without
a `transition` column (a caller's own rows) is one slice per phase.
"""
from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analysis import jvm
from analysis.frames import jepsen_class, with_t0

QUANTILES = (0.5, 0.9, 0.99, 0.999)
OBJECT_AGG_FALLBACK = 1_000_000  # groups per task before Spark's object aggregation falls back to sorting
QUANTILE_NAMES = ("p50", "p90", "p99", "p999")
BASIS_COLUMNS = {"intended": "latency_ms", "actual": "service_ms"}
NS_PER_MS = 1_000_000
NS_PER_US = 1_000


def micros(ms: Column) -> Column:
    """A latency in ms as whole microseconds (truncated; rounded to the ns first, which it came from). `rint`
    (Math.rint) rather than `round`, which goes through BigDecimal for doubles and cost a quarter of the
    percentiles' time; the two differ only at exactly half a nanosecond, which a latency made of ns never is."""
    return F.floor(F.rint(ms * F.lit(float(NS_PER_MS))) / F.lit(float(NS_PER_US))).cast("long")


OUTCOME_KEYS = ("run_id", "phase", "transition", "client", "outcome", "response_code")


def with_slice(df: DataFrame) -> DataFrame:
    """`df` with its `transition` column, null for every row when it has none."""
    return df if "transition" in df.columns else df.withColumn("transition", F.lit(None).cast("string"))
SUMMARY_SETS = {"outcomes": 1, "per_second": 2, "intended": 3}
"""The kinds of rows `send_summary` returns (its `kind` column)."""


def send_summary(enriched: DataFrame) -> DataFrame:
    """Three small tables from one scan, told apart by `kind` (SUMMARY_SETS):
    - outcomes: run_id, phase, transition, client, outcome, cls, response_code, remark_pattern: sends, an example remark
      (`remark_example`), first/last start, last end and the maximum latencies. Every per-phase and per-run count
      is a sum of these rows.
    - per_second: run_id, sec (by actual start), outcome, cls: sends.
    - intended: run_id, isec (by intended start): sends (how many the schedule meant to start that second).

    The rows are first grouped by every key at once and the raw remark (a hash aggregation whose groups are few:
    seconds x outcomes x remarks), so the number-stripping regex runs once per group, not per row; the three
    tables are grouping sets over that."""
    raw = with_slice(enriched).groupBy(*OUTCOME_KEYS, "remark", "sec", "isec").agg(
        F.count(F.lit(1)).alias("sends"), F.min("start_ns").alias("first_start_ns"),
        F.max("start_ns").alias("last_start_ns"), F.max("end_ns").alias("last_end_ns"),
        F.max("latency_ms").alias("intended_max"), F.max("service_ms").alias("actual_max"))
    raw = raw.withColumn("remark_pattern", F.regexp_replace(F.col("remark"), "[0-9]+", "N"))
    keys = [*OUTCOME_KEYS, "remark_pattern", "sec", "isec"]
    out = raw.groupingSets([[*OUTCOME_KEYS, "remark_pattern"], ["run_id", "sec", "outcome"], ["run_id", "isec"]],
                           *keys).agg(
        F.sum("sends").alias("sends"), F.min("remark").alias("remark_example"),
        F.min("first_start_ns").alias("first_start_ns"), F.max("last_start_ns").alias("last_start_ns"),
        F.max("last_end_ns").alias("last_end_ns"), F.max("intended_max").alias("intended_max"),
        F.max("actual_max").alias("actual_max"), F.grouping_id(*keys).alias("gid"))
    # grouping_id bits, first key highest: 1 where the key is grouped out
    def gid(kept: Sequence[str]) -> int:
        return sum(1 << (len(keys) - 1 - i) for i, k in enumerate(keys) if k not in kept)
    kind = (F.when(F.col("gid") == gid([*OUTCOME_KEYS, "remark_pattern"]), F.lit(SUMMARY_SETS["outcomes"]))
            .when(F.col("gid") == gid(["run_id", "sec", "outcome"]), F.lit(SUMMARY_SETS["per_second"]))
            .otherwise(F.lit(SUMMARY_SETS["intended"])))
    return out.withColumn("kind", kind).withColumn("cls", jepsen_class(F.col("outcome"))).drop("gid")


def summary_part(summary: pa.Table, kind: str) -> pa.Table:
    """One of `send_summary`'s tables (collected), with its own columns, as the old per-kind frames had them."""
    t = summary.filter(pc.equal(summary["kind"], SUMMARY_SETS[kind]))
    if kind == "outcomes":
        cols = [*OUTCOME_KEYS, "remark_pattern", "sends", "remark_example", "first_start_ns", "last_start_ns",
                "last_end_ns", "intended_max", "actual_max", "cls"]
        return t.select(cols)
    if kind == "per_second":
        return t.select(["run_id", "sec", "outcome", "cls", "sends"])
    return t.select(["run_id", "isec", "sends"]).rename_columns(["run_id", "sec", "intended"])


def use_jvm(spark, want: bool | None) -> bool:
    """Whether to compute with the JVM aggregates: `want` None = when the session has them; True = must (raises
    when it does not); False = never (the Spark SQL expressions)."""
    if want is False:
        return False
    if jvm.ready(spark):
        return True
    if want:
        raise RuntimeError("the session has no JVM aggregates (analysis.jvm: build the jar, start the session "
                           "with it)")
    return False


def per_second(enriched: DataFrame, jvm_aggregates: bool | None = None) -> DataFrame:
    """run_id, sec (by actual start): sends, exact maxima and the percentiles of both bases (see the module
    docstring on exactness and on `jvm_aggregates`, see `use_jvm`). One scan; the outcome mix per second comes from
    `send_summary`."""
    if use_jvm(enriched.sparkSession, jvm_aggregates):
        return _per_second_jvm(enriched)
    lists = {basis: f"_{basis}_sorted" for basis in BASIS_COLUMNS}
    grouped = enriched.groupBy("run_id", "sec").agg(
        F.count(F.lit(1)).alias("sends"), F.max("latency_ms").alias("intended_max"),
        F.max("service_ms").alias("actual_max"),
        *[F.sort_array(F.collect_list(column)).alias(lists[basis]) for basis, column in BASIS_COLUMNS.items()])
    cols = []
    for basis, name in lists.items():
        n = F.size(F.col(name))
        cols += [F.when(n > 0, F.element_at(F.col(name), F.ceil(n * F.lit(q)).cast("int"))).alias(f"{basis}_{qn}")
                 for q, qn in zip(QUANTILES, QUANTILE_NAMES, strict=True)]
    return grouped.select("run_id", "sec", "sends", "intended_max", "actual_max", *cols)


def _per_second_jvm(enriched: DataFrame) -> DataFrame:
    """`per_second` by the JVM aggregate `rmq_second_ranks` (SecondRanks.java), one per basis (each also counts the
    rows and finds the maximum)."""
    short = {basis: f"_{basis}" for basis in BASIS_COLUMNS}
    grouped = enriched.groupBy("run_id", "sec").agg(*[
        F.call_function(jvm.SECOND_RANKS, F.col(column)).alias(short[basis])
        for basis, column in BASIS_COLUMNS.items()])
    first = short["intended"]
    return grouped.select(
        "run_id", "sec", F.col(f"{first}.rows").alias("sends"),
        *[F.col(f"{short[basis]}.max").alias(f"{basis}_max") for basis in BASIS_COLUMNS],
        *[F.col(f"{short[basis]}.{qn}").alias(f"{basis}_{qn}") for basis in BASIS_COLUMNS for qn in QUANTILE_NAMES])


def latency_counts(enriched: DataFrame, basis: str) -> DataFrame:
    """run_id, phase, us, c: how many sends had each whole-microsecond latency (one basis)."""
    return enriched.groupBy("run_id", "phase", micros(F.col(BASIS_COLUMNS[basis])).alias("us")).agg(
        F.count(F.lit(1)).alias("c"))


def nearest_rank(counts: DataFrame, keys: Sequence[str], prefix: str,
                 quantiles: Sequence[float] = QUANTILES, names: Sequence[str] = QUANTILE_NAMES,
                 summed: bool = False) -> DataFrame:
    """keys, `<prefix>_<name>` (ms; `<name>` for an empty prefix) for each quantile, from (keys, us, c) rows
    (summed over other columns, unless `summed`: one row per keys and us already, none with a null us)."""
    per = counts if summed else counts.where(F.col("us").isNotNull()).groupBy(*keys, "us").agg(
        F.sum("c").alias("c"))
    upto = Window.partitionBy(*keys).orderBy("us").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ranked = per.withColumn("cum", F.sum("c").over(upto)).withColumn("n", F.sum("c").over(Window.partitionBy(*keys)))
    return ranked.groupBy(*keys).agg(*[
        (F.min(F.when(F.col("cum") >= F.ceil(F.col("n") * F.lit(q)), F.col("us"))) / F.lit(1000.0)).alias(
            f"{prefix}_{name}" if prefix else name) for q, name in zip(quantiles, names, strict=True)])


LEVEL_PHASE, LEVEL_RUN = 0, 1


def latency_percentiles(enriched: DataFrame, jvm_aggregates: bool | None = None,
                        by: Sequence[str] = ()) -> DataFrame:
    """run_id, basis, level (LEVEL_PHASE: per slice of a phase; LEVEL_RUN: the whole run, phase and transition
    null), phase, transition: `p50`.. (ms) for both bases, in one scan and one Spark job (`jvm_aggregates`: see
    `use_jvm`). `by`: more keys that split both levels (e.g. `broker`: per group per slice and per group over the
    run), columns after `run_id`.

    With the JVM aggregates, MicrosHistogram counts each (run, phase)'s latencies per whole microsecond (both
    bases, in one hash aggregation of the rows), and HistogramRanks sums those histograms per phase and per run
    (grouping sets over a few rows) and walks them. Without them, rows are counted per (run, phase, basis, whole
    microsecond) by a hash aggregation over both bases at once (a grouping set per basis); the whole run's counts
    are sums of its phases' (grouping sets over the small counts), and one window per group walks the cumulative
    counts (`nearest_rank`)."""
    enriched = with_slice(enriched)
    by = list(by)
    if use_jvm(enriched.sparkSession, jvm_aggregates):
        return _latency_percentiles_jvm(enriched, by)
    slice_keys = ["run_id", *by, "phase", "transition"]
    keys = [*slice_keys, "us_i", "us_a"]
    counts = (enriched.select(*slice_keys, *[micros(F.col(col)).alias(f"us_{b[0]}")
                                             for b, col in BASIS_COLUMNS.items()])
              .groupingSets([[*slice_keys, "us_i"], [*slice_keys, "us_a"]], *keys)
              .agg(F.count(F.lit(1)).alias("c"), F.grouping("us_i").alias("g")))
    counts = counts.select(*slice_keys, F.when(F.col("g") == 1, F.lit("actual")).otherwise(
        F.lit("intended")).alias("basis"), F.coalesce("us_i", "us_a").alias("us"), "c").where(
        F.col("us").isNotNull())
    run_keys = ["run_id", *by, "basis"]
    levels = (counts.groupingSets([[*run_keys, "phase", "transition", "us"], [*run_keys, "us"]],
                                  *run_keys, "phase", "transition", "us")
              .agg(F.sum("c").alias("c"), F.grouping("phase").cast("int").alias("level")))
    return nearest_rank(levels, [*run_keys, "level", "phase", "transition"], "", summed=True)


def _latency_percentiles_jvm(enriched: DataFrame, by: Sequence[str] = ()) -> DataFrame:
    """`latency_percentiles` by the JVM aggregates (see there). A group whose latencies are all null has no row, as
    in the SQL expressions."""
    slice_keys = ["run_id", *by, "phase", "transition"]
    per_phase = enriched.groupBy(*slice_keys).agg(*[
        F.call_function(jvm.MICROS_HISTOGRAM, F.col(column)).alias(basis) for basis, column in BASIS_COLUMNS.items()])
    stacked = per_phase.select(*slice_keys, F.explode(F.array(*[
        F.struct(F.lit(basis).alias("basis"), F.col(f"{basis}.pairs").alias("pairs")) for basis in BASIS_COLUMNS
    ])).alias("h")).select(*slice_keys, "h.basis", "h.pairs").where(F.size("pairs") > 0)
    run_keys = ["run_id", *by, "basis"]
    ranked = stacked.groupingSets([[*run_keys, "phase", "transition"], run_keys],
                                  *run_keys, "phase", "transition").agg(
        F.call_function(jvm.HISTOGRAM_RANKS, F.col("pairs")).alias("r"), F.grouping("phase").cast("int").alias("level"))
    return ranked.select(*run_keys, "level", "phase", "transition",
                         *[F.col(f"r.{qn}").alias(qn) for qn in QUANTILE_NAMES])


def metrics_per_second(metrics: DataFrame, t0: dict[str, int]) -> DataFrame:
    """Node metrics per run, node and second of the run (mean of the samples in that second)."""
    value_cols = [f for f in metrics.columns if f not in ("run_id", "node", "ts_ns")]
    return (
        with_t0(metrics, t0)
        .withColumn("sec", F.floor((F.col("ts_ns") - F.col("t0_ns")) / F.lit(1e9)).cast("long"))
        .groupBy("run_id", "node", "sec")
        .agg(*[F.avg(v).alias(v) for v in value_cols])
    )
