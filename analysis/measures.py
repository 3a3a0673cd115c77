"""Measure every expectation of every run: row metrics in one Spark aggregation, fault metrics in two more.

A measurement is a number, `inf` (the awaited thing never happened), or unknown (`value=None`) with a note
saying why it cannot be measured from this run directory (interrupted run, no read-back, fault never verified...).
Rules (architecture §6 and §8):
- every row metric (`count`, `rate`, `share`, latencies) needs its window delivered and whole (`analysis.delivery`):
  unknown when the phase (or, without a phase, any phase of the run) did not finish, the load did not keep its
  schedule in it, it had no sends, or the harness failed while its rows were being written; `count` and `rate`
  also when request parts were skipped, or when the window's times are not in events.jsonl. `share` and latency
  percentiles are measured over the rows there are; unknown when no row matches.
- loss metrics need a complete read-back (`not_on_slave`, `unseen_slave` also the slave's); `unexpected` also
  every request part. A node of which no queue could be read counts as not read; one read in part gives a value
  over what was read, with a note naming the queues it could not see (`LossCheck.metric_note`). When not every
  send has its request row (skipped parts, a load that died), a loss count is a lower bound: it can break a `max`,
  never prove one held. Loss metrics do not depend on the schedule: they judge the acknowledged sends there were.
- fault metrics need the fault's verify (first error) or revert (recovery); `inf` in an incomplete run is unknown.
- row metrics leave out the sends started in a fault's transition when they name a phase, count them without one,
  as the expectation's `transitions` says (`exclude` / `include` / `only`; analysis.transitions); `rate` divides by
  the window's time less (or only) the transitions in it. Fault timings count every send (see fault_timing).
- broker groups: the filter `broker` keeps the rows whose send ended on that group (their `broker`); `group_share`
  is the window's sends on the group over the window's sends (every other filter on both); a `broker` that is no
  group of the run (cluster.json's `groups`) is unknown. `group_leave_s` takes one more scan (analysis.group_leave).
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.delivery import Delivery, delivery
from analysis.expectations import (
    CONSUMER_METRICS,
    FAILOVER_METRICS,
    FAULT_METRICS,
    LATENCY_METRICS,
    LATENCY_QUANTILE,
    LOSS_METRICS,
    NODE_METRICS,
    PAGECACHE_METRICS,
    SEARCH_METRICS,
    Expectation,
)
from analysis.fault_timing import FaultSpec, FaultTiming, fault_timings, first_error_exprs
from analysis.group_leave import LeaveWindow, leave_window, measure_leave, seconds_on_group
from analysis.loss import SLAVE_METRICS, KeyFlags, LossCheck, flags
from analysis.rundir import RunDir
from analysis.stats import BASIS_COLUMNS, micros, nearest_rank
from analysis.timeline import NS
from analysis.transitions import overlap_ns, transitions_of

ROW_LOSS_METRICS = ("lost", "not_on_slave", "duplicated", "recovered", "unseen_master", "unseen_slave")


@dataclass
class Measurement:
    value: float | None  # None = unknown; math.inf = never happened
    note: str | None = None
    rows: int | None = None  # rows that matched the filters (row metrics)
    lower_bound: bool = False  # the true value is at least `value` (rows are missing)


@dataclass
class Window:
    """Rows of one expectation in one run, as Spark conditions, with what is known about their time window."""

    cond: Column  # all filters
    base: Column  # all but outcome/response_code/remark_contains (share's denominator); group_share's: all but broker
    start_ns: int | None
    end_ns: int | None
    complete: bool
    why_incomplete: str | None
    gap: str | None = None  # the window's phase (or a phase of the run) was not delivered: every metric unknown
    span_ns: int | None = None  # the window's time for `rate`: end - start, less (or only) the transitions in it
    refused: str | None = None  # the filters name what this run does not have (a broker group): unknown


def window(e: Expectation, run: RunDir, t0_ns: int | None, gaps: Delivery | None = None) -> Window:
    """The Spark conditions of an expectation's filters for one run, and whether its rows are all there."""
    tl = run.timeline
    gaps = gaps or Delivery()
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
    gap = gaps.gaps.get(e.phase) if e.phase is not None else gaps.first_gap()
    base, span = _transition_filter(e, run, base, start, end)
    if e.metric == "group_share":  # the window's sends that ended on the group / the window's sends
        cond = base & (F.col("broker") == F.lit(e.broker))
    else:
        base = base if e.broker is None else base & (F.col("broker") == F.lit(e.broker))
        cond = _outcome_filters(e, base)
    return Window(cond, base, start, end, complete, why, gap, span, refused=_unknown_broker(e, run))


