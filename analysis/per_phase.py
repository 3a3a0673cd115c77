"""The report's per-phase rows of one run: one per slice, a phase's own sends and, apart, each transition of a fault
(analysis.transitions), then the whole run. No Spark: sums of the outcome-count rows and the percentile tables.

- A phase's row counts the sends the load gave that phase (by intended time) that did not start in a transition;
  its seconds are the phase's window less the transitions within it, so its rate is over the time its faults were
  in effect (and the time around them without one).
- A transition slice (`readonly (transition: ro revert)`) counts the phase's sends started in that transition; its
  seconds are the part of the transition within the phase's window (analysis.transitions.seconds_of).
- The whole run counts every send (phases and their transitions, and rows of no known phase); its seconds run from
  the first phase start to the last phase end. A phase's row plus its transition slices make the phase's sends.
A phase without a transition in its window has one row, as before transitions existed.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from analysis import contract as c
from analysis import stats
from analysis.rundir import RunDir
from analysis.timeline import NS
from analysis.transitions import Transition, overlap_ns, seconds_of, slice_name, transitions_of


def empty_counts() -> dict[str, Any]:
    return {"sends": 0, "send_ok": 0, **dict.fromkeys(c.JEPSEN_CLASSES, 0), "intended_max": None,
            "actual_max": None}


def _add_counts(acc: dict[str, Any], row: dict[str, Any]) -> None:
    acc["sends"] += row["sends"]
    acc["send_ok"] += row["sends"] if row["outcome"] == c.SEND_OK else 0
    acc[row["cls"]] += row["sends"]
    for k in ("intended_max", "actual_max"):
        if row[k] is not None:
            acc[k] = row[k] if acc[k] is None else max(acc[k], row[k])


def _percentiles(pct: dict[str, pa.Table], level: str) -> dict[Any, dict[str, float]]:
    """(phase, transition) (or None for the run) -> `<basis>_<q>` columns of both bases."""
    out: dict[Any, dict[str, float]] = {}
    for basis in stats.BASIS_COLUMNS:
        for r in pct[f"{basis}_{level}"].to_pylist():
            key = (r.get("phase"), r.get("transition")) if level == "phase" else None
            out.setdefault(key, {}).update({k: v for k, v in r.items() if k.startswith(f"{basis}_")})
    return out


def per_phase(run: RunDir, counts: pa.Table, pct: dict[str, pa.Table]) -> list[dict[str, Any]]:
    """Per-slice rows in the order the phases ran (each phase's transitions after it, in the order they started),
    the whole run last: counts, seconds, rate, percentiles; `phase`, `transition` (null for the phase's own row),
    `slice` (the name the report shows) and `whole_run`."""
    tl = run.timeline
    trs = transitions_of(tl)
    by_label = {t.label: t for t in trs}
    groups: dict[tuple[Any, Any], dict[str, Any]] = {}
    whole = empty_counts()
    firsts, lasts = [], []
    for row in counts.to_pylist():
        acc = groups.setdefault((row["phase"], row.get("transition")), empty_counts())
        _add_counts(acc, row)
        _add_counts(whole, row)
        firsts += [row["first_start_ns"]] if row["first_start_ns"] is not None else []
        lasts += [row["last_end_ns"]] if row["last_end_ns"] is not None else []
    start = tl.phases[0].start_ns if tl.phases else min(firsts, default=None)
    run_end = tl.phases[-1].end_ns if tl.phases else max(lasts, default=None)
    pcts = _percentiles(pct, "phase")
    order = {p.name: i for i, p in enumerate(tl.phases)}
    out = []
    for (name, transition), acc in groups.items():
        ph = tl.phase(name) if name is not None else None
        window = (ph.start_ns, ph.end_ns) if ph else (None, None)
        tr = by_label.get(transition) if transition is not None else None
        row = {"phase": name, "transition": transition, "slice": slice_name(name, transition), "whole_run": False,
               **acc, "complete": bool(ph and ph.complete)}
        row.update(pcts.get((name, transition), {}))
        out.append(_finish(row, _seconds(window, trs, tr, transition, run_end), run))
    row = {"phase": "(whole run)", "transition": None, "slice": "(whole run)", "whole_run": True, **whole,
           "complete": tl.completed}
    row.update(_percentiles(pct, "run").get(None, {}))
    out.append(_finish(row, (run_end - start) / NS if start is not None and run_end is not None
                       and run_end > start else None, run))
    starts = {t.label: t.start_ns for t in trs}
    out.sort(key=lambda r: (r["whole_run"], order.get(r["phase"], len(order)), str(r["phase"]),
                            r["transition"] is not None, starts.get(r["transition"], 0), str(r["transition"])))
    return out


def _seconds(window: tuple[int | None, int | None], trs: list[Transition], tr: Transition | None,
             transition: str | None, run_end: int | None) -> float | None:
    start, end = window
    if transition is not None:
        return seconds_of(tr, window, run_end) if tr is not None else None
    if start is None or end is None or end <= start:
        return None
    return (end - start - overlap_ns(trs, start, end)) / NS


def _finish(row: dict[str, Any], seconds: float | None, run: RunDir) -> dict[str, Any]:
    for basis in stats.BASIS_COLUMNS:
        for q in stats.QUANTILE_NAMES:
            row.setdefault(f"{basis}_{q}", None)
    seconds = seconds if seconds else None
    row.update(seconds=seconds, rate=row["sends"] / seconds if seconds else None,
               ok_share=row["send_ok"] / row["sends"] if row["sends"] else None,
               complete=row["complete"] and run.requests_complete)
    return row
