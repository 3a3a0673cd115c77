"""The explore file's schema: a scenario file it refers to (`scenario:`, relative to the explore file) for the
cluster, topic, load, read-back and consumers, an optional `override:` merged into that scenario (e.g. another
`cluster.version`), and the `explore:` section: the fault space (kinds, the targets each may hit, parameter ranges),
the windows (how many, how long, the gaps, how many faults at once), the load's rate range, the tail after the last
revert, the built-in invariants and the file's own expectations, the budget, the seed and the k-of-n rule of
shrinking. Strict pydantic models like the scenario's sections (unknown keys refused); `harness.explore.load`
reads a file and turns every problem into one line naming the file, the line, the key and the allowed values.

Example::

    scenario: ../controller-and-master-killed.yaml
    override: {cluster: {version: "5.1.4"}}
    explore:
      seed: 1
      budget: {runs: 20, time: 2h}
      faults:
        - {kind: kill, targets: [master, controller-leader], params: {restart_after_s: {min: 1, max: 3}}}
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from analysis.expectations import Expectation
from harness.scenario.schema import Duration, Name, Strict, at

MAX_CHOICES = 64
MAX_WINDOWS = 16
MAX_RUNS = 10_000


class _Range(Strict):
    """`{min, max}` with min not above max; `ABOVE_MAX` is the message when it is (`{min}`, `{max}` the bounds)."""

    ABOVE_MAX: ClassVar[str] = "{min:g} is above max ({max:g}); allowed: at most max"
    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min > self.max:
            raise at(("min",), self.ABOVE_MAX.format(min=self.min, max=self.max))
        return self


class IntRange(_Range):
    ABOVE_MAX = "{min} is above max ({max}); allowed: at most {max}"
    min: int = Field(ge=1, le=MAX_WINDOWS)
    max: int = Field(ge=1, le=MAX_WINDOWS)


class DurationRange(_Range):
    ABOVE_MAX = "{min:g}s is above max ({max:g}s); allowed: at most max"
    min: Duration
    max: Duration


class RateRange(_Range):
    min: float = Field(gt=0)
    max: float = Field(gt=0)


def is_range(value: Any) -> bool:
    """A parameter written `{min: A, max: B}` (numbers): drawn between them, shrunk towards `min`."""
    return isinstance(value, dict) and set(value) == {"min", "max"}


class FaultChoice(Strict):
    """One kind of fault in the space and the targets it may hit; each parameter is a value, a list (one of them
    is drawn) or `{min, max}` (a number between, whole when both are)."""

    kind: str
    targets: list[str] = Field(min_length=1, max_length=MAX_CHOICES)
    params: dict[str, Any] = {}
    weight: float = Field(default=1.0, gt=0, description="how often it is drawn, against the others' weights")

    @field_validator("params")
    @classmethod
    def _values(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key, value in v.items():
            if isinstance(value, list) and not value:
                raise at((key,), "an empty list of values; allowed: a value, a non-empty list, or {min, max}")
            if isinstance(value, dict) and is_range(value):
                lo, hi = value["min"], value["max"]
                if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (lo, hi)):
                    raise at((key,), "a range's min and max are numbers; allowed: {min: N, max: N}")
                if lo > hi:
                    raise at((key, "min"), f"{lo} is above max ({hi}); allowed: at most max")
        return v


class Rerun(Strict):
    """A shrinking candidate fails when it fails `k` of `n` runs (the first failure is confirmed the same way)."""

    k: int = Field(default=1, ge=1, le=100)
    n: int = Field(default=1, ge=1, le=100)

    @model_validator(mode="after")
    def _k_le_n(self) -> Rerun:
        if self.k > self.n:
            raise at(("k",), f"{self.k} is more than n ({self.n}): a candidate cannot fail {self.k} of {self.n} runs; "
                             f"allowed: 1..{self.n}")
        return self


class Budget(Strict):
    runs: int = Field(ge=1, le=MAX_RUNS, description="schedules drawn and run while exploring")
    time: Duration | None = Field(default=None, description="wall time for everything (shrinking included)")
    shrink_runs: int = Field(default=40, ge=0, le=MAX_RUNS, description="runs spent shrinking a failure")

    @field_validator("time")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError("must be above 0s; allowed: a duration such as 30m")
        return v


class Invariants(Strict):
    """Built in, on every run (as expectations of the generated scenario)."""

    lost: bool = Field(default=True, description="nothing acknowledged lost (false where loss is allowed)")
    nodes_back: bool = Field(default=True, description="every node a revert or restart started again came back")
    producers_back_s: float | None = Field(default=15.0, gt=0, description="producers send OK again within this "
                                                                           "many seconds after the last revert")
    producers_share: float = Field(default=0.99, gt=0, le=1, description="SEND_OK share after that bound")
    consumers: bool = Field(default=True, description="with consumers: every group gets everything, in order")


class Space(Strict):
    seed: int = Field(default=1, ge=0)
    budget: Budget
    faults: list[FaultChoice] = Field(max_length=MAX_CHOICES)
    windows: IntRange = IntRange(min=1, max=2)
    faults_per_window: IntRange = IntRange(min=1, max=2)
    lead: DurationRange = DurationRange(min="5s", max="10s")
    """quiet before the first window (shrunk to earlier times)"""
    duration: DurationRange = DurationRange(min="5s", max="20s")
    """each window's length: its faults are applied at its start and reverted at its end"""
    gap: DurationRange = DurationRange(min="0s", max="10s")
    """quiet between windows"""
    after: Duration = "20s"
    """the tail after the last revert (the invariants' bounds are measured in it)"""
    rate: RateRange | None = Field(default=None, description="open model: the load's sends/s in the drawn phases")
    rerun: Rerun = Rerun()
    cluster: Literal["restart", "reuse"] = Field(default="restart", description=(
        "restart: a fresh cluster for every run (as rmq-chaos run); reuse: one cluster kept across runs while the "
        "harness proves it healthy again before each (harness/cluster_reuse.py), a fresh one when it cannot"))
    invariants: Invariants = Invariants()
    expect: list[Expectation] = Field(default=[], max_length=64)

    @field_validator("faults")
    @classmethod
    def _not_empty(cls, v: list[FaultChoice]) -> list[FaultChoice]:
        if not v:
            raise ValueError("the fault space is empty; allowed: at least one {kind, targets, params}")
        return v

    @model_validator(mode="after")
    def _fits(self) -> Space:
        if self.lead.min <= 0:
            raise at(("lead", "min"), "must be above 0s (the first window starts after a quiet phase); allowed: "
                                      "a duration above 0s")
        if self.duration.min <= 0:
            raise at(("duration", "min"), "must be above 0s; allowed: a duration above 0s")
        if self.after <= 0:
            raise at(("after",), "must be above 0s; allowed: a duration above 0s")
        bound = self.invariants.producers_back_s
        if bound is not None and self.after < bound + 2:
            raise at(("after",), f"{self.after:g}s leaves no room to judge producers_back_s ({bound:g}s); allowed: "
                                 f"at least {bound + 2:g}s")
        for i, e in enumerate(self.expect):
            if e.fault is not None:
                raise at(("expect", i, "fault"), "fault ids are drawn; allowed: expectations over phases steady, "
                                                 "after or the whole run")
        return self


class ExploreFile(Strict):
    name: Name | None = Field(default=None, description="names the explore directory (default: the file's stem)")
    description: str = ""
    scenario: str = Field(description="the scenario file (relative to this one) whose cluster, load and read-back "
                                      "every drawn schedule runs with")
    override: dict[str, Any] = Field(default={}, description="merged into that scenario, e.g. {cluster: {version: "
                                                             "5.1.4}}")
    explore: Space