def _unknown_broker(e: Expectation, run: RunDir) -> str | None:
    """Why a `broker` filter cannot be measured in this run: it names no broker group of the run (when the run
    says which it has: cluster.json's `groups`, analysis.rundir)."""
    if e.broker is None or not run.broker_groups or e.broker in run.broker_groups:
        return None
    return f"broker {e.broker!r} is not a broker group of this run (its groups: {', '.join(run.broker_groups)})"


def _transition_filter(e: Expectation, run: RunDir, cond: Column, start: int | None,
                       end: int | None) -> tuple[Column, int | None]:
    """`cond` and the expectation's `transitions` rule (Expectation.transition_rows) on the row's `transition`;
    the window's time that goes with it: all of it (include), less the transitions in it (exclude), or only them."""
    mode = e.transition_rows
    covered = 0
    if start is not None and end is not None and end > start:
        covered = overlap_ns(transitions_of(run.timeline), start, end)
    span = None if start is None or end is None else {"include": end - start, "exclude": end - start - covered,
                                                        "only": covered}[mode]
    if mode == "exclude":
        cond = cond & F.col("transition").isNull()
    elif mode == "only":
        cond = cond & F.col("transition").isNotNull()
    return cond, span


def _outcome_filters(e: Expectation, cond: Column) -> Column:
    """`cond` and the expectation's filters on a send's outcome (`outcome`, `response_code`, `remark_contains`)."""
    if e.outcome is not None:
        cond = cond & (F.col("outcome") == F.lit(e.outcome))
    if e.response_code is not None:
        cond = cond & (F.col("response_code") == F.lit(e.response_code))
    if e.remark_contains is not None:
        cond = cond & F.col("remark").contains(F.lit(e.remark_contains))
    return cond


def _aggregates(e: Expectation, w: Window, tag: str) -> list[Column]:
    n = F.sum(w.cond.cast("long")).alias(f"{tag}_n")
    if e.metric in ("share", "group_share"):
        return [n, F.sum(w.base.cast("long")).alias(f"{tag}_d")]
    if e.metric == "latency_max_ms":
        return [n, F.max(F.when(w.cond, F.col(BASIS_COLUMNS[e.basis]))).alias(f"{tag}_v")]
    if e.metric in ROW_LOSS_METRICS:
        return [n, F.sum((w.cond & flags()[e.metric]).cast("long")).alias(f"{tag}_v")]
    return [n]


def _lower_bound(m: Measurement, rows_note: str | None) -> Measurement:
    """A loss count over rows some of which are missing: at least this many."""
    if rows_note is None or m.value is None:
        return m
    note = f"a lower bound: {rows_note}" + (f"; {m.note}" if m.note else "")
    return Measurement(m.value, note, m.rows, lower_bound=True)


def _row_value(e: Expectation, w: Window, row: dict, tag: str, loss: LossCheck,
               rows_note: str | None = None) -> Measurement:
    n = int(row.get(f"{tag}_n") or 0)
    if (e.after_s is not None or e.before_s is not None) and w.start_ns is None:
        return Measurement(None, w.why_incomplete, 0)
    if w.refused is not None:
        return Measurement(None, w.refused, n)
    if w.gap is not None and e.metric not in ROW_LOSS_METRICS:
        return Measurement(None, w.gap, n)
    if e.metric in ("count", "rate") and not w.complete:
        return Measurement(None, f"not every row is there: {w.why_incomplete}", n)
    if e.metric == "count":
        return Measurement(float(n), None, n)
    if e.metric == "rate":
        if w.start_ns is None or w.end_ns is None or w.end_ns <= w.start_ns:
            return Measurement(None, "the time window is not known from events.jsonl", n)
        if not w.span_ns or w.span_ns <= 0:
            return Measurement(None, "no transition lies in the time window" if e.transition_rows == "only"
                               else "the time window is all transitions", n)
        return Measurement(n / (w.span_ns / NS), None, n)
    if e.metric in ("share", "group_share"):
        d = int(row.get(f"{tag}_d") or 0)
        return Measurement(n / d, None, n) if d else Measurement(None, "no sends match the filters", 0)
    if e.metric in LATENCY_METRICS:
        v = row.get(f"{tag}_v")
        return Measurement(float(v), None, n) if v is not None else Measurement(None, "no sends match the filters", 0)
    # loss metrics over filtered rows
    if not loss.measured or (e.metric in SLAVE_METRICS and not loss.slave_read):
        return Measurement(None, loss.note, n)
    return _lower_bound(Measurement(float(row.get(f"{tag}_v") or 0), loss.metric_note(e.metric), n), rows_note)


