"""Measure every expectation of every run: row metrics in one Spark aggregation, fault metrics in two more.

A measurement is a number, `inf` (the awaited thing never happened), or unknown (`value=None`) with a note
saying why it cannot be measured from this run directory (interrupted run, no read-back, fault never verified...).
Rules (architecture §6 and §8):
- `count` and `rate` need every row of their window: unknown when request parts were skipped, when the phase
  (or, without a phase, the run) did not complete, or when the window's times are not in events.jsonl.
- `share` and latency percentiles are measured over the rows there are; unknown when no row matches.
- loss metrics need a complete read-back (`not_on_slave` also the slave's); `unexpected` also every request part.
- fault metrics need the fault's verify (first error) or revert (recovery); `inf` in an incomplete run is unknown.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.expectations import FAULT_METRICS, LATENCY_METRICS, LATENCY_QUANTILE, Expectation
from analysis.fault_timing import FaultSpec, fault_timings
from analysis.loss import LossCheck, flags
from analysis.rundir import RunDir
from analysis.stats import BASIS_COLUMNS, PERCENTILE_ACCURACY
from analysis.timeline import NS

ROW_LOSS_METRICS = ("lost", "not_on_slave", "duplicated", "recovered")


@dataclass
class Measurement:
    value: float | None  # None = unknown; math.inf = never happened
    note: str | None = None
    rows: int | None = None  # rows that matched the filters (row metrics)


@dataclass
class Window:
    """Rows of one expectation in one run, as Spark conditions, with what is known about their time window."""

    cond: Column  # all filters
    base: Column  # all filters but outcome/response_code/remark_contains (share's denominator)
    start_ns: int | None
    end_ns: int | None
    complete: bool
    why_incomplete: str | None


def window(e: Expectation, run: RunDir, t0_ns: int | None) -> Window:
    """The Spark conditions of an expectation's filters for one run, and whether its rows are all there."""
    tl = run.timeline
    base = F.col("run_id") == F.lit(run.run_id)
    if e.client is not None:
        base = base & (F.col("client") == F.lit(e.client))
    anchor, end, complete, why = t0_ns, None, tl.completed, None if tl.completed else f"run {tl.status}"
    if e.phase is not None:
        base = base & (F.col("phase") == F.lit(e.phase))
        ph = tl.phase(e.phase)
        if ph is None:
            anchor, end, complete, why = None, None, False, f"phase {e.phase!r} has no phase_start in events.jsonl"
        else:
            anchor, end, complete = ph.start_ns, ph.end_ns, ph.complete
            why = None if complete else f"phase {e.phase!r} did not complete"
    elif tl.phases:
        end = tl.phases[-1].end_ns
    else:
        end = tl.load_stop_ns or tl.run_end_ns
    start = anchor
    if e.after_s is not None or e.before_s is not None:
        if anchor is None:
            return Window(F.lit(False), F.lit(False), None, None, False, "no start time for after_s/before_s")
        if e.after_s is not None:
            start = anchor + int(e.after_s * NS)
            base = base & (F.col("start_ns") >= F.lit(start))
        if e.before_s is not None:
            stop = anchor + int(e.before_s * NS)
            base = base & (F.col("start_ns") < F.lit(stop))
            end = stop if end is None else min(end, stop)
    if not run.requests_complete:
        complete, why = False, "request part files were skipped (truncated)"
    cond = base
    if e.outcome is not None:
        cond = cond & (F.col("outcome") == F.lit(e.outcome))
    if e.response_code is not None:
        cond = cond & (F.col("response_code") == F.lit(e.response_code))
    if e.remark_contains is not None:
        cond = cond & F.col("remark").contains(F.lit(e.remark_contains))
    return Window(cond, base, start, end, complete, why)


def _aggregates(e: Expectation, w: Window, tag: str) -> list[Column]:
    n = F.sum(w.cond.cast("long")).alias(f"{tag}_n")
    if e.metric == "share":
        return [n, F.sum(w.base.cast("long")).alias(f"{tag}_d")]
    if e.metric in LATENCY_METRICS:
        col = F.when(w.cond, F.col(BASIS_COLUMNS[e.basis]))
        q = LATENCY_QUANTILE[e.metric]
        v = F.max(col) if q == 1.0 else F.percentile_approx(col, [q], PERCENTILE_ACCURACY)[0]
        return [n, v.alias(f"{tag}_v")]
    if e.metric in ROW_LOSS_METRICS:
        return [n, F.sum((w.cond & flags()[e.metric]).cast("long")).alias(f"{tag}_v")]
    return [n]


