"""The rate controller of a sustainable-rate search, after OpenMessaging Benchmark's RateController: while no step
has gone past a bound, a step within its bounds raises the rate by rate x factor and doubles the factor (up to the
spec's `factor`), and a step past a bound halves the factor (down to 0.01) and cuts the rate to what was achieved.
OMB's rule alone never settles (it swings between about 0.7 and 1.3 times the capacity for ever) and judges only its
backlogs, so once a bound has been passed the search brackets the answer: the highest rate within bounds is the
floor, the lowest rate past one the ceiling, and the next rate is halfway between (never above what was achieved);
when they are within 5 % the rate stays at the floor, so `hold` steps in a row can be within bounds; once they are,
the ceiling is dropped and the search probes above again (a ceiling may have been the hangover of an earlier
overload, or the cluster got better). A step past a
bound at or below the floor (the floor was luck, or the cluster got worse) drops the floor and steps the rate down
by STEP_DOWN (to what was achieved when that is less), unless the step before it was past a bound too: then it is
the overload's hangover, which says nothing about the floor, so floor and ceiling stay and the rate steps down to
let the backlog drain; once a step is within bounds again the search goes back to the floor, and probes above only
after `hold` steps in a row at the floor. No cut goes below half the rate (a stalled step achieves about nothing,
and OMB's cut to it would restart from 1/s).
Pure: figures in, the next rate out."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.scenario.search import MIN_FACTOR, SearchSpec

MIN_RATE = 1.0
SETTLED = 0.05
"""The bracket is closed when the ceiling is within this share above the floor."""
PROBE_FACTOR = 2 * SETTLED
"""The ramping factor a probe above a held answer starts from (then doubled while within bounds, as OMB does)."""
STEP_DOWN = 2 * SETTLED
"""How far below a failed floor the next step goes (unless less was achieved): a bound passed at a rate once held
says the limit is about there, and halving would spend the following steps ramping back up (on the emulator, three
repeats of the same search found 3189-4676/s that way, each answer a window of ramp steps after a halving)."""


@dataclass(frozen=True)
class StepFigures:
    """What one step did, as the live load reported it."""

    rate: float
    """target sends/s of the step"""
    achieved: float
    """sends/s the schedule was kept at: the rate less the backlog per second"""
    completed: int
    p99_ms: float | None
    error_share: float | None
    backlog: int
    lag_max: int | None = None


@dataclass(frozen=True)
class Decision:
    within: bool
    exceeded: list[str]
    next_rate: float


@dataclass
class RateSearch:
    spec: SearchSpec
    rate: float
    factor: float = 0.0
    ceiling: float | None = None
    floor: float | None = None
    steps: list[tuple[StepFigures, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.factor = self.factor or self.spec.factor

    def exceeded(self, f: StepFigures) -> list[str]:
        """Names of the bounds the step went past (a step where nothing completed is past p99_ms)."""
        b = self.spec.bounds
        out = []
        if b.p99_ms is not None and (f.p99_ms is None or f.p99_ms > b.p99_ms):
            out.append("p99_ms")
        if b.error_share is not None and (f.error_share is None or f.error_share > b.error_share):
            out.append("error_share")
        if f.backlog > b.backlog:
            out.append("backlog")
        if b.lag_max is not None and f.lag_max is not None and f.lag_max > b.lag_max:
            out.append("lag_max")
        if f.completed == 0 and "p99_ms" not in out:
            out.append("nothing_completed")
        return out

    def step_done(self, f: StepFigures) -> Decision:
        over = self.exceeded(f)
        achieved = min(f.achieved, f.rate)
        if over:
            self.factor = max(MIN_FACTOR, self.factor / 2)
            hangover = bool(self.steps) and not self.steps[-1][1] and self.floor is not None and f.rate <= self.floor
            fell = self.floor is not None and f.rate <= self.floor and not hangover
            if hangover:  # still paying for the overload before: no news about the floor; let the backlog drain
                nxt = max(min(achieved, f.rate * (1 - STEP_DOWN)), f.rate / 2)
                return self._decide(f, over, nxt)
            if fell:
                self.floor = None  # failed where it once held: start the bracket again from below
            limit = f.rate
            if "backlog" in over and achieved < f.rate:  # it did this much and no more: the limit is near it
                limit = min(limit, achieved * (1 + SETTLED))
            if self.floor is not None:  # an overload's hangover achieves little: never a ceiling under the floor
                limit = max(limit, min(f.rate, self.floor * (1 + SETTLED)))
            self.ceiling = limit if self.ceiling is None else min(self.ceiling, limit)
            if fell:  # near the limit, not far above it: a step down, or to what was achieved when that is less
                nxt = min(achieved, f.rate * (1 - STEP_DOWN))
            elif self.floor is None:
                nxt = achieved if "backlog" in over and achieved < f.rate else f.rate / 2
            else:
                nxt = min(achieved, (self.floor + f.rate) / 2)
            nxt = max(nxt, f.rate / 2)  # a stall achieves ~0: a cut to it would take the search to 1/s
        else:
            self.factor = min(self.spec.factor, self.factor * 2)
            self.floor = f.rate if self.floor is None else max(self.floor, f.rate)
            if self.ceiling is not None and f.rate >= self.ceiling:
                self.ceiling = None  # held where it once failed: that failure was not the limit
            if self.ceiling is not None and self._held_at(self.floor) + 1 >= self.spec.hold:
                self.ceiling = None  # the answer so far is held: probe above it (the ceiling may have been a hangover)
                self.factor = PROBE_FACTOR  # gently: an overload's hangover spoils the steps after it
            if self.ceiling is None:
                nxt = f.rate * (1 + self.factor)
            elif self.ceiling <= self.floor * (1 + SETTLED):
                nxt = self.floor
            else:
                nxt = (self.floor + self.ceiling) / 2
        return self._decide(f, over, nxt)

    def _decide(self, f: StepFigures, over: list[str], nxt: float) -> Decision:
        if self.spec.max_rate is not None:
            nxt = min(nxt, self.spec.max_rate)
        nxt = max(MIN_RATE, nxt)
        self.steps.append((f, not over))
        self.rate = nxt
        return Decision(not over, over, nxt)

    def _held_at(self, rate: float) -> int:
        """Steps within bounds at `rate` or above at the end of the list so far (a step back from an overload's
        hangover, below the floor, does not count towards holding the floor)."""
        n = 0
        for f, ok in reversed(self.steps):
            if not ok or f.rate < rate:
                break
            n += 1
        return n

    def sustainable(self) -> float | None:
        """The highest, over every `hold` consecutive steps all within bounds, of the lowest achieved rate among
        them; None when no such run of steps exists yet."""
        n = self.spec.hold
        best = None
        for i in range(len(self.steps) - n + 1):
            window = self.steps[i:i + n]
            if all(ok for _, ok in window):
                low = min(f.achieved for f, _ in window)
                best = low if best is None else max(best, low)
        return best
