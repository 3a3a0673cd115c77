"""Fault timings: from a fault's verified apply to the first non-SEND_OK outcome, and from its revert to a clean second.

- fault_to_first_error_s = (end of the first send that completed with an outcome other than SEND_OK, among the
  sends that completed after the fault's apply started) - (time of the fault's `verify ok` event). Negative when
  errors began while the effect was still being verified.
- recovery_s = k of the first clean second [revert + k s, revert + (k+1) s) after the fault's `revert ok` event,
  counting sends by completion time; a clean second has at least one completed send and all of them SEND_OK.

Both count every send, the fault's transitions' too (analysis.transitions): the first error is looked for from the
apply's start on purpose (an error while the effect is being verified gives a negative time), and a send started
while the fault was being reverted that completes after its `revert ok` is part of what producers see after it.

Both can be narrowed by a filter (e.g. one client, or "first SLAVE_NOT_AVAILABLE"). `inf` means it never
happened although sends completed after the apply (revert); `None` means it cannot be measured: the fault was
never verified (reverted), or no send completed after it (e.g. a fault reverted only after the load stopped).
All first errors are one aggregation (whose expressions other aggregations can carry along), all recoveries one
more scan.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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

    def row_cond(self) -> Column:
        cond = F.col("run_id") == F.lit(self.run_id)
        return cond if self.rows is None else cond & self.rows


@dataclass
class FaultTiming:
    key: Hashable
    first_error_ns: int | None = None
    first_error_outcome: str | None = None
    fault_to_first_error_s: float | None = None
    recovery_s: float | None = None


def first_error_exprs(specs: Sequence[FaultSpec]) -> list[Column]:
    """Aggregate expressions (aliases `fe<i>`) of each verified spec's first error: struct(end_ns, outcome)."""
    exprs = []
    for i, s in enumerate(specs):
        if s.fault.verified_ns is None:
            continue
        err = s.errors if s.errors is not None else F.col("outcome") != c.SEND_OK
        after = s.row_cond() & (F.col("end_ns") >= F.lit(s.fault.shade_start_ns))
        exprs.append(F.min(F.when(after & err, F.struct("end_ns", "outcome"))).alias(f"fe{i}"))
        exprs.append(F.sum(after.cast("long")).alias(f"fn{i}"))
    return exprs


def read_first_errors(row: Mapping[str, Any], specs: Sequence[FaultSpec], out: dict[Hashable, FaultTiming]) -> None:
    for i, s in enumerate(specs):
        if s.fault.verified_ns is None:
            continue
        t = out[s.key]
        hit = row.get(f"fe{i}")
        if hit is None:  # never, if sends completed after the apply; else not measurable (None)
            t.fault_to_first_error_s = math.inf if row.get(f"fn{i}") else None
            continue
        t.first_error_ns, t.first_error_outcome = hit["end_ns"], hit["outcome"]
        t.fault_to_first_error_s = (hit["end_ns"] - s.fault.verified_ns) / NS


def fault_timings(requests: DataFrame, specs: Sequence[FaultSpec],
                  first_errors: Mapping[str, Any] | None = None) -> dict[Hashable, FaultTiming]:
    """Measure every spec. `first_errors`: the row of an aggregation that already carried `first_error_exprs`
    (otherwise one aggregation here)."""
    out = {s.key: FaultTiming(s.key) for s in specs}
    exprs = first_error_exprs(specs)
    if exprs and first_errors is None:
        row = requests.agg(*exprs).first()
        first_errors = row.asDict() if row is not None else {}
    read_first_errors(first_errors or {}, specs, out)
    _recoveries(requests, specs, out)
    return out


def _recoveries(df: DataFrame, specs: Sequence[FaultSpec], out: dict[Hashable, FaultTiming]) -> None:
    """One scan: each row goes to the (spec, second after revert) it belongs to; the first clean second wins."""
    reverted = [(i, s) for i, s in enumerate(specs) if s.fault.reverted_ns is not None]
    if not reverted:
        return
    entries = F.array_compact(F.array(*[
        F.when(s.row_cond() & (F.col("end_ns") >= F.lit(s.fault.reverted_ns)), F.struct(
            F.lit(i).alias("spec"),
            F.floor((F.col("end_ns") - F.lit(s.fault.reverted_ns)) / F.lit(NS)).cast("long").alias("k")))
        for i, s in reverted]))
    seconds = df.select(F.explode(entries).alias("e"), (F.col("outcome") != c.SEND_OK).cast("long").alias("bad"))
    found = (
        seconds.groupBy("e.spec", "e.k").agg(F.sum("bad").alias("bad"))
        .groupBy("spec").agg(F.min(F.when(F.col("bad") == 0, F.col("k"))).alias("k"))
        .collect()
    )
    first = {r["spec"]: r["k"] for r in found}  # a spec without any send after the revert is absent: None
    for i, s in reverted:
        if i in first:
            out[s.key].recovery_s = math.inf if first[i] is None else float(first[i])
