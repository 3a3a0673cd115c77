"""Run directories with a sustainable-rate search (issue 27) whose steps are made within bounds or not, with known
answers: the `search_*` events of the contract (docs/architecture.md §4) and request rows placed in each step's
window by their intended start.

- `search_run`: phase `probe` (hold 2, bounds p99 200 ms, errors 1 %, backlog 5, consumer lag 1000) steps through
  `PROBE`: runs of two steps within are (1, 2) at 10 and (8, 9) at 36 sends/s, so its sustainable rate is 36; phase
  `faulted` (hold 2, p99 only) alternates within and not: 0.0; phase `healthy` has no search.
- `cut_search_run`: killed in its search: one step over the p99 bound, one without rows, no run_end: unknown.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from known_runs import RunBuilder, _standard_events

from analysis import contract as c

STEP_MS = 1000
PROBE_START_MS, FAULTED_START_MS, END_MS = 6_000, 15_000, 19_000
PROBE_BOUNDS = {"p99_ms": 200.0, "error_share": 0.01, "backlog": 5, "lag_max": 1000}
PROBE = [  # target rate, rows, slow rows (300 ms), error rows, consumer lag sampled in the step, live within
    (10, 10, 0, 0, 100, True),
    (20, 20, 0, 0, 100, True),
    (40, 40, 1, 0, 100, True),  # p99 300 ms (the live figures missed it)
    (30, 28, 0, 0, 100, True),  # backlog 2: within
    (40, 40, 0, 2, 100, False),  # errors 5 %
    (35, 35, 0, 0, 5000, True),  # consumer lag
    (38, 30, 0, 0, 100, False),  # backlog 8
    (36, 36, 0, 0, 100, True),
    (37, 37, 0, 0, 100, True),
]
PROBE_EXCEEDED = [[], [], ["p99_ms"], [], ["error_share"], ["lag_max"], ["backlog"], [], []]
FAULTED = [(20, 20, 0, 0, None, True), (20, 20, 1, 0, None, False), (20, 20, 0, 0, None, True),
           (20, 20, 1, 0, None, False)]
SEARCH_EXPECT = [
    {"name": "probe-rate", "phase": "probe", "metric": "sustainable_rate", "min": 30},
    {"name": "first-search", "metric": "sustainable_rate", "min": 40},
    {"name": "faulted-zero", "phase": "faulted", "metric": "sustainable_rate", "max": 0},
    {"name": "healthy-none", "phase": "healthy", "metric": "sustainable_rate", "min": 1},
]
FAST_MS, SLOW_MS = 5.0, 300.0  # latency from the intended start


def _steps(b: RunBuilder, phase: str, start_ms: int, steps: list[tuple], bounds: dict[str, Any],
           seq: int = 0) -> int:
    """The search events and rows of one phase's steps; returns the next sequence number."""
    b.event(start_ms, c.EVENT_SEARCH_START, phase=phase, start_rate=float(steps[0][0]), step_s=STEP_MS / 1000,
            hold=2, factor=1.0, max_rate=None, bounds={k: bounds.get(k) for k in PROBE_BOUNDS})
    for k, (rate, rows, slow, errors, lag, live) in enumerate(steps, start=1):
        begin = start_ms + (k - 1) * STEP_MS
        for i in range(rows):
            intended = begin + i * STEP_MS / rows
            failed = i >= rows - errors
            b.send(worker="w1", seq=seq, start_ms=intended + 0.5, queue_ms=0.5,
                   service_ms=(SLOW_MS if i < slow else FAST_MS) - 0.5, phase=phase,
                   outcome=c.MQ_BROKER_EXCEPTION if failed else c.SEND_OK, response_code=2 if failed else 0)
            seq += 1
        if lag is not None:
            b.lag_sample("g1", begin // 1000, committed=1000 * k, lag=lag)
        nxt = steps[k][0] if k < len(steps) else rate
        b.event(begin + STEP_MS, c.EVENT_SEARCH_STEP, phase=phase, step=k, rate=float(rate), start_ns=b.at(begin),
                end_ns=b.at(begin + STEP_MS), live={"achieved": float(rows), "p99_ms": 5.0, "error_share": 0.0,
                                                    "backlog": 0, "lag_max": lag},
                within=live, exceeded=[] if live else ["p99_ms"], next_rate=float(nxt))
    return seq


def search_run(root: Path, run_id: str = "search-run") -> Path:
    b = RunBuilder(root, run_id)
    phases = [("healthy", 0, PROBE_START_MS), ("probe", PROBE_START_MS, FAULTED_START_MS),
              ("faulted", FAULTED_START_MS, END_MS)]
    seq = 0
    for i in range(60):
        b.send(worker="w1", seq=seq, start_ms=i * 100 + 0.5, service_ms=FAST_MS - 0.5, outcome=c.SEND_OK,
               phase="healthy", response_code=0)
        seq += 1
    for sec in range(PROBE_START_MS // 1000):
        b.lag_sample("g1", sec, committed=10 * sec, lag=100)
    seq = _steps(b, "probe", PROBE_START_MS, PROBE, PROBE_BOUNDS, seq)
    b.event(FAULTED_START_MS - 1, c.EVENT_SEARCH_END, phase="probe", steps=len(PROBE), sustainable_rate=36.0, hold=2)
    _steps(b, "faulted", FAULTED_START_MS, FAULTED, {"p99_ms": 200.0}, seq)
    b.event(END_MS - 1, c.EVENT_SEARCH_END, phase="faulted", steps=len(FAULTED), sustainable_rate=0.0, hold=2)
    _standard_events(b, phases, readback=False)
    b.events.sort(key=lambda e: e["wall_ns"])
    scenario = {"name": "search", "phases": [{"name": n, "duration_s": (e - s) / 1000} for n, s, e in phases],
                "expect": SEARCH_EXPECT}
    return b.write(scenario)


def cut_search_run(root: Path, run_id: str = "cut-search") -> Path:
    b = RunBuilder(root, run_id)
    b.event(-5000, "run_start", run_id=run_id, scenario=run_id)
    b.event(0, "load_start", model="open", rate=20)
    b.event(0, "phase_start", phase="probe", index=0, duration_s=10, rate=20)
    b.events.sort(key=lambda e: e["wall_ns"])
    _steps(b, "probe", 0, [(20, 20, 1, 0, None, True), (40, 0, 0, 0, None, False)], PROBE_BOUNDS)
    scenario = {"name": "search", "phases": [{"name": "probe", "duration_s": 10}],
                "expect": [{"name": "cut-rate", "metric": "sustainable_rate", "min": 1}]}
    return b.write(scenario)
