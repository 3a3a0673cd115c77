"""The rate controller of a sustainable-rate search, after OpenMessaging Benchmark's RateController: a step within
its bounds raises the rate by rate x factor and doubles the factor (up to the spec's `factor`); a step past a bound
halves the factor (down to 0.01) and cuts the rate to what was achieved. OMB judges only its two backlogs; here a
latency, error or lag bound can be exceeded at a rate the load did achieve, so the cut also divides by 1 + factor:
the rate always goes down after a bound is exceeded. Pure: figures in, the next rate out."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.scenario.search import MIN_FACTOR, SearchSpec

MIN_RATE = 1.0


@dataclass(frozen=True)
class StepFigures:
    """What one step did, as the live load reported it."""

    rate: float
    """target sends/s of the step"""
    achieved: float
    """sends started per second"""
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
        if over:
            self.factor = max(MIN_FACTOR, self.factor / 2)
            self.ceiling = f.rate if self.ceiling is None else min(self.ceiling, f.rate)
            nxt = min(f.achieved, f.rate) / (1 + self.factor)
        else:
            self.factor = min(self.spec.factor, self.factor * 2)
            nxt = f.rate * (1 + self.factor)
            if self.ceiling is not None and f.rate >= self.ceiling:
                self.ceiling = None  # held where it once failed: that failure was not the limit
            if self.ceiling is not None and nxt >= self.ceiling:
                nxt = max(f.rate, (f.rate + self.ceiling) / 2)
        if self.spec.max_rate is not None:
            nxt = min(nxt, self.spec.max_rate)
        nxt = max(MIN_RATE, nxt)
        self.steps.append((f, not over))
        self.rate = nxt
        return Decision(not over, over, nxt)

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