def _latency_percentiles(df: DataFrame, items: list[tuple[str, Expectation, Window]]) -> dict[str, float]:
    """tag -> the nearest-rank percentile (whole microseconds, as ms) of each latency expectation's rows."""
    wanted = [(tag, e, w) for tag, e, w in items if e.metric != "latency_max_ms"]
    if not wanted:
        return {}
    tagged = F.array_compact(F.array(*[
        F.when(w.cond, F.struct(F.lit(tag).alias("tag"), micros(F.col(BASIS_COLUMNS[e.basis])).alias("us")))
        for tag, e, w in wanted]))
    counts = df.select(F.explode(tagged).alias("t")).groupBy("t.tag", "t.us").agg(F.count(F.lit(1)).alias("c"))
    quantiles = sorted({LATENCY_QUANTILE[e.metric] for _, e, _ in wanted})
    names = [f"q{i}" for i in range(len(quantiles))]
    rows = {r["tag"]: r for r in nearest_rank(counts, ["tag"], "v", quantiles, names).collect()}
    return {tag: rows[tag][f"v_q{quantiles.index(LATENCY_QUANTILE[e.metric])}"] for tag, e, _ in wanted
            if tag in rows}


def _fault_rows(e: Expectation) -> tuple[Column | None, Column | None]:
    rows = None if e.client is None else F.col("client") == F.lit(e.client)
    return rows, _outcome_filters(e, F.col("outcome") != c.SEND_OK)


