"""The Spark part of the job: run directories in, small per-run results (Arrow tables and dicts) out.

All runs are computed together (one scan per step, `run_id` tells them apart); the results are small enough
for the driver: per-second series, per-phase rows, outcome counts, node metrics, loss checks, fault timings and
the verdicts.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from analysis import stats
from analysis.fault_timing import FaultSpec, fault_timings
from analysis.frames import enrich_requests, load_frames, runs_frame
from analysis.loss import LossCheck, annotate, loss_checks, readback_keys
from analysis.measures import measure
from analysis.rundir import RunDir
from analysis.timeline import NS
from analysis.verdict import RunVerdict, judge

Step = Callable[[str], None]


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


def _split(table: pa.Table, run_id: str, sort: Sequence[str] = ()) -> pa.Table:
    t = table.filter(pc.equal(table["run_id"], run_id)).drop_columns(["run_id"])
    return t.sort_by([(k, "ascending") for k in sort]) if sort and t.num_rows else t


def _raw_counts(requests: DataFrame) -> dict[str, dict[str, int]]:
    rows = requests.groupBy("run_id").agg(F.count(F.lit(1)).alias("rows"), F.min("start_ns").alias("first"),
                                          F.max("end_ns").alias("last")).collect()
    return {r["run_id"]: r.asDict() for r in rows}


def compute(spark: SparkSession, runs: Sequence[RunDir], step: Step = lambda _: None) -> list[RunResults]:
    """Run every Spark step for all `runs` and return their results in the same order."""
    step("reading part files")
    ids = [r.run_id for r in runs]
    frames = load_frames(spark, runs)
    raw = _raw_counts(frames.requests)
    warnings: dict[str, list[str]] = {r.run_id: list(r.warnings) for r in runs}
    for run in runs:
        if run.parts["requests"] and raw.get(run.run_id, {}).get("rows", 0) == 0:
            others = sorted(set(raw) - set(ids))
            warnings[run.run_id].append(f"requests/: no row has run_id {run.run_id!r}"
                                        + (f" (found {', '.join(others[:3])})" if others else ""))
    t0 = {r.run_id: r.timeline.t0_ns if r.timeline.t0_ns is not None else raw.get(r.run_id, {}).get("first")
          for r in runs}
    runs_df = runs_frame(spark, {k: v for k, v in t0.items() if v is not None})

    step("joining requests with the read-back")
    readback_runs = {r.run_id: r.timeline.readback_nodes for r in runs if r.readback_complete}
    rb_keys = readback_keys(frames.readback) if readback_runs else None
    enriched = enrich_requests(frames.requests, runs_df)
    annotated = annotate(enriched, rb_keys, list(readback_runs)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        step("per-second and per-phase statistics")
        per_sec = stats.per_second(annotated).toArrow()
        intended = stats.intended_per_second(annotated).toArrow()
        out_sec = stats.outcomes_per_second(annotated).toArrow()
        phases = stats.per_phase(annotated).toArrow()
        counts = stats.outcome_counts(annotated).toArrow()
        metrics = stats.metrics_per_second(frames.metrics, runs_df).toArrow()

        step("loss check")
        loss = loss_checks(annotated, frames.readback, rb_keys, readback_runs, ids)

        step("fault timings and expectations")
        specs = [FaultSpec((r.run_id, f.fault_id), r.run_id, f) for r in runs for f in r.timeline.faults]
        timings = fault_timings(annotated, specs)
        measured = measure(annotated, runs, t0, loss)
    finally:
        annotated.unpersist()

    results = []
    for run in runs:
        rid = run.run_id
        verdict = RunVerdict(rid, run.scenario_name,
                             [judge(e, measured[(rid, i)]) for i, e in enumerate(run.expectations)])
        faults = [_fault_row(run, f, timings[(rid, f.fault_id)], t0[rid]) for f in run.timeline.faults]
        results.append(RunResults(
            run=run, t0_ns=t0[rid], rows=int(raw.get(rid, {}).get("rows", 0)),
            per_second=_merge_intended(_split(per_sec, rid, ["sec"]), _split(intended, rid, ["sec"])),
            outcomes_per_second=_split(out_sec, rid, ["sec", "outcome"]),
            per_phase=_phase_rows(run, _split(phases, rid)),
            outcome_counts=_split(counts, rid, ["phase", "outcome"]),
            metrics_per_second=_split(metrics, rid, ["node", "sec"]),
            loss=loss[rid], faults=faults, verdict=verdict, warnings=warnings[rid],
        ))
        verdict.extra = {"loss": loss[rid].to_json(), "faults": faults, "warnings": warnings[rid],
                         "run_status": run.timeline.status}
    return results


def _merge_intended(per_sec: pa.Table, intended: pa.Table) -> pa.Table:
    """Per-second rows for every second that has sends or intended sends; `intended` column added."""
    joined = per_sec.join(intended, "sec", join_type="full outer")
    for name in ("sends", "send_ok", "ok", "fail", "info", "intended"):
        joined = joined.set_column(joined.schema.get_field_index(name), name, pc.fill_null(joined[name], 0))
    return joined.sort_by("sec")


def _phase_rows(run: RunDir, table: pa.Table) -> list[dict[str, Any]]:
    """Per-phase rows in the order the phases ran, the whole run last, with duration and achieved rate."""
    rows = table.to_pylist()
    order = {p.name: i for i, p in enumerate(run.timeline.phases)}
    out = []
    for row in rows:
        whole = bool(row.pop("all_phases"))
        name = row.get("phase")
        ph = None if whole else run.timeline.phase(name) if name is not None else None
        if whole:
            phases = run.timeline.phases
            start = phases[0].start_ns if phases else row["first_start_ns"]
            end = phases[-1].end_ns if phases else row["last_end_ns"]
            complete = run.timeline.completed
        else:
            start, end = (ph.start_ns, ph.end_ns) if ph else (None, None)
            complete = bool(ph and ph.complete)
        seconds = (end - start) / NS if start is not None and end is not None and end > start else None
        row.update(phase="(whole run)" if whole else name, whole_run=whole, seconds=seconds,
                   rate=row["sends"] / seconds if seconds else None, complete=complete and run.requests_complete,
                   ok_share=row["send_ok"] / row["sends"] if row["sends"] else None)
        out.append(row)
    out.sort(key=lambda r: (r["whole_run"], order.get(r["phase"], len(order)), str(r["phase"])))
    return out


def _fault_row(run: RunDir, f: Any, timing: Any, t0: int | None) -> dict[str, Any]:
    def rel(ns: int | None) -> float | None:
        return None if ns is None or t0 is None else (ns - t0) / NS

    def finite(v: float | None) -> float | None:
        return None if v is None or v == float("inf") else v

    return {
        "fault_id": f.fault_id, "kind": f.kind, "target": f.target, "status": f.status, "errors": f.errors,
        "apply_s": rel(f.shade_start_ns), "verified_s": rel(f.verified_ns), "reverted_s": rel(f.reverted_ns),
        "first_error_s": rel(timing.first_error_ns), "first_error_outcome": timing.first_error_outcome,
        "fault_to_first_error_s": finite(timing.fault_to_first_error_s),
        "recovery_s": finite(timing.recovery_s),
        "never_failed": timing.fault_to_first_error_s == float("inf"),
        "never_recovered": timing.recovery_s == float("inf"),
        "evidence": f.evidence,
    }
