"""Spark DataFrames of many run directories: requests, metrics, read-back, each with its declared schema.

The part files of all runs are read in one scan per kind (the `run_id` column tells the runs apart), with the
schema of `analysis/contract/schemas.py` converted to Spark's (never inferred). The request frame gets the columns
every later step groups by: the outcome's Jepsen class, the second of the run it started in, the remark with
its numbers replaced by `N` (so "period in queue: 205ms" and "...: 211ms" count as one remark), and the fault
transition its actual start fell in (`transition`, analysis.transitions; null outside one).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from analysis import contract as c
from analysis.rundir import RunDir, part_uri
from analysis.transitions import INTERRUPTED_PHASE, Transition

NS_PER_S = 1_000_000_000
MAP_LOOKUP_RUNS = 64
ARROW_TO_SPARK: dict[pa.DataType, T.DataType] = {
    pa.string(): T.StringType(),
    pa.int64(): T.LongType(),
    pa.int32(): T.IntegerType(),
    pa.float64(): T.DoubleType(),
}
REQUEST_COLUMNS = ("run_id", "client", "key", "intended_ns", "start_ns", "end_ns", "latency_ms", "service_ms",
                   "phase", "outcome", "response_code", "remark", "broker", "queue_id", "queue_offset")
"""The request columns the job reads (Parquet prunes the ones a query does not use: the place of a send, broker,
queue_id and queue_offset, is read only when the loss check has queues that were not read completely)."""
ENRICHED_COLUMNS = tuple(c for c in REQUEST_COLUMNS if c != "intended_ns")


def spark_schema(schema: pa.Schema) -> T.StructType:
    """The contract's pyarrow schema as a Spark schema (same names, types and nullability)."""
    return T.StructType([T.StructField(f.name, ARROW_TO_SPARK[f.type], f.nullable) for f in schema])


def read_parts(spark: SparkSession, paths: Sequence[Path], schema: pa.Schema) -> DataFrame:
    """All `paths` as one DataFrame with `schema` (read as `file:` URIs); an empty frame of that schema when there
    are none."""
    sschema = spark_schema(schema)
    if not paths:
        return spark.createDataFrame([], sschema)
    return spark.read.schema(sschema).parquet(*(part_uri(p) for p in paths))


def jepsen_class(outcome: Column) -> Column:
    """ok / fail / info of an outcome word (unknown words are info), as a Spark expression."""
    mapping = F.create_map(*[F.lit(x) for kv in c.OUTCOME_CLASS.items() for x in kv])
    return F.coalesce(mapping[outcome], F.lit(c.INFO))


@dataclass
class Frames:
    """The raw frames of all runs."""

    requests: DataFrame
    metrics: DataFrame
    readback: DataFrame


def load_frames(spark: SparkSession, runs: Sequence[RunDir]) -> Frames:
    """Read every run's valid part files, one scan per kind."""
    def parts(kind: str) -> list[Path]:
        return [p for r in runs for p in r.parts[kind]]

    return Frames(
        requests=read_parts(spark, parts(c.REQUESTS_DIR), c.REQUEST_SCHEMA),
        metrics=read_parts(spark, parts(c.METRICS_DIR), c.METRICS_SCHEMA),
        readback=read_parts(spark, parts(c.READBACK_DIR), c.READBACK_SCHEMA),
    )


def runs_frame(spark: SparkSession, t0: dict[str, int]) -> DataFrame:
    """One row per run: run_id and t0_ns, the zero of the run's time axis (wall ns)."""
    return spark.createDataFrame(sorted(t0.items()), "run_id string, t0_ns long")