def measure(enriched: DataFrame, kf: KeyFlags | None, runs: Sequence[RunDir], t0: dict[str, int | None],
            loss: dict[str, LossCheck], report_specs: Sequence[FaultSpec] = ()
            ) -> tuple[dict[tuple[str, int], Measurement], dict[Hashable, FaultTiming], dict[str, Delivery]]:
    """Measure every expectation of every run (keys: (run_id, index in the run's `expect` list)), the fault
    timings of `report_specs` and each run's delivery (`analysis.delivery`) on the way.

    One aggregation over the request rows (joined with the loss flags only when a loss metric has filters)
    carries every row metric, every first error and the rows per phase; latency percentiles take one more scan,
    recoveries one more."""
    out: dict[tuple[str, int], Measurement] = {}
    loss_later: list[tuple[tuple[str, int], Expectation, RunDir]] = []
    phase_counts = {(r_i, p.name): F.sum(((F.col("run_id") == F.lit(run.run_id)) & (F.col("phase") == F.lit(p.name)))
                                         .cast("long")).alias(f"ph{r_i}x{j}")
                    for r_i, run in enumerate(runs) for j, p in enumerate(run.timeline.phases)}
    exprs: list[Column] = list(phase_counts.values())
    rows_needed: list[tuple[RunDir, int, Expectation, Window, str]] = []
    specs: list[FaultSpec] = list(report_specs)
    leaves: list[tuple[tuple[str, int], LeaveWindow | str]] = []
    joined = False
    for r_i, run in enumerate(runs):
        for i, e in enumerate(run.expectations):
            key = (run.run_id, i)
            if e.metric in CONSUMER_METRICS + PAGECACHE_METRICS + FAILOVER_METRICS + SEARCH_METRICS + NODE_METRICS:
                continue  # analysis.consume_measures, analysis.failover, analysis.search, analysis.nodes_back
            if e.metric == "group_leave_s":
                leaves.append((key, leave_window(f"r{r_i}x{i}", e, run)))
                continue
            if e.metric in LOSS_METRICS and not e.filters:
                loss_later.append((key, e, run))
            elif e.metric in FAULT_METRICS:
                fw = run.timeline.fault(e.fault or "")
                if fw is None:
                    out[key] = Measurement(None, f"no fault {e.fault!r} in events.jsonl")
                    continue
                rows, errs = _fault_rows(e)
                specs.append(FaultSpec(("expect", *key), run.run_id, fw, rows, errs))
            else:
                joined = joined or (e.metric in ROW_LOSS_METRICS and kf is not None)
                w = window(e, run, t0.get(run.run_id))
                tag = f"r{r_i}x{i}"
                exprs += _aggregates(e, w, tag)
                rows_needed.append((run, i, e, w, tag))
    rows_df = kf.annotate(enriched) if joined and kf is not None else enriched
    exprs += first_error_exprs(specs)
    values: dict = {}
    if exprs:
        row = rows_df.agg(*exprs).first()
        values = row.asDict() if row is not None else {}
    deliveries = {run.run_id: delivery(run, {p.name: int(values.get(f"ph{r_i}x{j}") or 0)
                                             for j, p in enumerate(run.timeline.phases)})
                  for r_i, run in enumerate(runs)}
    for run, _, e, w, _ in rows_needed:
        gaps = deliveries[run.run_id]
        w.gap = gaps.gaps.get(e.phase) if e.phase is not None else gaps.first_gap()
    values.update({f"{tag}_v": v for tag, v in _latency_percentiles(
        rows_df, [(tag, e, w) for _, _, e, w, tag in rows_needed if e.metric in LATENCY_METRICS]).items()})
    for run, i, e, w, tag in rows_needed:
        out[(run.run_id, i)] = _row_value(e, w, values, tag, loss[run.run_id], deliveries[run.run_id].rows_note)
    for key, e, run in loss_later:
        out[key] = _lower_bound(_loss_value(e, run, loss[run.run_id]), deliveries[run.run_id].rows_note)
    timings = fault_timings(enriched, specs, first_errors=values)
    by_run = {r.run_id: r for r in runs}
    seconds = seconds_on_group(enriched, [w for _, w in leaves if isinstance(w, LeaveWindow)])
    for key, w in leaves:
        value, note, n = measure_leave(w, seconds, by_run[key[0]].timeline.completed)
        out[key] = Measurement(value, note, n)
    for key, t in timings.items():
        if isinstance(key, tuple) and key and key[0] == "expect":
            run = by_run[key[1]]
            out[(key[1], key[2])] = _fault_value(run.expectations[key[2]], run, t.fault_to_first_error_s,
                                                 t.recovery_s, t.first_error_outcome)
    for key, m in out.items():  # a fault's timing in a phase that was not delivered is the harness's, not the broker's
        run = by_run[key[0]]
        e = run.expectations[key[1]]
        fw = run.timeline.fault(e.fault or "") if e.metric in (*FAULT_METRICS, "group_leave_s") else None
        if fw is not None and m.value is not None:
            gap = deliveries[run.run_id].gap_between(run.timeline, fw.shade_start_ns, fw.reverted_ns)
            if gap is not None:
                out[key] = Measurement(None, gap)
    return out, timings, deliveries


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
    if value is None:
        return Measurement(None, "no send (matching the filters) completed after the fault's "
                           + ("apply" if e.metric == "fault_to_first_error_s" else "revert"))
    if math.isinf(value):
        if not run.timeline.completed or not run.requests_complete:
            return Measurement(None, f"{what} in the rows there are, but the run did not complete")
        return Measurement(math.inf, what)
    return Measurement(value, note)


def _loss_value(e: Expectation, run: RunDir, loss: LossCheck) -> Measurement:
    """An unfiltered loss metric: the run's loss-check count."""
    if not loss.measured:
        return Measurement(None, loss.note)
    if e.metric == "unexpected" and not run.requests_complete:
        return Measurement(None, "request part files were skipped: read-back keys may lack their request row")
    value = loss.counts.get(e.metric)
    return Measurement(None, loss.note) if value is None else Measurement(float(value), loss.metric_note(e.metric))
