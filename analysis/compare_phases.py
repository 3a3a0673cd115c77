"""The comparison page's first table: for each phase the runs share (the fault's phase first), per run side by side
the outcome mix, the latency p50/p99 of both bases and the expectations about that phase.

Runs that look alike over the whole run can do entirely different things in the fault's phase (call timeouts on
one version, FLUSH_SLAVE_TIMEOUT on another); this table puts that first. A phase is a fault's phase when one of
the run's faults was applied in its window (events.jsonl). An expectation is about a phase when it names the
phase, or names a fault applied in it.

Runs whose phases had a sustainable-rate search (analysis.search) are also compared by the rate each found
(`search_rows`): a table of the search phases, one column per run, above the per-phase table.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.compute import RunResults


def fault_phases(res: RunResults) -> dict[str, list[str]]:
    """Phase name -> the ids of the faults applied within its window."""
    out: dict[str, list[str]] = {}
    for f in res.run.timeline.faults:
        at = f.shade_start_ns
        if at is None:
            continue
        for ph in res.run.timeline.phases:
            if ph.start_ns <= at and (ph.end_ns is None or at < ph.end_ns):
                out.setdefault(ph.name, []).append(f.fault_id)
                break
    return out


def shared_phases(results: Sequence[RunResults]) -> list[str]:
    """The phases every run has rows in: those with a fault in any run first, then the rest, in the first run's
    order."""
    per_run = [[p["phase"] for p in r.per_phase if not p["whole_run"] and p["phase"] is not None
                and p["transition"] is None] for r in results]
    if not per_run:
        return []
    shared = [p for p in per_run[0] if all(p in names for names in per_run[1:])]
    faulted = {name for r in results for name in fault_phases(r)}
    return [p for p in shared if p in faulted] + [p for p in shared if p not in faulted]


def _expectations(res: RunResults, phase: str, faults: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for r in res.verdict.results:
        e = r.expectation
        if e.phase == phase or (e.fault is not None and _fault_id(res, e.fault) in faults):
            out.append({"name": r.name, "status": r.status, "measured": r.measured_text(), "limit": r.limit_text(),
                        "metric": e.metric})
    return out


def _fault_id(res: RunResults, name: str) -> str | None:
    f = res.run.timeline.fault(name)
    return f.fault_id if f is not None else None


def phase_rows(results: Sequence[RunResults]) -> list[dict[str, Any]]:
    """One entry per shared phase: `phase`, `faults` (ids applied in it, any run) and `runs`, one dict per run in
    the order given: sends, outcome shares (largest first), intended/actual p50 and p99, expectations: of the
    phase's own sends, without its transition slices (analysis.transitions), whose sends are `transition_sends`."""
    out = []
    for phase in shared_phases(results):
        runs, faults = [], []
        for res in results:
            applied = fault_phases(res).get(phase, [])
            faults += [f for f in applied if f not in faults]
            row = next(p for p in res.per_phase if not p["whole_run"] and p["phase"] == phase
                       and p["transition"] is None)
            counts: dict[str, int] = {}
            in_transitions = 0
            for c in res.outcome_counts.to_pylist():
                if c["phase"] == phase and c.get("transition") is None:
                    counts[c["outcome"]] = counts.get(c["outcome"], 0) + c["sends"]
                elif c["phase"] == phase:
                    in_transitions += c["sends"]
            sends = sum(counts.values())
            mix = [{"outcome": o, "sends": n, "share": n / sends}
                   for o, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
            runs.append({"run_id": res.run.run_id, "sends": sends, "mix": mix, "transition_sends": in_transitions,
                         **{k: row.get(k) for k in ("intended_p50", "intended_p99", "actual_p50", "actual_p99")},
                         "expectations": _expectations(res, phase, applied)})
        out.append({"phase": phase, "faults": faults, "runs": runs})
    return out


def search_rows(results: Sequence[RunResults]) -> list[dict[str, Any]]:
    """One entry per phase any run searched in (in the order first seen): `phase` and `runs`, one dict per run in the
    order given: sustainable_rate (None: unknown or no search there), note, bounds_text, hold, steps (how many).
    Empty when no run had a search."""
    names: list[str] = []
    for res in results:
        names += [p for p in (res.search or {}) if p not in names]
    out = []
    for phase in names:
        runs = []
        for res in results:
            ph = (res.search or {}).get(phase)
            runs.append({"run_id": res.run.run_id, "searched": ph is not None,
                         **{k: ph.get(k) if ph else None for k in ("sustainable_rate", "note", "bounds_text", "hold")},
                         "steps": len(ph["steps"]) if ph else 0})
        out.append({"phase": phase, "runs": runs})
    return out