def with_t0(df: DataFrame, t0: dict[str, int]) -> DataFrame:
    """Rows of the runs in `t0` with their run's `t0_ns` (others dropped): a literal map lookup for up to
    MAP_LOOKUP_RUNS runs (cheaper than a join on every scan), a broadcast join above."""
    if not t0:
        return df.where(F.lit(False)).withColumn("t0_ns", F.lit(None).cast("long"))
    if len(t0) <= MAP_LOOKUP_RUNS:
        lookup = F.create_map(*[F.lit(x) for k, v in sorted(t0.items()) for x in (k, v)])
        return df.withColumn("t0_ns", lookup[F.col("run_id")].cast("long")).where(F.col("t0_ns").isNotNull())
    return df.join(F.broadcast(runs_frame(df.sparkSession, t0)), "run_id", "inner")


def second_of(ns: Column, t0_ns: Column) -> Column:
    """Whole second of the run (floor, may be negative) of a wall-ns time."""
    return F.floor((ns - t0_ns) / F.lit(NS_PER_S)).cast("long")


TRANSITION_TYPE = "array<struct<s:bigint,e:bigint,label:string>>"


def _within(t: Transition, start: Column) -> Column:
    return (start >= F.lit(t.start_ns)) & (start < F.lit(t.end_ns)) if t.end_ns is not None else (
        start >= F.lit(t.start_ns))


def with_transitions(df: DataFrame, transitions: Mapping[str, Sequence[Transition]]) -> DataFrame:
    """`df` (run_id, phase, start_ns) with `transition`: the label of the fault transition its start lies in (the
    first that started, analysis.transitions), null outside every transition and for rows labelled `interrupted`.
    For up to MAP_LOOKUP_RUNS runs with transitions (a few each) a CASE on the run and the start (compiled with the
    rest of the scan), above that a broadcast join of each run's transitions and a filter of that array; no per-row
    work at all when no run has one."""
    have = {k: sorted(v, key=lambda t: t.start_ns) for k, v in transitions.items() if v}
    if not have:
        return df.withColumn("transition", F.lit(None).cast("string"))
    start = F.col("start_ns")
    keep = F.col("phase").isNull() | (F.col("phase") != F.lit(INTERRUPTED_PHASE))
    if len(have) <= MAP_LOOKUP_RUNS:
        label: Column | None = None
        for run, items in sorted(have.items()):
            inner = F.when(_within(items[0], start), F.lit(items[0].label))
            for t in items[1:]:
                inner = inner.when(_within(t, start), F.lit(t.label))
            cond = F.col("run_id") == F.lit(run)
            label = F.when(cond, inner) if label is None else label.when(cond, inner)
        return df.withColumn("transition", F.when(keep, label).cast("string"))
    small = df.sparkSession.createDataFrame(
        [(k, [(t.start_ns, t.end_ns, t.label) for t in v]) for k, v in sorted(have.items())],
        f"run_id string, _tr {TRANSITION_TYPE}")
    hits = F.filter(F.col("_tr"), lambda x: (x["s"] <= start) & (x["e"].isNull() | (start < x["e"])))
    return (df.join(F.broadcast(small), "run_id", "left")
            .withColumn("transition", F.when(keep, F.get(hits, 0)["label"])).drop("_tr"))


def enrich_requests(requests: DataFrame, t0: dict[str, int],
                    transitions: Mapping[str, Sequence[Transition]] | None = None) -> DataFrame:
    """The request columns the job uses, with `transition` (`with_transitions`), `cls`, `sec` (by start), `isec`
    (by intended start) and `remark_pattern`. Rows of runs not in `t0` (run id -> zero of its time axis) are
    dropped."""
    return (
        with_transitions(with_t0(requests.select(*REQUEST_COLUMNS), t0), transitions or {})
        .select(*ENRICHED_COLUMNS, "transition",
                jepsen_class(F.col("outcome")).alias("cls"),
                second_of(F.col("start_ns"), F.col("t0_ns")).alias("sec"),
                second_of(F.coalesce(F.col("intended_ns"), F.col("start_ns")), F.col("t0_ns")).alias("isec"),
                F.regexp_replace(F.col("remark"), "[0-9]+", "N").alias("remark_pattern"))
    )
