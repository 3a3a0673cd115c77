"""Send statistics per run, per phase and per second: counts, outcome mix, latency percentiles (Spark side).

Percentiles are nearest-rank values: the smallest latency with at least a fraction p of the sends at or below it,
i.e. rank ceil(p*n) of the sorted latencies (DuckDB's `quantile_disc`).
- Per phase and per run (and for expectations): exact, on latencies truncated to whole microseconds. The job
  counts sends per (group, microsecond) and walks the cumulative counts, so the work grows with the distinct
  microsecond values, not with the rows: it scales to soak runs. The report prints milliseconds with three
  decimals, so the truncation never shows.
- Per second (the charts): Spark's `percentile_approx` at accuracy `PERCENTILE_ACCURACY` (relative error
  1e-6). Its summary merges samples only when 2 * 1e-6 * n reaches 1, so for any second with fewer than 500,000
  sends it keeps every sample and the answer is exact (untruncated); above that, within 1e-6 * n ranks.
`max` is always the exact, untruncated maximum.

Two bases: `intended` = latency_ms (end - intended start: the open model's view, includes waiting in the load
generator) and `actual` = service_ms (end - actual start).
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.frames import jepsen_class, with_t0

QUANTILES = (0.5, 0.9, 0.99, 0.999)
PERCENTILE_ACCURACY = 1_000_000
OBJECT_AGG_FALLBACK = 1_000_000  # groups per task before Spark's object aggregation falls back to sorting
QUANTILE_NAMES = ("p50", "p90", "p99", "p999")
BASIS_COLUMNS = {"intended": "latency_ms", "actual": "service_ms"}
NS_PER_MS = 1_000_000
NS_PER_US = 1_000


def micros(ms: Column) -> Column:
    """A latency in ms as whole microseconds (truncated; rounded to the ns first, which it came from)."""
    return F.floor(F.round(ms * F.lit(NS_PER_MS)) / F.lit(NS_PER_US)).cast("long")


def outcome_counts(enriched: DataFrame) -> DataFrame:
    """run_id, phase, client, outcome, cls, response_code, remark_pattern: sends, an example remark, first/last
    start, last end and the maximum latencies. Every per-phase and per-run count is a sum of these rows.

    Grouped by the raw remark first, so the number-stripping regex runs once per distinct remark, not per row."""
    keys = ["run_id", "phase", "client", "outcome", "response_code"]
    raw = enriched.groupBy(*keys, "remark").agg(
        F.count(F.lit(1)).alias("sends"), F.min("start_ns").alias("first_start_ns"),
        F.max("start_ns").alias("last_start_ns"), F.max("end_ns").alias("last_end_ns"),
        F.max("latency_ms").alias("intended_max"), F.max("service_ms").alias("actual_max"))
    return raw.withColumn("remark_pattern", F.regexp_replace(F.col("remark"), "[0-9]+", "N")).groupBy(
        *keys, "remark_pattern").agg(
        F.sum("sends").alias("sends"), F.min("remark").alias("remark_example"),
        F.min("first_start_ns").alias("first_start_ns"), F.max("last_start_ns").alias("last_start_ns"),
        F.max("last_end_ns").alias("last_end_ns"), F.max("intended_max").alias("intended_max"),
        F.max("actual_max").alias("actual_max")).withColumn("cls", jepsen_class(F.col("outcome")))


def outcomes_per_second(enriched: DataFrame, words: Sequence[str] | None = None) -> DataFrame:
    """run_id, sec (by actual start), outcome, cls: sends (long format), optionally only for outcome `words`."""
    rows = enriched if words is None else enriched.where(F.col("outcome").isin(list(words)))
    return rows.groupBy("run_id", "sec", "outcome", "cls").agg(F.count(F.lit(1)).alias("sends"))


def intended_per_second(enriched: DataFrame) -> DataFrame:
    """run_id, sec (by intended start), intended: how many sends the schedule meant to start that second."""
    return enriched.groupBy("run_id", F.col("isec").alias("sec")).agg(F.count(F.lit(1)).alias("intended"))


def per_second(enriched: DataFrame) -> DataFrame:
    """run_id, sec (by actual start): sends, `n_<outcome word>` for the contract's words and `n_other` for the
    rest, exact maxima and the percentiles of both bases (see the module docstring on exactness). One scan."""
    cols = [F.count(F.lit(1)).alias("sends"), F.max("latency_ms").alias("intended_max"),
            F.max("service_ms").alias("actual_max")]
    for basis, column in BASIS_COLUMNS.items():
        arr = F.percentile_approx(F.col(column), list(QUANTILES), PERCENTILE_ACCURACY)
        cols += [arr[i].alias(f"{basis}_{name}") for i, name in enumerate(QUANTILE_NAMES)]
    cols += [F.sum((F.col("outcome") == F.lit(w)).cast("long")).alias(f"n_{w}") for w in c.OUTCOMES]
    cols.append(F.sum((~F.col("outcome").isin(list(c.OUTCOMES))).cast("long")).alias("n_other"))
    return enriched.groupBy("run_id", "sec").agg(*cols)


def latency_counts(enriched: DataFrame, basis: str) -> DataFrame:
    """run_id, phase, us, c: how many sends had each whole-microsecond latency (one basis)."""
    return enriched.groupBy("run_id", "phase", micros(F.col(BASIS_COLUMNS[basis])).alias("us")).agg(
        F.count(F.lit(1)).alias("c"))


def nearest_rank(counts: DataFrame, keys: Sequence[str], prefix: str,
                 quantiles: Sequence[float] = QUANTILES, names: Sequence[str] = QUANTILE_NAMES) -> DataFrame:
    """keys, `<prefix>_<name>` (ms) for each quantile, from (keys, us, c) rows (summed over other columns)."""
    per = counts.where(F.col("us").isNotNull()).groupBy(*keys, "us").agg(F.sum("c").alias("c"))
    upto = Window.partitionBy(*keys).orderBy("us").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ranked = per.withColumn("cum", F.sum("c").over(upto)).withColumn("n", F.sum("c").over(Window.partitionBy(*keys)))
    return ranked.groupBy(*keys).agg(*[
        (F.min(F.when(F.col("cum") >= F.ceil(F.col("n") * F.lit(q)), F.col("us"))) / F.lit(1000.0)).alias(
            f"{prefix}_{name}") for q, name in zip(quantiles, names, strict=True)])


def metrics_per_second(metrics: DataFrame, t0: dict[str, int]) -> DataFrame:
    """Node metrics per run, node and second of the run (mean of the samples in that second)."""
    value_cols = [f for f in metrics.columns if f not in ("run_id", "node", "ts_ns")]
    return (
        with_t0(metrics, t0)
        .withColumn("sec", F.floor((F.col("ts_ns") - F.col("t0_ns")) / F.lit(1e9)).cast("long"))
        .groupBy("run_id", "node", "sec")
        .agg(*[F.avg(v).alias(v) for v in value_cols])
    )