def _row_value(e: Expectation, w: Window, row: dict, tag: str, run: RunDir, loss: LossCheck) -> Measurement:
    n = int(row.get(f"{tag}_n") or 0)
    if e.metric in ("count", "rate") and not w.complete:
        return Measurement(None, f"not every row is there: {w.why_incomplete}", n)
    if e.metric == "count":
        return Measurement(float(n), None, n)
    if e.metric == "rate":
        if w.start_ns is None or w.end_ns is None or w.end_ns <= w.start_ns:
            return Measurement(None, "the time window is not known from events.jsonl", n)
        return Measurement(n / ((w.end_ns - w.start_ns) / NS), None, n)
    if e.metric == "share":
        d = int(row.get(f"{tag}_d") or 0)
        return Measurement(n / d, None, n) if d else Measurement(None, "no sends match the filters", 0)
    if e.metric in LATENCY_METRICS:
        v = row.get(f"{tag}_v")
        return Measurement(float(v), None, n) if v is not None else Measurement(None, "no sends match the filters", 0)
    # loss metrics
    if not loss.measured:
        return Measurement(None, loss.note, n)
    if e.metric == "not_on_slave" and not loss.slave_read:
        return Measurement(None, loss.note, n)
    return Measurement(float(row.get(f"{tag}_v") or 0), None, n)


def _fault_rows(e: Expectation) -> tuple[Column | None, Column | None]:
    rows = None if e.client is None else F.col("client") == F.lit(e.client)
    errs = F.col("outcome") != c.SEND_OK
    if e.outcome is not None:
        errs = errs & (F.col("outcome") == F.lit(e.outcome))
    if e.response_code is not None:
        errs = errs & (F.col("response_code") == F.lit(e.response_code))
    if e.remark_contains is not None:
        errs = errs & F.col("remark").contains(F.lit(e.remark_contains))
    return rows, errs


def measure(annotated: DataFrame, runs: Sequence[RunDir], t0: dict[str, int | None],
            loss: dict[str, LossCheck]) -> dict[tuple[str, int], Measurement]:
    """Measure every expectation of every run; keys are (run_id, index in the run's `expect` list)."""
    out: dict[tuple[str, int], Measurement] = {}
    exprs: list[Column] = []
    rows_needed: list[tuple[RunDir, int, Expectation, Window, str]] = []
    specs: list[FaultSpec] = []
    for r_i, run in enumerate(runs):
        for i, e in enumerate(run.expectations):
            if e.metric == "unexpected":
                out[(run.run_id, i)] = _unexpected(run, loss[run.run_id])
            elif e.metric in FAULT_METRICS:
                fw = run.timeline.fault(e.fault or "")
                if fw is None:
                    out[(run.run_id, i)] = Measurement(None, f"no fault {e.fault!r} in events.jsonl")
                    continue
                rows, errs = _fault_rows(e)
                specs.append(FaultSpec((run.run_id, i), run.run_id, fw, rows, errs))
            else:
                w = window(e, run, t0.get(run.run_id))
                tag = f"r{r_i}x{i}"
                exprs += _aggregates(e, w, tag)
                rows_needed.append((run, i, e, w, tag))
    if exprs:
        row = annotated.agg(*exprs).first()
        values = row.asDict() if row is not None else {}
        for run, i, e, w, tag in rows_needed:
            out[(run.run_id, i)] = _row_value(e, w, values, tag, run, loss[run.run_id])
    by_run = {r.run_id: r for r in runs}
    for key, t in fault_timings(annotated, specs).items():
        run = by_run[key[0]]
        out[key] = _fault_value(run.expectations[key[1]], run, t.fault_to_first_error_s, t.recovery_s,
                                t.first_error_outcome)
    return out


def _fault_value(e: Expectation, run: RunDir, first: float | None, recovery: float | None,
                 outcome: str | None) -> Measurement:
    fw = run.timeline.fault(e.fault or "")
    assert fw is not None
    if e.metric == "fault_to_first_error_s":
        if fw.verified_ns is None:
            return Measurement(None, f"fault {fw.fault_id!r} was never verified (no 'verify ok' event)")
        value, what = first, "no matching non-SEND_OK outcome after the fault was applied"
        note = f"first: {outcome}" if outcome else None
    else:
        if fw.reverted_ns is None:
            return Measurement(None, f"fault {fw.fault_id!r} was never reverted (no 'revert ok' event)")
        value, what, note = recovery, "no clean second after the revert", None
    if value is not None and math.isinf(value):
        if not run.timeline.completed or not run.requests_complete:
            return Measurement(None, f"{what} in the rows there are, but the run did not complete")
        return Measurement(math.inf, what)
    return Measurement(value, note)


def _unexpected(run: RunDir, loss: LossCheck) -> Measurement:
    if not loss.measured:
        return Measurement(None, loss.note)
    if not run.requests_complete:
        return Measurement(None, "request part files were skipped: read-back keys may lack their request row")
    return Measurement(float(loss.counts.get("unexpected") or 0))
