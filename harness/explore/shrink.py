"""Shrinking a failing schedule, greedily: the candidates of the current schedule are tried in order (fewer windows,
fewer faults, shorter windows, earlier times, lower rates, parameters towards their range's low end); the first one
that still fails becomes the current schedule and its candidates are tried next; when none fails (or the runs
allowed for shrinking are spent) the current schedule is the minimal one. A candidate fails only when it fails `k`
of `n` runs (`k_of_n`), and only by one of the invariants the original failure broke, so a flaky failure is not
shrunk into noise and a candidate failing something else does not replace it. Pure: the runs are a callable."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from harness.explore.invariants import FAIL, UNKNOWN, Judgement
from harness.explore.schedule import Schedule
from harness.explore.spec import Space, is_range

MIN_STEP_S = 0.5
"""A duration is shrunk only when that takes at least this much off (tenths of a second would take for ever)."""


def halfway(value: float, low: float) -> float:
    """Halfway towards `low`, in tenths (a step of less than MIN_STEP_S goes all the way)."""
    mid = round((value + low) / 2, 1)
    return low if mid - low < MIN_STEP_S else mid


def candidates(s: Schedule, space: Space) -> Iterator[tuple[str, Schedule]]:
    """(what the step does, the smaller schedule), in the order they are tried."""
    if len(s.windows) > 1:
        for i in range(len(s.windows)):
            yield f"drop window {i + 1}", s.with_window(i, None)
    for i, w in enumerate(s.windows):
        if len(w.faults) > 1:
            for j, f in enumerate(w.faults):
                rest = w.faults[:j] + w.faults[j + 1:]
                yield f"drop {f.kind} on {f.target} (window {i + 1})", s.with_window(i, replace(w, faults=rest))
    for i, w in enumerate(s.windows):
        if w.duration_s - space.duration.min >= MIN_STEP_S:
            d = halfway(w.duration_s, space.duration.min)
            yield f"window {i + 1} {w.duration_s:g}s -> {d:g}s", s.with_window(i, replace(w, duration_s=d))
    for i, w in enumerate(s.windows):
        low = space.lead.min if i == 0 else space.gap.min
        if w.gap_s - low >= MIN_STEP_S:
            g = halfway(w.gap_s, low)
            what = "lead-in" if i == 0 else f"gap before window {i + 1}"
            yield f"{what} {w.gap_s:g}s -> {g:g}s", s.with_window(i, replace(w, gap_s=g))
    if s.rate is not None and space.rate is not None and s.rate - space.rate.min >= 1:
        r = float(round((s.rate + space.rate.min) / 2))
        r = space.rate.min if r >= s.rate else r
        yield f"rate {s.rate:g}/s -> {r:g}/s", replace(s, rate=r)
    for i, w in enumerate(s.windows):
        for j, f in enumerate(w.faults):
            ranges = space.faults[f.choice].params if f.choice < len(space.faults) else {}
            for key, value in f.params.items():
                r = ranges.get(key)
                if not is_range(r) or not isinstance(value, int | float) or value <= r["min"]:
                    continue
                low = r["min"]
                new = low if isinstance(low, int) and value - low <= 1 else (value + low) / 2
                new = int(new) if isinstance(low, int) and isinstance(r["max"], int) else round(new, 2)
                if new == value:
                    continue
                params = {**f.params, key: new}
                faults = w.faults[:j] + (replace(f, params=params),) + w.faults[j + 1:]
                yield (f"{f.kind} on {f.target} {key} {value:g} -> {new:g}",
                       s.with_window(i, replace(w, faults=faults)))


@dataclass(frozen=True)
class Trial:
    """The runs of one candidate: their judgements and whether it counts as failing."""

    failing: bool
    runs: tuple[Judgement, ...]
    failed: frozenset[str] = frozenset()
    """the target invariants that failed in its failing runs"""


def k_of_n(run: Callable[[], Judgement], k: int, n: int, target: frozenset[str]) -> Trial:
    """Run until `k` runs failed one of the `target` invariants (failing) or that can no longer happen in `n`
    judged runs (not failing). A run whose verdict is unknown is discarded and does not count towards `n`; at most
    `n` of them are tolerated (then the candidate is not failing: nothing is known)."""
    runs: list[Judgement] = []
    fails = judged = discarded = 0
    failed: set[str] = set()
    while fails < k and fails + (n - judged) >= k and discarded <= n:
        j = run()
        runs.append(j)
        if j.verdict == UNKNOWN:
            discarded += 1
            continue
        judged += 1
        hit = set(j.failed) & target if j.verdict == FAIL else set()
        if hit:
            fails += 1
            failed |= hit
    return Trial(fails >= k, tuple(runs), frozenset(failed))


@dataclass
class Shrunk:
    schedule: Schedule
    failed: frozenset[str]
    steps: list[tuple[str, Schedule, Trial]] = field(default_factory=list)
    complete: bool = False
    """True when no candidate of the final schedule fails (it is minimal), False when the runs ran out."""


def shrink(failing: Schedule, failed: frozenset[str], space: Space,
           trial: Callable[[str, Schedule, frozenset[str]], Trial | None]) -> Shrunk:
    """Greedy shrinking from `failing`, which broke `failed`. `trial(step, candidate, target)` runs a candidate;
    None means no runs are left (the budget): shrinking stops with what it has."""
    out = Shrunk(failing, failed)
    while True:
        for step, cand in candidates(out.schedule, space):
            t = trial(step, cand, out.failed)
            if t is None:
                return out
            out.steps.append((step, cand, t))
            if t.failing:
                out.schedule, out.failed = cand, t.failed
                break
        else:
            out.complete = True
            return out
