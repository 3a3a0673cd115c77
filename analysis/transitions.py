"""Transitions: the moments the harness itself changes the cluster, a fault being applied and verified or being
reverted, and the sends started in them (issue 41). Pure Python over a run's timeline (no Spark).

A phase's figures are about the time its faults were in effect (from `verify ok` to `revert started`). A send whose
actual start (`start_ns`) falls while a fault is being applied or verified (from its `apply started` to its
`verify ok`) or reverted (from its `revert started` to its `revert ok`) is in a *transition slice* of its phase
instead: its row keeps the phase the load gave it (by intended time) and gets the transition's label (`ro apply`,
`ro revert`) in the column `transition` (`analysis.frames.with_transitions`; null outside every transition). The
slice is shown as `readonly (transition: ro revert)`. A revert that runs into a later phase slices that phase's
rows the same way. Rows labelled `interrupted` (sends intended after a run was cut short) keep that label alone.

Bounds when events are missing (an interrupted or failed run), decided here once:
- apply: from `apply started` (else `apply ok`) to `verify ok`; without it, to the apply's or the verify's `failed`,
  else to `revert started`, else open (to the end of the run).
- revert: from `revert started` to `revert ok`, else to its `failed`, else open. No `revert started`: none.
A send in two transitions at once belongs to the one that started first.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.timeline import FaultWindow, Timeline

INTERRUPTED_PHASE = "interrupted"
"""The phase the load gives sends intended after a run was cut short (harness/runner.py): never sliced."""
APPLY, REVERT = "apply", "revert"


@dataclass(frozen=True)
class Transition:
    """One fault's apply (to its verify) or revert, in wall ns; `end_ns` None: it never ended in the events."""

    fault_id: str
    action: str  # APPLY | REVERT
    start_ns: int
    end_ns: int | None

    @property
    def label(self) -> str:
        """The value of a row's `transition` column: `<fault id> apply` or `<fault id> revert`."""
        return f"{self.fault_id} {self.action}"


def slice_name(phase: str | None, transition: str | None) -> str:
    """How the report names a slice: the phase, or `<phase> (transition: <label>)`."""
    name = "(no phase)" if phase is None else str(phase)
    return name if transition is None else f"{name} (transition: {transition})"


def _first_after(start: int, times: Sequence[int | None]) -> int | None:
    return min((t for t in times if t is not None and t >= start), default=None)


def transitions_of_fault(f: FaultWindow) -> list[Transition]:
    """The apply and the revert of one fault (those its events show)."""
    out = []
    start = f.apply_started_ns if f.apply_started_ns is not None else f.applied_ns
    if start is not None:
        end = f.verified_ns if f.verified_ns is not None and f.verified_ns >= start else _first_after(
            start, [f.failed_ns.get(APPLY), f.failed_ns.get("verify")]) or _first_after(start, [f.revert_started_ns])
        out.append(Transition(f.fault_id, APPLY, start, end))
    if f.revert_started_ns is not None:
        end = _first_after(f.revert_started_ns, [f.reverted_ns]) or _first_after(
            f.revert_started_ns, [f.failed_ns.get(REVERT)])
        out.append(Transition(f.fault_id, REVERT, f.revert_started_ns, end))
    return out


def transitions_of(timeline: Timeline) -> list[Transition]:
    """Every transition of the run's faults, in the order they started."""
    return sorted((t for f in timeline.faults for t in transitions_of_fault(f)), key=lambda t: (t.start_ns, t.label))


def overlap_ns(transitions: Sequence[Transition], start_ns: int, end_ns: int) -> int:
    """How much of [start_ns, end_ns) the transitions cover (their union; an open one reaches `end_ns`)."""
    spans = sorted((max(t.start_ns, start_ns), min(end_ns if t.end_ns is None else t.end_ns, end_ns))
                   for t in transitions)
    covered, reach = 0, start_ns
    for lo, hi in spans:
        lo = max(lo, reach)
        if hi > lo:
            covered += hi - lo
            reach = hi
    return covered


def seconds_of(transition: Transition, window: tuple[int | None, int | None], run_end_ns: int | None) -> float | None:
    """A transition slice's seconds: the part of the transition within its phase's window when there is one,
    else its whole length (an open transition ends at the run's end; None when that is not known either)."""
    end = transition.end_ns if transition.end_ns is not None else run_end_ns
    if end is None or end < transition.start_ns:
        return None
    lo, hi = window
    if lo is not None and hi is not None:
        inside = min(end, hi) - max(transition.start_ns, lo)
        if inside > 0:
            return inside / 1e9
    return (end - transition.start_ns) / 1e9
