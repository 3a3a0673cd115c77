"""A partition run with known answers for the transition slices (issue 41), written through `known_runs.RunBuilder`.

warmup (0-2 s) -> cut (2-6 s, fault `cut`: apply started 2.000 s, verified 2.050 s; revert started 5.914 s, ok
6.040 s, 40 ms into the next phase) -> after (6-8 s). A send every 5 ms (intended = actual start), labelled with the
phase its start lies in. While the cut is in effect every send times out (100 ms); in its apply (10 sends) and its
revert (17 in `cut`, 8 in `after`) they get through: SEND_OK, except the revert's last send in `cut` (5.995 s), a
timeout that ends after the revert's ok and so keeps `recovery_s` at 1 s. Counts by slice (`ANSWERS`):

| slice | sends | SEND_OK | seconds |
|---|---|---|---|
| warmup | 400 | 400 | 2 |
| cut | 773 | 0 | 4 - 0.050 - 0.086 |
| cut (transition: cut apply) | 10 | 10 | 0.050 |
| cut (transition: cut revert) | 17 | 16 | 0.086 |
| after | 392 | 392 | 2 - 0.040 |
| after (transition: cut revert) | 8 | 8 | 0.040 |
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from known_runs import Answers, RunBuilder, _cluster, _standard_events

from analysis import contract as c

PHASES = [("warmup", 0, 2000), ("cut", 2000, 6000), ("after", 6000, 8000)]
APPLY, VERIFIED, REVERT, REVERTED = 2000, 2050, 5914, 6040
ANSWERS = {  # slice -> (sends, SEND_OK, seconds)
    "warmup": (400, 400, 2.0),
    "cut": (773, 0, 3.864),
    "cut (transition: cut apply)": (10, 10, 0.05),
    "cut (transition: cut revert)": (17, 16, 0.086),
    "after": (392, 392, 1.96),
    "after (transition: cut revert)": (8, 8, 0.04),
}
EXPECT: list[dict[str, Any]] = [
    {"name": "no-ok-while-cut", "phase": "cut", "outcome": "SEND_OK", "metric": "count", "max": 0},
    {"name": "ok-cut-include", "phase": "cut", "outcome": "SEND_OK", "metric": "count", "transitions": "include",
     "min": 26, "max": 26},
    {"name": "ok-cut-only", "phase": "cut", "outcome": "SEND_OK", "metric": "count", "transitions": "only",
     "min": 26, "max": 26},
    {"name": "after-only", "phase": "after", "metric": "count", "transitions": "only", "min": 8, "max": 8},
    {"name": "cut-timeouts", "phase": "cut", "outcome": "RemotingTimeoutException", "metric": "share", "min": 1},
    {"name": "cut-timeouts-include", "phase": "cut", "outcome": "RemotingTimeoutException", "metric": "share",
     "transitions": "include", "max": 0.97},
    {"name": "cut-rate", "phase": "cut", "metric": "rate", "min": 200, "max": 200.1},
    {"name": "cut-rate-only", "phase": "cut", "metric": "rate", "transitions": "only", "min": 198, "max": 199},
    {"name": "cut-max", "phase": "cut", "metric": "latency_max_ms", "basis": "actual", "min": 100, "max": 100},
    {"name": "whole-ok", "outcome": "SEND_OK", "metric": "count", "min": 826, "max": 826},
    {"name": "first-error", "fault": "cut", "metric": "fault_to_first_error_s", "min": 0.1, "max": 0.1},
    {"name": "recovery", "fault": "cut", "metric": "recovery_s", "min": 1, "max": 1},
]
MEASURED = {"no-ok-while-cut": 0, "ok-cut-include": 26, "ok-cut-only": 26, "after-only": 8, "cut-timeouts": 1.0,
            "cut-timeouts-include": 774 / 800, "cut-rate": 773 / 3.864, "cut-rate-only": 27 / 0.136,
            "cut-max": 100.0, "whole-ok": 826, "first-error": 0.1, "recovery": 1.0}


def _outcome(t: int) -> tuple[str, float]:
    if APPLY + 50 <= t < REVERT or t == 5995:
        return c.REMOTING_TIMEOUT, 100.0
    return c.SEND_OK, 1.0


def partition_run(root: Path, run_id: str = "cut-transitions") -> tuple[Path, Answers]:
    """The run of the module docstring; its answers in `ANSWERS` and `MEASURED`."""
    b = RunBuilder(root, run_id)
    for i, t in enumerate(range(0, 8000, 5)):
        phase = next(name for name, lo, hi in PHASES if lo <= t < hi)
        outcome, service = _outcome(t)
        b.send(worker="w1", seq=i, start_ms=t, service_ms=service, outcome=outcome, phase=phase, queue_ms=0.0,
               response_code=0 if outcome == c.SEND_OK else None)
    _standard_events(b, PHASES, readback=False)
    for ms, action, status in ((APPLY, "apply", "started"), (APPLY + 10, "apply", "ok"),
                               (VERIFIED - 5, "verify", "started"), (VERIFIED, "verify", "ok"),
                               (REVERT, "revert", "started"), (REVERTED, "revert", "ok")):
        b.event(ms, "fault", fault_id="cut", kind="partition", target="master", action=action, status=status)
    b.events.sort(key=lambda e: e["wall_ns"])
    b.answers.numbers = {"transitions": {"cut apply": (APPLY, VERIFIED), "cut revert": (REVERT, REVERTED)}}
    scenario = {"name": "master-partition", "phases": [{"name": n, "duration_s": (e - s) / 1000}
                                                       for n, s, e in PHASES], "expect": EXPECT}
    return b.write(scenario, _cluster(268435456)), b.answers
