"""One phase's sustainable-rate search run against the live load. Every `step` seconds the step's figures are taken
from the load's running totals (rows, outcomes, dropped and owed slots, the latency histogram; the consumer lag when
there are consumers; after a step past a bound, over the next step's last 60 % only), the controller picks the next
rate, the load is told, and a `search_step` event records it all. These live figures only steer; the report
recomputes every step from the request rows (analysis.search)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from analysis.contract import SEND_OK
from harness.search.controller import RateSearch, StepFigures
from harness.timeline import Clock, PhaseWindow
from loads.histogram import LogHistogram

SETTLE_SHARE = 0.4
"""After a step past a bound, the first 40 % of the next step is not judged: the sends owed and queued by the
overload (up to the load's max_lag, and the broker's queue) would count against the new, lower rate."""


def run_search(w: PhaseWindow, *, clock: Clock, load: Any, rd: Any, stop: threading.Event,
               tick: Callable[[], None], say: Callable[[str], None],
               lag: Callable[[], int | None] = lambda: None) -> float | None:
    """Steps through the phase from its start (the load already runs at `w.rate`) until no whole step is left, then
    waits out the phase. Returns the live answer (None: no `hold` steps in a row were within bounds)."""
    spec = w.search
    assert spec is not None and w.rate is not None
    search = RateSearch(spec, w.rate)
    rd.event("search_start", phase=w.name, start_rate=w.rate, step_s=spec.step, hold=spec.hold, factor=spec.factor,
             max_rate=spec.max_rate, bounds=spec.bounds.model_dump())
    before, t = load.stats(), w.start_s
    start_ns = rate_ns = time.time_ns()
    n, settle = 0, False
    while t + spec.step <= w.end_s + 1e-9:
        if settle:  # after a step past a bound: judge only once what it left behind has cleared
            if not clock.wait_until(t + spec.step * SETTLE_SHARE, stop, tick):
                break
            before, start_ns = load.stats(), time.time_ns()
        if not clock.wait_until(t + spec.step, stop, tick):
            break
        end_ns, after = time.time_ns(), load.stats()
        figures = step_figures(before, after, search.rate, (end_ns - start_ns) / 1e9, lag())
        decision = search.step_done(figures)
        n += 1
        rd.event("search_step", phase=w.name, step=n, rate=round(figures.rate, 3), start_ns=start_ns, end_ns=end_ns,
                 rate_ns=rate_ns,
                 live={"achieved": round(figures.achieved, 3), "p99_ms": figures.p99_ms,
                       "error_share": figures.error_share, "backlog": figures.backlog, "lag_max": figures.lag_max},
                 within=decision.within, exceeded=decision.exceeded, next_rate=round(decision.next_rate, 3))
        say(f"{w.name}: step {n} at {figures.rate:.0f}/s: {describe(figures)}: "
            + ("within bounds" if decision.within else f"past {', '.join(decision.exceeded)}")
            + f"; next {decision.next_rate:.0f}/s")
        t += spec.step
        if t + spec.step <= w.end_s + 1e-9:
            load.set_phase(w.name, decision.next_rate, at_ns=end_ns)
        before, start_ns, rate_ns, settle = after, end_ns, end_ns, not decision.within
    found = search.sustainable()
    rd.event("search_end", phase=w.name, steps=n, sustainable_rate=None if found is None else round(found, 3),
             hold=spec.hold)
    say(f"{w.name}: highest rate held {spec.hold} steps in a row within bounds (live): "
        + (f"{found:.0f}/s" if found is not None else "none"))
    clock.wait_until(w.end_s, stop, tick)
    return found


def step_figures(before: dict[str, Any], after: dict[str, Any], rate: float, seconds: float,
                 lag_max: int | None = None) -> StepFigures:
    """A step's figures from two snapshots of the load's running totals (`loads.tally.LoadStats` as JSON). The
    backlog is what the schedule owes: the slots dropped in the step (older than max_lag) plus those still owed at
    its end (how late the oldest is, times the rate); the counts of sends started reach the harness a batch late, so
    they would make every step of a rising rate look behind."""
    completed = (after.get("completed") or 0) - (before.get("completed") or 0)
    ok = ((after.get("outcomes") or {}).get(SEND_OK, 0) - (before.get("outcomes") or {}).get(SEND_OK, 0))
    dropped = (after.get("dropped") or 0) - (before.get("dropped") or 0)
    owed = (after.get("lag_ms") or 0.0) / 1000 * rate
    backlog = max(0, round(dropped + owed))
    latency = _histogram(after).minus(_histogram(before))
    achieved = max(0.0, rate - backlog / seconds) if seconds > 0 else 0.0
    return StepFigures(rate=rate, achieved=achieved, completed=completed, p99_ms=latency.quantile(0.99),
                       error_share=(completed - ok) / completed if completed else None, backlog=backlog,
                       lag_max=lag_max)


def describe(f: StepFigures) -> str:
    p99 = f"{f.p99_ms:.0f} ms" if f.p99_ms is not None else "-"
    errors = f"{100 * f.error_share:.1f} %" if f.error_share is not None else "-"
    return f"achieved {f.achieved:.0f}/s, p99 {p99}, errors {errors}, backlog {f.backlog}"


def _histogram(stats: dict[str, Any]) -> LogHistogram:
    doc = stats.get("latency_total")
    return LogHistogram.from_json(doc) if doc else LogHistogram()
