"""The sustainable-rate search of a phase (scenario `search:`, issue 27), recomputed from the request rows.

While such a phase runs, the harness's live controller (OpenMessaging Benchmark's RateController rules) changes the
open-model rate every step and writes `search_start`, one `search_step` per step and `search_end` (architecture §4).
Its live figures only steered it; here every step of every run is recomputed from the rows whose `intended_ns` lies
in the step's window [start_ns, end_ns), in one Spark aggregation:
- achieved = rows / window seconds; error_share = rows not SEND_OK / rows; p99_ms = the nearest-rank 99th
  percentile of the latency from the intended start, on whole microseconds (as `latency_p99_ms`); backlog =
  round(rate x window seconds) - rows, at least 0 (slots the schedule owed that were never sent); lag_max = the
  largest consumer lag (a group's, summed over its queues) sampled in the window, None without `metrics/lag/`.
- within: every bound of `search_start.bounds` that is not null holds; a figure that could not be measured (no
  rows, no lag sample) does not hold, so a step without rows is never within.
- sustainable_rate: over every run of `hold` consecutive steps all within, the highest of the run's lowest achieved;
  0.0 when there is none; unknown without search steps, or when the run did not complete and there is none.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from analysis import contract as c
from analysis.expectations import SEARCH_METRICS
from analysis.measures import Measurement
from analysis.rundir import run_events
from analysis.stats import micros
from analysis.timeline import NS

BOUNDS = {"p99_ms": "p99 <= {:g} ms", "error_share": "errors <= {:g} %", "backlog": "backlog <= {:g} sends",
          "lag_max": "consumer lag <= {:g}"}
"""Bound name -> how the report says it (error_share is shown in percent)."""
P99 = 0.99
MAX_NS = 2**63


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < MAX_NS


def bounds_text(bounds: dict[str, Any]) -> str:
    """`p99 <= 200 ms, errors <= 1 %` for the bounds that are set."""
    return ", ".join(fmt.format(100 * v if k == "error_share" else v) for k, fmt in BOUNDS.items()
                     if (v := bounds.get(k)) is not None) or "no bounds"


def _phases(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """phase -> its search_start, search_end and search_step events (by step number, the last one of a number)."""
    out: dict[str, dict[str, Any]] = {}
    for ev in events:
        name, phase = ev.get("event"), ev.get("phase")
        if name not in (c.EVENT_SEARCH_START, c.EVENT_SEARCH_STEP, c.EVENT_SEARCH_END) or not isinstance(phase, str):
            continue
        ph = out.setdefault(phase, {"start": None, "end": None, "steps": {}})
        if name == c.EVENT_SEARCH_STEP:
            if all(_number(ev.get(k)) and isinstance(ev[k], int) for k in ("step", "start_ns", "end_ns")) and ev[
                    "end_ns"] > ev["start_ns"] and _number(ev.get("rate")):  # others: not a step the run could make
                ph["steps"][ev["step"]] = ev
        else:
            ph["start" if name == c.EVENT_SEARCH_START else "end"] = ev
    return out


def _step_figures(requests: DataFrame, windows: list[tuple[str, str, int, int, int]]) -> dict[tuple, dict]:
    """(run_id, phase, step) -> rows, errors, p99_ms over the rows whose intended start is in the step's window: one
    aggregation, the windows broadcast and joined by run and range."""
    steps = requests.sparkSession.createDataFrame(
        windows, "s_run string, s_phase string, s_step int, s_start long, s_end long")
    at = F.coalesce(F.col("intended_ns"), F.col("start_ns"))
    rows = requests.select("run_id", at.alias("at"), micros(F.col("latency_ms")).alias("us"), "outcome")
    joined = rows.join(F.broadcast(steps), (F.col("run_id") == F.col("s_run")) & (F.col("at") >= F.col("s_start"))
                       & (F.col("at") < F.col("s_end")))
    agg = joined.groupBy("s_run", "s_phase", "s_step").agg(
        F.count(F.lit(1)).alias("rows"), F.sum((~F.col("outcome").eqNullSafe(F.lit(c.SEND_OK))).cast("long")).alias("errors"),
        F.sort_array(F.collect_list("us")).alias("us"))
    n = F.size("us")
    agg = agg.select("s_run", "s_phase", "s_step", "rows", "errors",
                     F.when(n > 0, F.element_at("us", F.ceil(n * F.lit(P99)).cast("int")) / F.lit(1000.0)).alias("p99"))
    return {(r["s_run"], r["s_phase"], r["s_step"]): r.asDict() for r in agg.collect()}


def _lag_max(consume: Any, start_ns: int, end_ns: int) -> int | None:
    values = [p["lag"] for s in (consume.lag.values() if consume is not None else ())
              for p in s.points if p["lag"] is not None and start_ns <= p["ts_ns"] < end_ns]
    return max(values) if values else None


def _step(ev: dict[str, Any], fig: dict[str, Any], bounds: dict[str, Any], lag: int | None) -> dict[str, Any]:
    seconds = (ev["end_ns"] - ev["start_ns"]) / NS
    rows = int(fig.get("rows") or 0)
    figures = {"achieved": round(rows / seconds, 3),
               "p99_ms": fig.get("p99"), "error_share": round(fig["errors"] / rows, 6) if rows else None,
               "backlog": max(0, round(ev["rate"] * seconds) - rows), "lag_max": lag}
    exceeded = [k for k in BOUNDS if bounds.get(k) is not None and (figures[k] is None or figures[k] > bounds[k])]
    live = ev.get("live") if isinstance(ev.get("live"), dict) else {}
    return {"step": ev["step"], "rate": float(ev["rate"]), "start_ns": ev["start_ns"], "end_ns": ev["end_ns"],
            "rows": rows, **figures, "within": rows > 0 and not exceeded, "exceeded": exceeded,
            "live_within": ev.get("within"), "live_exceeded": ev.get("exceeded"),
            "live_achieved": live.get("achieved"), "next_rate": ev.get("next_rate")}


def sustainable(steps: Sequence[dict[str, Any]], hold: int, completed: bool) -> tuple[float | None, str]:
    """The highest lowest-achieved over every `hold` consecutive steps all within, and a note saying what it is."""
    best = max((min(s["achieved"] for s in steps[i:i + hold]) for i in range(len(steps) - hold + 1)
                if all(s["within"] for s in steps[i:i + hold])), default=None)
    if best is not None:
        return best, f"the highest rate held for {hold} consecutive steps within bounds"
    if not completed:
        return None, f"no {hold} consecutive steps within bounds, but the run did not complete"
    return 0.0, f"no {hold} consecutive steps within bounds"


def _phase_result(ph: dict[str, Any], figs: dict, run: Any, name: str, consume: Any) -> dict[str, Any]:
    start, end = ph["start"] or {}, ph["end"] or {}
    given = start.get("bounds") if isinstance(start.get("bounds"), dict) else {}
    bad = [k for k in BOUNDS if given.get(k) is not None and not _number(given[k])]
    bounds = {k: None if k in bad else given.get(k) for k in BOUNDS}
    hold = next((h for h in (start.get("hold"), end.get("hold")) if _number(h) and isinstance(h, int)), None)
    steps = [_step(ev, figs.get((run.run_id, name, n), {}), bounds, _lag_max(consume, ev["start_ns"], ev["end_ns"]))
             for n, ev in sorted(ph["steps"].items())]
    if not steps:
        rate, note = None, f"phase {name!r} has no search steps"
    elif ph["start"] is None or hold is None or hold < 1:
        rate, note = None, f"phase {name!r}: no search_start event with its bounds and hold"
    elif bad:
        rate, note = None, f"phase {name!r}: search_start bounds.{bad[0]} is not a number"
    else:
        rate, note = sustainable(steps, hold, run.timeline.completed)
    return {"phase": name, "bounds": bounds, "bounds_text": bounds_text(bounds), "hold": hold,
            "start_rate": start.get("start_rate"), "step_s": start.get("step_s"), "steps": steps,
            "sustainable_rate": rate, "note": note, "live_sustainable_rate": end.get("sustainable_rate")}


def searches_of(runs: Sequence[Any], requests: DataFrame, consume: dict[str, Any], measured: dict[tuple[str, int], Any],
                step: Callable[[str], None] = lambda _: None) -> dict[str, dict[str, Any] | None]:
    """Every run's searches (phase -> bounds, hold, steps, sustainable_rate, note; None: the run has no search
    events), its `sustainable_rate` expectations measured into `measured`. One Spark job, none without a search."""
    found = {run.run_id: _phases(run_events(run)) for run in runs}
    windows = [(rid, name, n, ev["start_ns"], ev["end_ns"]) for rid, phases in found.items()
               for name, ph in phases.items() for n, ev in ph["steps"].items()]
    if windows:
        step("sustainable-rate search: the steps' figures")
    figs = _step_figures(requests, windows) if windows else {}
    out: dict[str, dict[str, Any] | None] = {}
    for run in runs:
        phases = {name: _phase_result(ph, figs, run, name, consume.get(run.run_id))
                  for name, ph in found[run.run_id].items()}
        for i, e in enumerate(run.expectations):
            if e.metric in SEARCH_METRICS:
                measured[(run.run_id, i)] = _measurement(phases, e.phase)
        out[run.run_id] = phases or None
    return out


def _measurement(phases: dict[str, dict[str, Any]], phase: str | None) -> Measurement:
    if phase is None:
        phase = next((name for name, ph in phases.items() if ph["steps"]), None)
        if phase is None:
            return Measurement(None, "no phase with search steps in events.jsonl")
    ph = phases.get(phase)
    if ph is None:
        return Measurement(None, f"phase {phase!r} has no search events")
    rate = ph["sustainable_rate"]
    return Measurement(rate, f"{ph['note']} ({ph['bounds_text']})", sum(s["rows"] for s in ph["steps"]))


def sentence(ph: dict[str, Any]) -> str:
    """The result of a phase's search in one sentence, for the report."""
    rate, hold, within = ph["sustainable_rate"], ph["hold"], ph["bounds_text"]
    if rate is None:
        return f"Sustainable rate unknown: {ph['note']}."
    if rate == 0.0 and not ph["note"].startswith("the highest"):
        return f"No {hold} consecutive steps within {within}: sustainable rate 0 sends/s."
    return f"Highest rate held for {hold} consecutive steps within {within}: {rate:,.0f} sends/s."
