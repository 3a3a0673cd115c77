"""Send statistics per run, per phase and per second: counts, achieved rate, latency percentiles, outcome mix.

Percentiles are nearest-rank (the smallest latency with at least p of the sends at or below it; the same value a
sorted list gives at rank ceil(p*n)), computed with Spark's `percentile_approx` at an accuracy of
`PERCENTILE_ACCURACY`: exact up to groups of that many rows, and within n/PERCENTILE_ACCURACY ranks above.
`max` is exact. Two bases: `intended` = latency_ms (end - intended start, the open model's view, includes
queueing in the load generator) and `actual` = service_ms (end - actual start).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis import contract as c

PERCENTILE_ACCURACY = 1_000_000
QUANTILES = (0.5, 0.9, 0.99, 0.999)
QUANTILE_NAMES = ("p50", "p90", "p99", "p999")
BASIS_COLUMNS = {"intended": "latency_ms", "actual": "service_ms"}


def percentile_cols(value: Column, prefix: str) -> list[Column]:
    """`<prefix>_p50 ... <prefix>_p999, <prefix>_max` of `value` (nulls ignored)."""
    arr = F.percentile_approx(value, list(QUANTILES), PERCENTILE_ACCURACY)
    cols = [arr[i].alias(f"{prefix}_{name}") for i, name in enumerate(QUANTILE_NAMES)]
    return [*cols, F.max(value).alias(f"{prefix}_max")]


def latency_cols() -> list[Column]:
    """Percentiles of both bases: `intended_*` from latency_ms, `actual_*` from service_ms."""
    return [col for basis, name in BASIS_COLUMNS.items() for col in percentile_cols(F.col(name), basis)]


def class_cols() -> list[Column]:
    """Counts of sends, of SEND_OK and of each Jepsen class."""
    return [
        F.count(F.lit(1)).alias("sends"),
        F.sum((F.col("outcome") == c.SEND_OK).cast("long")).alias("send_ok"),
        *[F.sum((F.col("cls") == k).cast("long")).alias(k) for k in c.JEPSEN_CLASSES],
    ]


def per_second(enriched: DataFrame) -> DataFrame:
    """run_id, sec (by actual start), sends, send_ok, ok/fail/info, percentiles of both bases."""
    return enriched.groupBy("run_id", "sec").agg(*class_cols(), *latency_cols())


def intended_per_second(enriched: DataFrame) -> DataFrame:
    """run_id, sec (by intended start), intended: how many sends the schedule meant to start that second."""
    return enriched.groupBy("run_id", F.col("isec").alias("sec")).agg(F.count(F.lit(1)).alias("intended"))


def outcomes_per_second(enriched: DataFrame) -> DataFrame:
    """run_id, sec, outcome, sends: the stacked-outcome series."""
    return enriched.groupBy("run_id", "sec", "outcome").agg(F.count(F.lit(1)).alias("sends"))


def per_phase(enriched: DataFrame) -> DataFrame:
    """run_id, phase (null row = the whole run, `all_phases` true), counts, first/last start, percentiles."""
    return (
        enriched.rollup("run_id", "phase")
        .agg(
            F.grouping("phase").alias("all_phases"),
            *class_cols(),
            F.min("start_ns").alias("first_start_ns"),
            F.max("start_ns").alias("last_start_ns"),
            F.max("end_ns").alias("last_end_ns"),
            *latency_cols(),
        )
        .where(F.col("run_id").isNotNull())
    )


def outcome_counts(enriched: DataFrame) -> DataFrame:
    """run_id, phase, client, outcome, cls, response_code, remark_pattern, sends, an example remark."""
    return enriched.groupBy("run_id", "phase", "client", "outcome", "cls", "response_code", "remark_pattern").agg(
        F.count(F.lit(1)).alias("sends"), F.min("remark").alias("remark_example"))


def metrics_per_second(metrics: DataFrame, runs: DataFrame) -> DataFrame:
    """Node metrics per run, node and second of the run (mean of the samples in that second)."""
    value_cols = [f for f in metrics.columns if f not in ("run_id", "node", "ts_ns")]
    return (
        metrics.join(F.broadcast(runs), "run_id", "inner")
        .withColumn("sec", F.floor((F.col("ts_ns") - F.col("t0_ns")) / F.lit(1e9)).cast("long"))
        .groupBy("run_id", "node", "sec")
        .agg(*[F.avg(v).alias(v) for v in value_cols])
    )
