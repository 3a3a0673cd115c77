"""Fault timings: from a fault's verified apply to the first non-SEND_OK outcome, and from its revert to a clean second.

- fault_to_first_error_s = (end of the first send that completed with an outcome other than SEND_OK, among the
  sends that completed after the fault's apply started) - (time of the fault's `verify ok` event). Negative when
  errors began while the effect was still being verified.
- recovery_s = k of the first clean second [revert + k s, revert + (k+1) s) after the fault's `revert ok` event,
  counting sends by completion time; a clean second has at least one completed send and all of them SEND_OK.

Both can be narrowed by a filter (e.g. one client, or "first SLAVE_NOT_AVAILABLE"). `inf` means it never
happened within the rows of the run; `None` means it cannot be measured (the fault was never verified/reverted).
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.timeline import NS, FaultWindow


@dataclass
class FaultSpec:
    """One fault timing to measure: rows of `run_id` matching `rows` (default all); errors matching `errors`
    (default: outcome other than SEND_OK)."""

    key: Hashable
    run_id: str
    fault: FaultWindow
    rows: Column | None = None
    errors: Column | None = None


@dataclass
class FaultTiming:
    key: Hashable
    first_error_ns: int | None = None
    first_error_outcome: str | None = None
    fault_to_first_error_s: float | None = None
    recovery_s: float | None = None


def fault_timings(annotated: DataFrame, specs: Sequence[FaultSpec]) -> dict[Hashable, FaultTiming]:
    """Measure every spec in two Spark jobs (one for first errors, one for clean seconds)."""
    out = {s.key: FaultTiming(s.key) for s in specs}
    _first_errors(annotated, [s for s in specs if s.fault.verified_ns is not None], out)
    _recoveries(annotated, [s for s in specs if s.fault.reverted_ns is not None], out)
    return out


def _rows(s: FaultSpec) -> Column:
    cond = F.col("run_id") == s.run_id
    return cond if s.rows is None else cond & s.rows


def _first_errors(df: DataFrame, specs: Sequence[FaultSpec], out: dict[Hashable, FaultTiming]) -> None:
    if not specs:
        return
    exprs = []
    for i, s in enumerate(specs):
        err = s.errors if s.errors is not None else F.col("outcome") != c.SEND_OK
        since = s.fault.shade_start_ns
        cond = _rows(s) & err & (F.col("end_ns") >= F.lit(since))
        exprs.append(F.min(F.when(cond, F.struct("end_ns", "outcome"))).alias(f"e{i}"))
    row = df.agg(*exprs).first()
    for i, s in enumerate(specs):
        t = out[s.key]
        hit = row[f"e{i}"] if row is not None else None
        if hit is None:
            t.fault_to_first_error_s = math.inf
            continue
        t.first_error_ns, t.first_error_outcome = hit["end_ns"], hit["outcome"]
        t.fault_to_first_error_s = (hit["end_ns"] - s.fault.verified_ns) / NS


def _recoveries(df: DataFrame, specs: Sequence[FaultSpec], out: dict[Hashable, FaultTiming]) -> None:
    if not specs:
        return
    parts = []
    for i, s in enumerate(specs):
        rev = s.fault.reverted_ns
        parts.append(
            df.where(_rows(s) & (F.col("end_ns") >= F.lit(rev)))
            .select(F.lit(i).alias("spec"),
                    F.floor((F.col("end_ns") - F.lit(rev)) / F.lit(NS)).cast("long").alias("k"),
                    (F.col("outcome") != c.SEND_OK).cast("long").alias("bad"))
        )
    seconds = reduce(DataFrame.unionByName, parts)
    clean = (
        seconds.groupBy("spec", "k").agg(F.sum("bad").alias("bad"))
        .where(F.col("bad") == 0)
        .groupBy("spec").agg(F.min("k").alias("k"))
        .collect()
    )
    first = {r["spec"]: r["k"] for r in clean}
    for i, s in enumerate(specs):
        out[s.key].recovery_s = float(first[i]) if i in first else math.inf
